"""The plans of one jitted function, by signature: at most ``max_plans`` of them, the least
recently used evicted first (its arenas and the captures it holds are freed with it, once
the replays already submitted have run)."""
from __future__ import annotations

import collections
import operator

from minerva.common.logging import get_logger

log = get_logger("minerva.jit")

MAX_PLANS = 32
"""The plans a jitted function keeps by default (``mv.jit(fn, max_plans=...)``)."""


def checked_bound(max_plans) -> int:
    """``max_plans`` as an int >= 1; ValueError otherwise."""
    try:
        if isinstance(max_plans, bool):
            raise TypeError
        bound = operator.index(max_plans)
    except TypeError:
        raise ValueError(f"mv.jit: max_plans is an int >= 1, got {max_plans!r}") from None
    if bound < 1:
        raise ValueError(f"mv.jit: max_plans is an int >= 1, got {bound}")
    return bound


class PlanCache:
    """Plans by key in least-recently-used order; ``n_evictions`` counts the plans
    dropped to keep at most ``max_plans``. Used by the calling thread only."""

    def __init__(self, max_plans: int, name: str):
        self.max_plans = checked_bound(max_plans)
        self.n_evictions = 0
        self._name = name
        self._plans: collections.OrderedDict = collections.OrderedDict()

    def get(self, key):
        """The plan of ``key`` (now the most recently used), or None."""
        plan = self._plans.get(key)
        if plan is not None:
            self._plans.move_to_end(key)
        return plan

    def put(self, key, plan) -> None:
        """Keep ``plan`` for ``key``, evicting the least recently used beyond the bound."""
        self._plans[key] = plan
        while len(self._plans) > self.max_plans:
            _, evicted = self._plans.popitem(last=False)
            self.n_evictions += 1
            log.debug("jit_plan_evicted", function=self._name,
                      plan_bytes=evicted.plan_bytes, n_evictions=self.n_evictions)

    def clear(self) -> None:
        """Drop every plan (a new runtime: their arrays are gone); no eviction."""
        self._plans.clear()

    def values(self) -> list:
        """The plans held, least recently used first."""
        return list(self._plans.values())

    def __len__(self) -> int:
        return len(self._plans)


__all__ = ["MAX_PLANS", "PlanCache", "checked_bound"]
