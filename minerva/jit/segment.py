"""Running one segment of a plan inside its replay op, on the segment's device.

The replay op's kernel gets the arrays of what the segment reads, then (as ``out``) the
arrays of its exports, of the values it writes, and of its arena. Every ``(value, view)``
a step uses is resolved once per replay into a table of arrays; views of the arena (the
locals) do not change between replays and are resolved once, as are the argument lists of
steps that only touch locals: such a step costs one kernel call. Views on the storage of a
view argument are kept relative to the argument's offset; a replay places them at its
call's offsets (``SegmentCall``, the replay op's ``segment``).

A segment holds specs, never storages nor handles: the engine may keep a finished replay
op (and its attributes) for a while, and that must not keep the plan's captures alive.

The replay op's kernel also gets its ``device``, and the segment goes through the device's
interface: views of the device's buffers are the device's (``Device.view``), and the steps
the device says need its kernel runner (``Device.routes_kernel``: on a CPU device those it
may cut into row ranges and those that call BLAS, which hold its BLAS thread count) run
through ``Device.run_kernel``, so a replay runs them as an eager op would (the same
numbers, the same speed); the other steps call their kernels.
"""
from __future__ import annotations

import functools
import time

import numpy as np

from minerva.jit.signature import moved

class SegmentRun:
    """A segment made runnable: its steps with resolved argument indices, and the caches of
    what does not change between replays (see the module docstring)."""

    def __init__(self, plan, specs: list):
        self.plan = plan
        self.specs = specs                                     # ArraySpec by vid
        self.order = plan.reads + plan.exports + plan.writes   # vids, as the op gets them
        self._index: dict = {}    # (vid, view) -> table position
        self._entries: list = []  # (vid, view) per table position
        self.steps = [self._compiled(step) for step in plan.steps]
        self._static = None       # (arena array, device, table of arena-only entries)
        self._xp = None

    def _slot(self, vid, view) -> int:
        key = (vid, view)
        position = self._index.get(key)
        if position is None:
            position = self._index[key] = len(self._entries)
            self._entries.append(key)
        return position

    def _compiled(self, step):
        ins = [self._slot(vid, view) for vid, view in step.ins]
        outs = [self._slot(vid, view) for vid, view in step.outs]
        return [step, ins, outs, None, False]   # bound kernel, routed: set per device

    def run(self, xp, arrays, outs, seeds, device, trace=None, offsets=None) -> None:
        """Run every step in order on ``device`` (``seeds`` maps recorded random seeds to
        this replay's; ``trace``, while a trace records: ``trace(name, created_at, t0_ns,
        t1_ns)`` after each step; ``offsets``: vid -> this call's offset of the view
        arguments' storages); an error is annotated with the user's line of the step that
        raised it."""
        table = self._table(device, arrays, outs, offsets)
        run = device.run_kernel
        for compiled in self.steps:
            step, ins, out_slots, fixed, routed = compiled
            if trace is not None:
                t0 = time.perf_counter_ns()
            try:
                if fixed is not None:
                    fixed()
                else:
                    out = table[out_slots[0]] if len(out_slots) == 1 else tuple(
                        table[i] for i in out_slots)
                    attrs = step.attrs if not seeds or "seed" not in step.attrs else dict(
                        step.attrs, seed=seeds.get(step.attrs["seed"], step.attrs["seed"]))
                    if routed:
                        run(step.op_def, [table[i] for i in ins], out, attrs)
                    else:
                        step.op_def.impl(xp, *[table[i] for i in ins], out=out, **attrs)
            except Exception as exc:
                exc.minerva_created_at = step.created_at
                exc.add_note(f"in the jitted op '{step.op_def.name}'")
                raise
            if trace is not None:
                trace(step.op_def.name, step.created_at, t0, time.perf_counter_ns())

    def _table(self, device, arrays, outs, offsets) -> list:
        """Every (value, view) a step uses, as an array of this replay."""
        bases = dict(zip(self.order, list(arrays) + list(outs)))
        arena = outs[-1] if self.plan.arena_bytes else None
        static = self._static_table(device, arena)
        table = list(static)
        for position, (vid, view) in enumerate(self._entries):
            if table[position] is None:
                base = bases[vid]
                if offsets and vid in offsets:
                    view = moved(view, offsets[vid])
                table[position] = base if view is None else device.view(base, view)
        return table

    def _static_table(self, device, arena) -> list:
        static = self._static
        if static is not None and static[0] is arena and static[1] is device:
            return static[2]
        self._xp = device.xp
        table = [None] * len(self._entries)
        for position, (vid, view) in enumerate(self._entries):
            slot = self.plan.slots.get(vid)
            if slot is not None:
                base = self._local(arena, vid, slot)
                table[position] = base if view is None else device.view(base, view)
        self._static = (arena, device, table)
        self._route_steps(device)
        self._fix_steps(table)
        return table

    def _route_steps(self, device) -> None:
        """Mark the steps ``device`` runs through its kernel runner."""
        for compiled in self.steps:
            step, outs = compiled[0], compiled[2]
            nbytes = self.specs[step.outs[0][0]].nbytes if len(outs) == 1 else 0
            compiled[4] = device.routes_kernel(step.op_def, nbytes)

    def _local(self, arena, vid, slot):
        spec = self.specs[vid]
        count = int(np.prod(spec.shape, dtype=np.int64))
        raw = arena[slot.offset:slot.offset + spec.nbytes]
        return raw.view(spec.dtype)[:count].reshape(spec.shape)

    def _fix_steps(self, table) -> None:
        """Steps whose arrays are all locals (and draw no seed) get their arguments
        resolved for good."""
        for compiled in self.steps:
            step, ins, outs, _, routed = compiled
            compiled[3] = None
            if routed or "seed" in step.attrs or any(table[i] is None for i in ins + outs):
                continue
            out = table[outs[0]] if len(outs) == 1 else tuple(table[i] for i in outs)
            arrays = [table[i] for i in ins]
            bind = step.op_def.bind
            compiled[3] = (bind(self._xp, arrays, out, **step.attrs) if bind is not None else
                           functools.partial(step.op_def.impl, self._xp, *arrays, out=out,
                                             **step.attrs))


class SegmentCall:
    """One replay of a segment whose views move with the call's arguments: the replay op's
    ``segment``, running the SegmentRun at this call's ``offsets`` (vid -> bytes)."""

    __slots__ = ("segment", "offsets")

    def __init__(self, segment: SegmentRun, offsets: dict):
        self.segment = segment
        self.offsets = offsets

    def run(self, xp, arrays, outs, seeds, device, trace=None) -> None:
        """``SegmentRun.run`` at this call's offsets."""
        self.segment.run(xp, arrays, outs, seeds, device, trace, self.offsets)
