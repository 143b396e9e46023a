"""The replay of a plan of one segment on the calling thread, in one step (``NowReplay``).

A plan whose steps all run on one device, with no view argument whose offset moves the
plan's views, is one segment; when that segment may run on the calling thread
(``SegmentRun.runs_now``) a replay is one call of ``Engine.run_nested_now`` with what does
not change between calls made once: where each value the segment reads or writes comes
from (an argument's position or a capture's storage), the replay op's attributes on the
device, how the results are made of the outputs. When it cannot run now (an input still
pending, a write waiting for a reader, a trace), nothing is done and the plan's replay
submits the segment as any other (``minerva.jit.function.replay``).

**Results kept for reuse.** A plan whose results total at most ``KEEP_BYTES`` keeps the
output storages of its last two replays. When the plan alone holds every output storage
of the replay before the last (by reference count: no handle, view, container or weak
reference reaches one), the next replay computes its outputs into those storages' values
(``Engine.rerun_nested_now``) instead of taking fresh blocks and new storages, so the
results the caller dropped are never released: a tiny jitted call that drops its last
result (``step(x).wait()``, ``y = step(y)``) wakes no engine thread to apply the release
(the dispatcher's wake costs the calling thread more than the whole replay), and takes
no block. Two, so that a loop holding its last result while it makes the next one reuses
the one before. The kept storages' bytes stay in use while the plan lives
(``stats()["kept_bytes"]`` counts those no handle holds); a trace, which names every
value made, sees fresh outputs.
"""
from __future__ import annotations

import sys
import weakref

import numpy as np

from minerva.builder import build
from minerva.current import get_system
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.jit_op import JIT_REPLAY

_EMPTY = registry.get("empty")

KEEP_BYTES = 64 << 10
"""The most bytes of results a plan keeps for reuse (see the module docstring)."""

NOT_NOW = object()
"""What ``NowReplay`` returns when the segment cannot run now."""

_refcount = getattr(sys, "getrefcount", None)
_ALONE = 3
"""``sys.getrefcount`` of a kept storage held by the plan alone, asked in a loop over the
kept list: that list, the loop's name and the call's argument."""


class NowReplay:
    """One segment of ``variant`` (of ``plan``) replayed on the calling thread in one
    step; ``__call__`` returns the function's result, or ``NOT_NOW`` when the segment
    cannot run now (nothing done: the caller submits it)."""

    def __init__(self, plan, variant, rebuild):
        run = self.run = variant.segments[0]
        p = run.plan
        self.arenas = variant.arenas   # (not the variant: it holds this, no cycle)
        self.device_id = p.device
        index = dict(plan.arg_vids)
        self.reads = [(plan.held.get(vid), index.get(vid)) for vid in p.reads]
        self.writes = [(plan.held.get(vid), index.get(vid)) for vid in p.writes]
        exports = {vid: k for k, vid in enumerate(p.exports)}
        self.results = [(exports.get(vid), plan.held.get(vid), index.get(vid), view, spec)
                        for (vid, view), spec in plan.results]
        self.single = self.results[0] if plan.single is not None else None
        self.shape = plan.result
        self.rebuild = rebuild
        self.seeded = bool(plan.seeds)
        self.keeps = _refcount is not None and bool(p.exports) and \
            sum(spec.nbytes for spec in run.fresh_specs) <= KEEP_BYTES
        self.kept = [None, None]   # output storages of the last two replays (oldest first)
        self._attrs = None         # the replay op's attributes on a device, no seeds

    @staticmethod
    def fits(plan, variant) -> bool:
        """Whether ``variant`` of ``plan`` is one segment with no moving views, every
        value it reads or writes an argument or a capture."""
        if len(variant.segments) != 1 or plan.movable:
            return False
        p = variant.segments[0].plan
        known = {vid for vid, _ in plan.arg_vids} | set(plan.held)
        return all(vid in known for vid in p.reads + p.writes) and all(
            vid in known or vid in p.exports for (vid, _), _ in plan.results)

    def __call__(self, engine, args, created_at=None, seeds=None, errstate=None):
        """Replay with ``args`` on ``engine`` (``seeds``: as ``replay``'s; ``errstate``:
        the caller's decoded error state, when known): the result, or ``NOT_NOW``."""
        run = self.run
        device = engine.devices.table[self.device_id]
        if not run.runs_now(device):
            return NOT_NOW
        reads = []
        for held, index in self.reads:   # (a loop: a comprehension is a call in 3.11)
            reads.append(args[index]._storage if held is None else held)
        writes = [args[i]._storage if s is None else s for s, i in self.writes] \
            if self.writes else []
        p = run.plan
        arena = arena_of(self.arenas, 0, p) if p.arena_bytes else None
        attrs = self._attrs
        if self.seeded:
            attrs = {"segment": run, "seeds": seeds, "device": device}
        elif attrs is None or attrs["device"] is not device:
            attrs = self._attrs = {"segment": run, "seeds": None, "device": device}
        keeps, outs = self.keeps, None
        if keeps and self.kept[0] is not None:
            oldest = self.kept[0]   # reused where the plan alone holds all its storages
            for storage in oldest:
                if _refcount(storage) != _ALONE or weakref.getweakrefcount(storage):
                    break
            else:
                if engine.rerun_nested_now(JIT_REPLAY, attrs, reads, oldest, writes,
                                           self.device_id, arena, created_at, errstate):
                    outs = oldest
        if outs is None:
            outs = engine.run_nested_now(JIT_REPLAY, attrs, reads, run.fresh_specs, writes,
                                         self.device_id, arena, created_at)
            if outs is None:
                return NOT_NOW
        if keeps:
            kept = self.kept
            kept[0], kept[1] = kept[1], outs
        single = self.single
        if single is not None:
            k, held, index, view, spec = single
            return NArray(outs[k] if k is not None else held if held is not None
                          else args[index]._storage, view, spec)
        return self.rebuild(self.shape, iter([_result(r, outs, args) for r in self.results]))

    def kept_bytes(self) -> int:
        """Bytes of the kept storages that the plan alone holds."""
        total = 0
        for outs in self.kept:
            for storage in outs or ():
                if _refcount(storage) == _ALONE:
                    total += storage.current.spec.nbytes
        return total


def _result(recipe, outs, args):
    """A result's handle: an output of the replay, a capture or an argument's storage."""
    k, held, index, view, spec = recipe
    storage = outs[k] if k is not None else held if held is not None else args[index]._storage
    return NArray(storage, view, spec)


def arena_of(arenas: list, k, p):
    """The storage of segment ``k``'s arena (of SegmentPlan ``p``; ``arenas``: the handles
    of a variant's arenas), made on its first replay and kept (made anew once a failed
    replay left it poisoned: the tmps it holds are never read across replays, so the next
    replay need not fail too)."""
    arena = arenas[k]
    if arena is None or arena._storage.current.error is not None:
        system = get_system()
        previous = system.chosen_device()
        system.set_device(p.device)
        try:
            arena = arenas[k] = build(_EMPTY, [], {"shape": (p.arena_bytes,),
                                                   "dtype": np.dtype(np.uint8)})
        finally:
            system.set_device(previous)
    return arena._storage
