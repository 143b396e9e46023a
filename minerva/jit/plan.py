"""From a capture to a plan: the steps cut into segments, one per run of consecutive steps
on one device, and each segment's values sorted by where they live during a replay.

- **reads**: values the segment reads but does not write, made outside it (arguments,
  captures, tmps of earlier segments): the replay op's inputs (their current versions).
- **writes**: values made outside it that it writes: the replay op writes them in place
  (new versions taking over their buffers), which orders it after their earlier readers.
- **exports**: tmps it makes that later segments use or the function returns: fresh
  outputs of the replay op.
- **locals**: tmps it makes and alone uses: slots of the segment's **arena**, one buffer
  allocated once and kept across replays. Slots are assigned by liveness: bytes are reused
  once the tmp in them was last used (``minerva.jit.memory``: in-place writes replay as
  early as their values allow, and the locals take offsets largest first).
"""
from __future__ import annotations

from minerva.jit import memory
from minerva.jit.capture import TMP


class Slot:
    """Where a local tmp lives in the arena: ``offset`` bytes in, ``size`` bytes."""

    __slots__ = ("offset", "size")

    def __init__(self, offset: int, size: int):
        self.offset = offset
        self.size = size


class SegmentPlan:
    """One segment's steps and values (see the module docstring); ``slots`` maps a local
    tmp's vid to its Slot; ``arena_bytes`` is the arena's size."""

    def __init__(self, device: int, steps: list):
        self.device = device
        self.steps = steps
        self.reads: list[int] = []
        self.writes: list[int] = []
        self.exports: list[int] = []
        self.locals: list[int] = []
        self.slots: dict[int, Slot] = {}
        self.arena_bytes = 0


ALIGN = 256


def segments_of(steps: list, values: list, results: list) -> list[SegmentPlan]:
    """Cut ``steps`` into per-device segments and sort every segment's values."""
    plans, start = [], 0
    for i in range(1, len(steps) + 1):
        if i == len(steps) or steps[i].device != steps[start].device:
            plans.append(SegmentPlan(steps[start].device, steps[start:i]))
            start = i
    made_in = {}
    for k, plan in enumerate(plans):
        for step in plan.steps:
            if not step.write:
                for vid, _ in step.outs:
                    made_in.setdefault(vid, k)
    used_in = _uses(plans)
    returned = {vid for vid, _ in results}
    for k, plan in enumerate(plans):
        plan.steps = memory.hoisted(plan.steps)
        _sort_values(plan, k, values, made_in, used_in, returned)
        _assign_slots(plan, values)
    return plans


def _uses(plans) -> dict:
    """vid -> the segments that read or write it."""
    used: dict = {}
    for k, plan in enumerate(plans):
        for step in plan.steps:
            for vid, _ in step.ins + step.outs:
                used.setdefault(vid, set()).add(k)
    return used


def _sort_values(plan, k, values, made_in, used_in, returned) -> None:
    read, written, made = {}, {}, {}  # vids in order of first use (dicts: ordered sets)
    for step in plan.steps:
        for vid, _ in step.ins:
            read[vid] = None
        for vid, _ in step.outs:
            (written if step.write else made)[vid] = None
    for vid in made:
        elsewhere = used_in[vid] - {k}
        if vid in returned or elsewhere:
            plan.exports.append(vid)
        else:
            plan.locals.append(vid)
    plan.writes = [vid for vid in written if vid not in made]
    plan.reads = [vid for vid in read if vid not in made and vid not in written]


def _assign_slots(plan, values) -> None:
    """Give each local tmp an arena slot: bytes no local living at the same time holds
    (``memory.offsets``)."""
    first, last = {}, {}
    for i, step in enumerate(plan.steps):
        for vid, _ in step.outs + step.ins:
            first.setdefault(vid, i)
            last[vid] = i
    sizes = [_aligned(values[vid].spec.nbytes) for vid in plan.locals]
    placed, plan.arena_bytes = memory.offsets(
        [(first[vid], last[vid], size) for vid, size in zip(plan.locals, sizes)])
    for vid, offset, size in zip(plan.locals, placed, sizes):
        plan.slots[vid] = Slot(offset, size)


def _aligned(nbytes: int) -> int:
    return max(ALIGN, (nbytes + ALIGN - 1) // ALIGN * ALIGN)


__all__ = ["segments_of", "SegmentPlan", "Slot", "TMP"]
