"""Runtime configuration, read once from ``MINERVA_*`` environment variables at start.

Every value, from the environment or from ``mv.init(**options)``, goes through the same
parser; a bad one is a ValueError naming the setting and the values it takes. Choices are
case-insensitive (``MINERVA_ENGINE=NAIVE`` is ``naive``).
"""
from __future__ import annotations

import dataclasses
import os
import re

import numpy as np

ENGINES = ("dag", "naive")
DISPATCH_MODES = ("inline", "queued")
MEM_POOLS = ("pooled", "round", "naive")
LOG_LEVELS = ("debug", "info", "warning", "error", "critical", "json")
DEFAULT_DTYPES = ("float64", "float32", "float16")
FALLBACK_MODES = ("allow", "warn", "raise")
_SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


@dataclasses.dataclass(frozen=True)
class Config:
    """Every tunable of the runtime; see doc/configuration.md for each field."""

    engine: str = "dag"
    dispatchers: int = 2
    dispatch: str = "inline"
    mem_pool: str = "pooled"
    mem_limit: int | None = None
    max_pending: int = 64
    virtual_gpus: int = 0
    trace: str | None = None
    log: str = "warning"
    default_dtype: np.dtype = np.dtype(np.float64)
    inline_bytes: int | None = None
    cpu_threads: int | None = None
    fallback: str = "allow"

    @classmethod
    def from_env(cls, environ=None, **overrides) -> "Config":
        """Build a Config from ``environ`` (default ``os.environ``), then apply overrides
        (``mv.init`` options), each parsed and checked."""
        env = os.environ if environ is None else environ
        values = {}
        for field, (var, parse) in SETTINGS.items():
            raw = env.get(var)
            if raw not in (None, ""):
                values[field] = _parse(var, raw, parse)
        for field, raw in overrides.items():
            if field not in SETTINGS:
                raise TypeError(f"mv.init: unknown option {field!r}; options are "
                                f"{', '.join(SETTINGS)}")
            if raw is not None or field in ("mem_limit", "trace", "cpu_threads", "inline_bytes"):
                values[field] = None if raw is None else _parse(field, raw, SETTINGS[field][1])
        return cls(**values)


def parse_size(text) -> int:
    """Parse a byte count such as ``512M``, ``8G``, ``1.5G`` or ``1048576``."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"a size is >= 0 bytes, got {text}")
        return text
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(I?B)?\s*", str(text).upper())
    if not match:
        raise ValueError(f"not a size: {text!r} (use bytes or a suffix: 512M, 8G)")
    number, unit = float(match.group(1)), match.group(2)
    return int(number * _SIZE_UNITS[unit])


def _count(minimum: int):
    def parse(raw) -> int:
        if isinstance(raw, bool) or isinstance(raw, float):
            raise ValueError(f"expected an int, got {raw!r}")
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise ValueError(f"expected an int, got {raw!r}") from None
        if value < minimum:
            raise ValueError(f"must be >= {minimum}, got {value}")
        return value
    return parse


def _choice(choices):
    def parse(raw) -> str:
        value = str(raw).strip().lower()
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}; got {raw!r}")
        return value
    return parse


def _text(raw) -> str:
    if not isinstance(raw, (str, os.PathLike)):
        raise ValueError(f"expected a path, got {raw!r}")
    return os.fspath(raw).strip()


def _dtype(raw) -> np.dtype:
    try:
        dtype = np.dtype(raw.strip() if isinstance(raw, str) else raw)
    except TypeError:
        dtype = None
    if dtype is None or dtype.name not in DEFAULT_DTYPES:
        raise ValueError(f"must be one of {', '.join(DEFAULT_DTYPES)}; got {raw!r}")
    return dtype


def _parse(var, raw, parse):
    try:
        return parse(raw)
    except (TypeError, ValueError) as exc:
        name = var if var.startswith("MINERVA_") else f"{var} (MINERVA_{var.upper()})"
        raise ValueError(f"bad value for {name}={raw!r}: {exc}") from None


SETTINGS = {
    "engine": ("MINERVA_ENGINE", _choice(ENGINES)),
    "dispatchers": ("MINERVA_DISPATCHERS", _count(1)),
    "dispatch": ("MINERVA_DISPATCH", _choice(DISPATCH_MODES)),
    "mem_pool": ("MINERVA_MEM_POOL", _choice(MEM_POOLS)),
    "mem_limit": ("MINERVA_MEM_LIMIT", parse_size),
    "max_pending": ("MINERVA_MAX_PENDING", _count(1)),
    "virtual_gpus": ("MINERVA_VIRTUAL_GPUS", _count(0)),
    "trace": ("MINERVA_TRACE", _text),
    "log": ("MINERVA_LOG", _choice(LOG_LEVELS)),
    "default_dtype": ("MINERVA_DEFAULT_DTYPE", _dtype),
    "inline_bytes": ("MINERVA_INLINE_BYTES", parse_size),
    "cpu_threads": ("MINERVA_CPU_THREADS", _count(1)),
    "fallback": ("MINERVA_FALLBACK", _choice(FALLBACK_MODES)),
}
"""Each setting: its environment variable and the parser of its values."""
