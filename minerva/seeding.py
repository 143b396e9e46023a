"""Seeds of Minerva's on-device random ops (``mv.randn``, ``mv.rand``, ``mv.randb``,
``mv.nn.dropout``): ``mv.random.seed(n)`` makes every later one reproducible.

Each random op takes the next ``(seed, counter)`` pair at creation on the user's thread and
draws from ``numpy.random.default_rng((seed, counter))``, so the values depend only on the
seed and the order ops were created in — not on the engine, devices or timing. (NumPy's own
``mv.random.rand``, ``randn`` … draw from NumPy's generators: see ``minerva.random``.)
"""
from __future__ import annotations

import itertools
import secrets
import threading

import numpy as np

_lock = threading.Lock()
_seed = secrets.randbits(63)
_counter = itertools.count()


def seed(n: int) -> None:
    """Restart the random sequence from seed ``n`` (a non-negative int)."""
    global _seed, _counter
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"seed must be a non-negative int, got {n!r}")
    n = int(n)
    with _lock:
        _seed, _counter = n, itertools.count()


class Draws(threading.local):
    """Per thread: where the seeds handed out are also noted, if anywhere (a jit recording
    notes them: a replay draws fresh ones for these, and keeps seeds given explicitly)."""

    sink: list | None = None


DRAWS = Draws()


def next_seed() -> tuple[int, int]:
    """The seed of the next random op: ``(seed, counter)``."""
    with _lock:
        seed = (_seed, next(_counter))
    if DRAWS.sink is not None:
        DRAWS.sink.append(seed)
    return seed
