"""Runtime configuration, read once from ``MINERVA_*`` environment variables at start."""
from __future__ import annotations

import dataclasses
import os
import re

ENGINES = ("dag", "naive")
DISPATCH_MODES = ("inline", "queued")
MEM_POOLS = ("pooled", "round", "naive")
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

    def __post_init__(self):
        if isinstance(self.mem_limit, str):
            object.__setattr__(self, "mem_limit", parse_size(self.mem_limit))
        _check_choice("MINERVA_ENGINE", self.engine, ENGINES)
        _check_choice("MINERVA_MEM_POOL", self.mem_pool, MEM_POOLS)
        _check_choice("MINERVA_DISPATCH", self.dispatch, DISPATCH_MODES)
        if self.dispatchers < 1:
            raise ValueError(f"MINERVA_DISPATCHERS must be >= 1, got {self.dispatchers}")
        if self.max_pending < 1:
            raise ValueError(f"MINERVA_MAX_PENDING must be >= 1, got {self.max_pending}")
        if self.virtual_gpus < 0:
            raise ValueError(f"MINERVA_VIRTUAL_GPUS must be >= 0, got {self.virtual_gpus}")

    @classmethod
    def from_env(cls, environ=None, **overrides) -> "Config":
        """Build a Config from ``environ`` (default ``os.environ``), then apply overrides."""
        env = os.environ if environ is None else environ
        values = {}
        for field, (var, parse) in _ENV_FIELDS.items():
            raw = env.get(var)
            if raw not in (None, ""):
                values[field] = _parse(var, raw, parse)
        values.update(overrides)
        return cls(**values)


def parse_size(text: str | int) -> int:
    """Parse a byte count such as ``512M``, ``8G``, ``1.5G`` or ``1048576``."""
    if isinstance(text, int):
        return text
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(I?B)?\s*", str(text).upper())
    if not match:
        raise ValueError(f"not a size: {text!r} (use bytes or a suffix: 512M, 8G)")
    number, unit = float(match.group(1)), match.group(2)
    return int(number * _SIZE_UNITS[unit])


def _parse(var, raw, parse):
    try:
        return parse(raw)
    except ValueError as exc:
        raise ValueError(f"bad value for {var}={raw!r}: {exc}") from None


def _check_choice(var, value, choices):
    if value not in choices:
        raise ValueError(f"{var} must be one of {', '.join(choices)}; got {value!r}")


_ENV_FIELDS = {
    "engine": ("MINERVA_ENGINE", str.strip),
    "dispatchers": ("MINERVA_DISPATCHERS", int),
    "dispatch": ("MINERVA_DISPATCH", str.strip),
    "mem_pool": ("MINERVA_MEM_POOL", str.strip),
    "mem_limit": ("MINERVA_MEM_LIMIT", parse_size),
    "max_pending": ("MINERVA_MAX_PENDING", int),
    "virtual_gpus": ("MINERVA_VIRTUAL_GPUS", int),
    "trace": ("MINERVA_TRACE", str.strip),
    "log": ("MINERVA_LOG", str.strip),
}
