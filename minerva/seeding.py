"""Seeded randomness: ``mv.random.seed(n)`` makes every later random op reproducible.

Each random op takes the next ``(seed, counter)`` pair at creation on the user's thread and
draws from ``numpy.random.default_rng((seed, counter))``, so the values depend only on the
seed and the order ops were created in — not on the engine, devices or timing.
"""
from __future__ import annotations

import itertools
import secrets
import threading

_lock = threading.Lock()
_seed = secrets.randbits(63)
_counter = itertools.count()


def seed(n: int) -> None:
    """Restart the random sequence from seed ``n`` (a non-negative int)."""
    global _seed, _counter
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"seed must be a non-negative int, got {n!r}")
    with _lock:
        _seed, _counter = n, itertools.count()


def next_seed() -> tuple[int, int]:
    """The seed of the next random op: ``(seed, counter)``."""
    with _lock:
        return (_seed, next(_counter))
