"""``mv.jit``: record a function once, replay it at near-NumPy speed with a static memory
plan (MXNet Gluon's ``hybridize``, for plain functions).

    @mv.jit
    def step(x, y):
        ...                    # ops, in-place updates, autograd: anything minerva builds
    step(x, y)                 # first call per signature records, later calls replay
    step.stats()

See doc/jit.md.
"""
from __future__ import annotations

from minerva.common.errors import JitError
from minerva.jit.cache import MAX_PLANS, checked_bound
from minerva.jit.function import JitFunction


def jit(fn=None, *, check: bool = False, max_plans: int = MAX_PLANS, fuse=True):
    """``fn`` made jitted (also usable as ``@jit`` or ``@jit(check=True)``). With
    ``check=True`` every replay also runs ``fn`` eagerly from the same state and raises
    JitError unless both give bitwise equal results and writes. ``max_plans`` (an int
    >= 1, else ValueError): the plans it keeps, one per signature, the least recently
    used evicted beyond it. ``fuse``: element-wise fusion of the replays (doc/jit.md,
    "Fusion"): True (the default; only the exact kernels under ``check=True``), False (the
    exact unfused replay), or a level of ``minerva.jit.fusion.LEVELS``."""
    checked_bound(max_plans)
    if fn is None:
        return lambda f: JitFunction(f, check, max_plans, fuse)
    return JitFunction(fn, check, max_plans, fuse)


__all__ = ["jit", "JitError", "JitFunction", "MAX_PLANS"]
