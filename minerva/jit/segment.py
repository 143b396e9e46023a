"""Running one segment of a plan inside its replay op, on the segment's device.

The replay op's kernel gets the arrays of what the segment reads, then (as ``out``) the
arrays of its exports, of the values it writes, and of its arena. Every ``(value, view)``
a step uses is resolved once per replay into a table of arrays; views of the arena (the
locals) do not change between replays and are resolved once, as are the argument lists of
steps that only touch locals: such a step costs one kernel call. A segment that may run on
the calling thread (``runs_now``: small, few steps, none through the device's kernel
runner) binds all its steps to a replay's arrays and keeps those calls for
the next replays of the same arrays (``REUSED``). Views on the storage of a view argument
are kept relative to the argument's offset; a replay places them at its call's offsets
(``SegmentCall``, the replay op's ``segment``).

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
from minerva.ops.registry import ArraySpec

REUSED = 2
"""A segment that runs on the calling thread (``runs_now``) keeps the calls of its last
``REUSED`` replays, reused while the replay op's arrays are the same objects (the pool
hands a tiny replay's outputs the same blocks back): two, for a loop that holds the last
result while it makes the next one (``y = step(x)``: two blocks in turn). Other segments
bind only the steps on their arena, once."""

NOW_STEPS = 1024
"""A segment of more steps never runs on the calling thread: it would hold the engine lock
for long (a tiny step takes about half a microsecond), while other threads' ops and
completions wait; on the device's thread its hand-off is a small part of its time."""
NOW_WORK = 16 << 20
"""Nor one whose bytes times steps exceed this (16 steps on 1 MiB, 256 on 64 KiB): a
bound on the time it holds the engine lock, a millisecond or two."""


class SegmentRun:
    """A segment made runnable: its steps with resolved argument indices, and the caches of
    what does not change between replays (see the module docstring).

    ``fresh_specs`` are the specs of its exports (the replay op's fresh outputs),
    ``out_specs`` those of all its outputs (exports, written values, arena), ``nbytes``
    the bytes of every value it reads or writes, its arena included."""

    def __init__(self, plan, specs: list):
        self.plan = plan
        self.specs = specs                                     # ArraySpec by vid
        self.order = plan.reads + plan.exports + plan.writes   # vids, as the op gets them
        self.fresh_specs = [specs[vid] for vid in plan.exports]
        self.out_specs = self.fresh_specs + [specs[vid] for vid in plan.writes]
        if plan.arena_bytes:
            self.out_specs.append(ArraySpec((plan.arena_bytes,), np.dtype(np.uint8)))
        self.nbytes = sum(specs[vid].nbytes for vid in self.order) + plan.arena_bytes
        self._index: dict = {}    # (vid, view) -> table position
        self._entries: list = []  # (vid, view) per table position
        self.steps = [self._compiled(step) for step in plan.steps]
        self._dynamic = [(position, self.order.index(vid), vid, view)
                         for position, (vid, view) in enumerate(self._entries)
                         if vid not in plan.slots]  # entries resolved at each replay
        self._static = None       # (arena array, device, table of arena-only entries)
        self._calls: list = []    # per step: its bound kernel, or None (bound per replay)
        self._routes = None       # (device, (threads, inline limit), routed per step, now)
        self._last: dict = {}     # (device, ids of arrays) -> (arrays, table, calls)
        self._xp = None

    def _slot(self, vid, view) -> int:
        key = (vid, view)
        position = self._index.get(key)
        if position is None:
            position = self._index[key] = len(self._entries)
            self._entries.append(key)
        return position

    def _compiled(self, step):
        ins = tuple(self._slot(vid, view) for vid, view in step.ins)
        outs = tuple(self._slot(vid, view) for vid, view in step.outs)
        seeded = "seed" in step.attrs
        return [step, ins, outs, seeded, False]   # routed: set per device

    def runs_now(self, device) -> bool:
        """Whether a replay of this segment may run at once on the calling thread of
        ``device`` (``Engine.run_nested_now``): its values total at most the device's
        ``inline_limit`` bytes, it has at most ``NOW_STEPS`` steps (and ``NOW_WORK``
        bytes times steps), and none goes through the device's kernel runner (a BLAS call, a kernel cut into row ranges:
        they may wait for threads, which must not happen under the engine lock)."""
        return self._routes_on(device)[3]

    def _routed(self, device) -> list:
        """Per step, whether ``device`` runs it through its kernel runner."""
        return self._routes_on(device)[2]

    def _routes_on(self, device) -> tuple:
        """The routes of ``device`` (``_route``), kept while its threads and inline
        limit stay the same."""
        routes = self._routes
        if routes is None or routes[0] is not device \
                or routes[1] != (getattr(device, "threads", None), device.inline_limit):
            routes = self._route(device)
        return routes

    def _route(self, device) -> tuple:
        flags = []
        for step, _, outs, _, _ in self.steps:
            nbytes = self.specs[step.outs[0][0]].nbytes if len(outs) == 1 else 0
            flags.append(device.routes_kernel(step.op_def, nbytes))
        limit = device.inline_limit
        now = bool(limit) and self.nbytes <= limit and len(flags) <= NOW_STEPS \
            and self.nbytes * len(flags) <= NOW_WORK and not any(flags)
        self._routes = (device, (getattr(device, "threads", None), limit), flags, now)
        return self._routes

    def run(self, xp, arrays, outs, seeds, device, trace=None, offsets=None) -> None:
        """Run every step in order on ``device`` (``seeds`` maps recorded random seeds to
        this replay's; ``trace``, while a trace records: ``trace(name, created_at, t0_ns,
        t1_ns)`` after each step; ``offsets``: vid -> this call's offset of the view
        arguments' storages); an error is annotated with the user's line of the step that
        raised it."""
        bases = (*arrays, *outs)
        # a recent replay of the same arrays (the same objects: the pool hands a tiny
        # replay's outputs the same blocks back, a kept result is computed anew in its
        # buffer), by their ids: its entry holds them, so an id there names no other
        recent = self._last.get((device, *map(id, bases))) if offsets is None else None
        if recent is not None:
            table, calls = recent[1], recent[2]
        else:
            table = self._table(device, bases, offsets)
            calls = self._calls
            if offsets is None and self.runs_now(device):
                calls = [call if call is not None else self._bound(compiled, table)
                         for compiled, call in zip(self.steps, calls)]
                last = self._last
                if len(last) >= REUSED:
                    del last[next(iter(last))]
                last[(device, *map(id, bases))] = (bases, table, calls)
        if trace is not None:
            self._run_traced(xp, table, calls, seeds, device, trace)
            return
        k = 0
        try:
            for k, call in enumerate(calls):
                if call is None:
                    self._run_step(xp, self.steps[k], table, seeds, device)
                else:
                    call()
        except Exception as exc:
            _annotate(exc, self.steps[k][0])
            raise

    def _run_traced(self, xp, table, calls, seeds, device, trace) -> None:
        """``run`` while a trace records: each step timed."""
        for compiled, call in zip(self.steps, calls):
            t0 = time.perf_counter_ns()
            try:
                if call is None:
                    self._run_step(xp, compiled, table, seeds, device)
                else:
                    call()
            except Exception as exc:
                _annotate(exc, compiled[0])
                raise
            trace(compiled[0].op_def.name, compiled[0].created_at, t0, time.perf_counter_ns())

    @staticmethod
    def _run_step(xp, compiled, table, seeds, device) -> None:
        """A step that reads or writes what changes between replays (or draws a seed)."""
        step, ins, out_slots, seeded, routed = compiled
        out = table[out_slots[0]] if len(out_slots) == 1 else tuple(
            table[i] for i in out_slots)
        attrs = step.attrs
        if seeded and seeds:
            attrs = dict(attrs, seed=seeds.get(attrs["seed"], attrs["seed"]))
        if routed:
            device.run_kernel(step.op_def, [table[i] for i in ins], out, attrs)
        else:
            step.op_def.impl(xp, *[table[i] for i in ins], out=out, **attrs)

    def _table(self, device, bases, offsets) -> list:
        """Every (value, view) a step uses, as an array of this replay (``bases``: the
        replay op's arrays, its inputs then its outputs)."""
        arena = bases[-1] if self.plan.arena_bytes else None
        table = self._static_table(device, arena)[:]
        view = device.view
        for position, k, vid, place in self._dynamic:
            base = bases[k]
            if offsets and vid in offsets:
                place = moved(place, offsets[vid])
            table[position] = base if place is None else view(base, place)
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
        for compiled, routed in zip(self.steps, self._routed(device)):
            compiled[4] = routed
        self._calls = [self._bound(compiled, table) for compiled in self.steps]
        return table

    def _local(self, arena, vid, slot):
        spec = self.specs[vid]
        count = int(np.prod(spec.shape, dtype=np.int64))
        raw = arena[slot.offset:slot.offset + spec.nbytes]
        return raw.view(spec.dtype)[:count].reshape(spec.shape)

    def _bound(self, compiled, table):
        """The step's kernel bound to its arrays of ``table``; None for a step that draws a
        seed or goes through the device's kernel runner (run by ``_run_step``)."""
        step, ins, outs, seeded, routed = compiled
        if routed or seeded or any(table[i] is None for i in ins + outs):
            return None
        out = table[outs[0]] if len(outs) == 1 else tuple(table[i] for i in outs)
        arrays = [table[i] for i in ins]
        bind = step.op_def.bind
        if bind is not None:
            return bind(self._xp, arrays, out, **step.attrs)
        return functools.partial(step.op_def.impl, self._xp, *arrays, out=out, **step.attrs)


def _annotate(exc: Exception, step) -> None:
    """Name the user's line of the step that raised ``exc``."""
    exc.minerva_created_at = step.created_at
    exc.add_note(f"in the jitted op '{step.op_def.name}'")


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
