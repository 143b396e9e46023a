"""The direct path, a part of the engine: a tiny op whose inputs are computed runs at once
on the calling thread, without an op node (``Engine`` inherits it).

It is the one path for tiny ops (``is_tiny``: inputs and output of at most the device's
``inline_limit`` bytes, on a device that has one). Everything else — an input still
pending or on another device, a value with pending readers to wait for, a copy to make
first — takes the DAG path, where the device's own thread runs the op. A direct op reads
the current versions of its inputs and makes a new version: of a fresh storage, or of the
storage it writes (``x += 1``, ``x[i] = v``, ``out=``) when that storage's value is
computed, read by nothing pending and held by no other storage (``state.begin_direct``).
The result, the errors and the trace records are those of the DAG path.

The common case — a fresh output, or a write into a storage whose value is computed, read
by nothing and held by that storage alone, while nothing follows nodes through the DAG
(``hooks.wants_nodes``; the trace does not) — takes the lean path (``run_lean``), in one
round of the engine lock: the queued handle releases are applied (a value that died with
the output's size hands its block over: the memory in use stays as it was, so a trace
records no free and no allocation), a block is taken without the store's out-of-memory
ladder otherwise (the ladder's reclaimer needs the engine lock: when it would be needed
the op takes the DAG path), the inputs are checked, the kernel runs (with the device's
BLAS thread count when it calls BLAS and that count is free) and its output is inserted
computed (``state.settled_value``, ``state.settled_write``); as nothing else can read or
write meanwhile, no op node and no read counts are needed. A fresh output of more than
``AHEAD_BYTES`` is made so only while no op is in flight. The user's line is found only
when it is needed: for an error, a floating-point warning, a write's version or a trace
record, while the user's call is still on the stack. ``element_now`` reads one element of
a computed value the same way (``x[i]``).
"""
from __future__ import annotations

import functools
import math
import time

from minerva.common import fp_errors
from minerva.common.callsite import format_callsite, user_callsite
from minerva.common.errors import OpError
from minerva.dag.nodes import COMPLETED, FAILED, DataNode, Storage, new_node_id
from minerva.device.base import detach_traceback
from minerva.scheduler import state


AHEAD_BYTES = 64 << 10
"""A fresh output of an op touching more bytes than this (up to the device's
``inline_limit``) is made on the calling thread only while no op is in flight: else the
program runs ahead of its devices, and a buffer made now — an upload in a loop, say —
would be held from now on rather than from when the ops before it have run."""


def is_tiny(storages, spec, out_view, limit: int) -> bool:
    """Whether an op reading ``storages`` and writing ``spec`` (through ``out_view``, when
    it writes part of a buffer) touches at most ``limit`` bytes."""
    if out_view is None:
        total = spec.nbytes
    else:
        total = math.prod(out_view[0]) * spec.dtype.itemsize
    for storage in storages:
        total += storage.current.spec.nbytes
    return total <= limit


class DirectPath:
    """Tiny ops run at once on the calling thread (mixed into ``Engine``, whose lock
    guards the nodes it counts)."""

    def element_now(self, storage, view, index=()):
        """Element ``index`` (ints, one per axis) of ``storage``'s current value seen
        through ``view`` (None: the whole value), as NumPy's scalar, read at once under the
        lock when that value is computed on a CPU device with no write pending (a scalar
        index, as NumPy reads it; NumPy's IndexError out of bounds); else None (nothing
        done)."""
        with self._lock:
            data = storage.current
            if data.state != COMPLETED or data.writer is not None or self.closed \
                    or storage.engine is not self:
                return None
            device = self.devices.table[data.device_id]
            if device.kind != "cpu":
                return None
            array = data.array if view is None else device.view(data.array, view)
            return array[index]

    def _try_direct(self, op_def, attrs, storages, spec, device_id, created_at, views,
                    writes, out_views):
        """Run a tiny op now on this thread when it can be (the lean path, else the
        general one); its output storage, or None for the DAG path."""
        device = self.devices.table[device_id]
        limit = device.inline_limit
        if not limit:
            return None
        if out_views is None:
            total = spec.nbytes
            for storage in storages:
                total += storage.current.spec.nbytes
            if total > limit:
                return None
            if writes is None and not self.hooks.wants_nodes:
                result = self.run_lean(op_def, attrs, storages, spec, device, views, total)
                return None if result is None else [result]
        elif not is_tiny(storages, spec, out_views[0], limit):
            return None
        return self._run_direct(op_def, attrs, storages, spec, device,
                                created_at or user_callsite(), views,
                                None if writes is None else writes[0],
                                None if out_views is None else out_views[0])

    def run_lean(self, op_def, attrs, storages, spec, device, views=None, total=None,
                 written=None, out_view=None):
        """The lean path: an op of minerva's own (its BLAS calls, if any, with the device's
        thread count, taken only when that needs no wait), while nothing follows nodes (a
        trace records it as an op on the caller's track, ``_announce_lean``), on
        ``device`` (a Device, or its id: the op is then checked for the lean path here,
        the builder's shortcut past ``submit``), touching ``total`` bytes (None: counted
        here). Its output is fresh, or the next version of storage ``written`` (of spec
        ``spec``, written through ``out_view``) when that storage's value is computed, read
        by nothing and held by that storage alone. Returns the output's storage, or None
        when the op must take another path (nothing done then).

        Deliberately flat (every call here is paid per tiny op): one round of the engine
        lock applies the queued releases (``_reap_locked``; a value that died with a fresh
        output's size hands its block over), takes a block without the out-of-memory
        ladder when none was handed over (the DAG path climbs it), checks the inputs, runs
        the kernel and inserts the output computed."""
        if type(device) is int:
            device = self.devices.table[device]
            if not op_def.tiny_inline or self.hooks.wants_nodes:
                return None
        nbytes = spec.nbytes
        if total is None:
            total = nbytes if out_view is None else \
                math.prod(out_view[0]) * spec.dtype.itemsize
            for storage in storages:
                total += storage.current.spec.nbytes
            limit = device.inline_limit
            if not limit or total > limit:
                return None
        device_id = device.device_id
        store = device.store
        errstate = fp_errors.caller_state()
        traced = self.hooks.active   # a trace records the op (``_announce_lean``)
        with self._lock:
            block, later = self._reap_locked(
                device_id, nbytes if store.recycles and written is None else -1) \
                if self._releases else (None, None)
            ready = not self.closed and self.n_inflight < self.max_pending and (
                total <= AHEAD_BYTES or not self.n_inflight or written is not None)
            arrays = []
            for storage in storages:   # the inputs: computed values here, no writer
                data = storage.current
                if data.state != COMPLETED or data.writer is not None \
                        or data.device_id != device_id or storage.engine is not self:
                    ready = False
                    break
                arrays.append(data.array)
            blas = ready and op_def.blas   # its device's BLAS threads, never waited for
            if blas:
                ready = blas = device.try_hold_blas()
            out = target = None
            if written is not None:
                base = written.current
                if ready and state.writable_now(base, device_id) and written.engine is self:
                    target = base.array if out_view is None else \
                        device.view(base.array, out_view)
            elif not ready:
                if block is not None:
                    store.free(block)
            elif block is not None:
                store.n_recycled += 1
                target = block.view if block.view_key == (spec.shape, spec.dtype) \
                    else store.array(block, spec.shape, spec.dtype)
            else:
                block, target = store.alloc_array(nbytes, spec.shape, spec.dtype, False)
            if target is not None:
                if views is not None:
                    arrays = [a if v is None else device.view(a, v)
                              for a, v in zip(arrays, views)]
                if traced:
                    started = time.perf_counter_ns()
                exc = device.cancelled or _run_kernel(op_def.impl, device.xp, arrays,
                                                      attrs, target, errstate)
                if written is None:
                    out = state.settled_value(self.dag, spec, device_id, exc is not None)
                    block.label, out.block, out.array = out, block, target
                else:
                    out = written.current = state.settled_write(   # the line names it
                        self.dag, base, exc is not None, user_callsite())
                if traced:
                    traced = (started, [storage.current for storage in storages], exc)
                if exc is not None:
                    out.error = _direct_error(op_def, exc, out.node_id, device)
                    self._failures.append(out.error)
            if blas:
                device.release_blas()
        if later:
            self._free_blocks(later)
        if out is None:
            return None
        if traced:
            self._announce_lean(op_def, out, device, *traced)
        if fp_errors.DIRECT_RECORDS:   # floating-point errors met: reported at the user's line
            fp_errors.report(errstate, fp_errors.take_direct_records(), op_def.name,
                             user_callsite())
        return Storage(out, self) if written is None else written

    def _announce_lean(self, op_def, out, device, started: int, inputs, exc) -> None:
        """While a trace records: the lean op that ran from ``started`` on ``inputs`` (its
        input values) into ``out``, as the hooks ``op_started`` and ``op_finished`` see an
        op, on the caller's track."""
        record = state.DirectOp(op_def, inputs, out, user_callsite(3))
        record.t_created = record.t_started = started
        hooks, track = self.hooks, device.caller_track
        hooks.op_started(record, device.device_id, track, started)
        hooks.op_finished(record, device.device_id, track, time.perf_counter_ns(), exc)

    def _run_direct(self, op_def, attrs, storages, spec, device, created_at, views,
                    written=None, out_view=None):
        """Run a tiny op now on this thread; its output storage (``written`` itself when
        it writes one), or None when it must take the DAG path."""
        begun = self._begin_direct(storages, spec, device, created_at, written)
        if begun is None:
            return None
        args, out = begun
        hooks = self.hooks
        if hooks.active:   # the trace: the op as a record, on the caller's track
            record = state.DirectOp(op_def, args, out, created_at)
            hooks.op_started(record, device.device_id, device.caller_track,
                             record.t_created)
        exc = device.run_direct(op_def, attrs, args, views, out, out_view)
        if hooks.active:
            hooks.op_finished(record, device.device_id, device.caller_track,
                              time.perf_counter_ns(), exc)
        error = None if exc is None else OpError.from_failure(
            exc, op=op_def.name, node_id=out.node_id, device=device.device_id,
            created_at=format_callsite(created_at))
        return [self._end_direct(args, out, error, written)]

    def _begin_direct(self, storages, spec, device, created_at, written):
        """Under the lock: the input versions and the new output version, or None (the
        runtime is closed or full, an input lives elsewhere or is not ready)."""
        with self._lock:
            if self.closed or self.n_inflight >= self.max_pending:
                return None
            args = [storage.current for storage in storages]
            for i, data in enumerate(args):
                if data.device_id != device.device_id or storages[i].engine is not self:
                    return None
            base = None
            if written is not None:
                base = written.current
                if written.engine is not self or base.device_id != device.device_id:
                    return None
            out = state.begin_direct(self.dag, args, spec, device.device_id, created_at,
                                     base)
            if out is None:
                return None
            if written is not None:
                written.current = out
            self.n_inflight += 1
            blocks = self._delete_locked(self._drain_releases_locked()) \
                if self._releases else None
        if blocks:
            self._free_blocks(blocks)
        return args, out

    def _end_direct(self, args, out, error, written) -> Storage:
        """Under the lock: settle the direct op's output; its storage."""
        with self._lock:
            ready, dead = state.end_direct(self.dag, args, out, error)
            if error is not None:
                self._failures.append(error)
            result = Storage(out, self) if written is None else written
            self._settle_inflight_locked()
            blocks = self._delete_locked(dead) if dead else None
        if blocks:
            self._free_blocks(blocks)
        if ready:
            self._start(ready)
        return result

    def run_nested_now(self, op_def, attrs, storages, fresh, writes, device_id,
                       scratch=None, created_at=None):
        """Run a jit replay's segment (``op_def`` is nested: its kernel gets the device)
        at once on the calling thread, whole under the engine lock as the lean path runs
        a tiny op. It reads the current values of ``storages``, makes fresh outputs of the
        specs ``fresh`` and writes in place the values of ``writes`` (each storage's next
        version) and of ``scratch`` (a plan's arena, which only that plan's replays use:
        no new version while no trace records). It runs when the runtime has room, no
        listener follows nodes, and every value it reads or writes is computed on
        ``device_id`` with no writer pending (one it writes: read by nothing pending and
        held by its storage alone); else None (nothing done: the DAG path). Returns the
        fresh storages. Errors (the step's line), floating-point reports (at
        ``created_at``, else the user's line found now) and trace records (on the
        caller's track) are the DAG path's; ``device.cancelled`` fails it."""
        hooks = self.hooks
        if hooks.wants_nodes:
            return None
        device = self.devices.table[device_id]
        traced = hooks.active
        if traced and scratch is not None:   # the trace names every version written
            writes, scratch = writes + [scratch], None
        errstate = fp_errors.caller_state()
        made = None
        store = device.store
        handed = -1 if traced or not fresh or not store.recycles else fresh[0].nbytes
        with self._lock:
            block = later = None
            if self._releases:
                if traced:
                    later = self._delete_locked(self._drain_releases_locked())
                else:   # a value that died with the first output's size hands it over
                    block, later = self._reap_locked(device_id, handed)
            arrays = None if self.closed or self.n_inflight >= self.max_pending else \
                _now_inputs(self, storages, device_id)
            taken = None
            if arrays is not None:
                taken = _now_outputs(self, device, fresh, writes, scratch, block)
            elif block is not None:
                store.free(block)
            if taken is not None:
                made = _run_nested(self, op_def, attrs, device, storages, arrays, taken,
                                   fresh, writes, created_at, errstate)
        if later:
            self._free_blocks(later)
        if made is None:
            return None
        outs, blocks = made
        if blocks:
            self._free_blocks(blocks)
        if fp_errors.DIRECT_RECORDS:   # floating-point errors met: at the user's line
            fp_errors.report(errstate, fp_errors.take_direct_records(), op_def.name,
                             created_at or user_callsite())
        return [Storage(out, self) for out in outs]


def _run_kernel(impl, xp, arrays, attrs, target, errstate):
    """Run a lean op's kernel into ``target`` under the calling thread's error state
    ``errstate`` (``fp_errors.caller_state``): as it is when that state reports nothing,
    else with what it meets collected into ``fp_errors.DIRECT_RECORDS``; the exception
    it raised (its traceback detached), or None."""
    try:
        if errstate.quiet:
            impl(xp, *arrays, out=target, **attrs)
        else:
            token = fp_errors.DIRECT.set(errstate.direct)
            try:
                impl(xp, *arrays, out=target, **attrs)
            finally:
                fp_errors.DIRECT.reset(token)
    except Exception as err:  # stored on the output
        fp_errors.DIRECT_RECORDS.clear()
        return detach_traceback(err)
    return None


def _direct_error(op_def, exc, node_id: int, device) -> OpError:
    """The OpError of a direct op that raised ``exc``, naming the user's line (still on
    the stack)."""
    return OpError.from_failure(exc, op=op_def.name, node_id=node_id,
                                device=device.device_id,
                                created_at=format_callsite(user_callsite()))


# ---- a jit replay's segment run at once (``DirectPath.run_nested_now``) -----------------

def _now_inputs(engine, storages, device_id: int):
    """The arrays of the inputs' current values, or None when one is not computed on
    ``device_id``, has a writer pending or belongs to another runtime."""
    arrays = []
    for storage in storages:
        data = storage.current
        if data.state != COMPLETED or data.writer is not None \
                or data.device_id != device_id or storage.engine is not engine:
            return None
        arrays.append(data.array)
    return arrays


def _now_outputs(engine, device, fresh, writes, scratch, handed=None):
    """``(fresh blocks, output arrays)``: the written values' buffers (each held by its
    storage alone, computed, read and written by nothing pending) and blocks for the
    fresh outputs (the first one ``handed``, a dead value's block of its size, when there
    is one), taken without the out-of-memory ladder; None where one fails (every block
    taken, ``handed`` too, given back)."""
    device_id, written, store = device.device_id, [], device.store
    for storage in writes if scratch is None else writes + [scratch]:
        base = storage.current
        if base.state != COMPLETED or base.rc or base.writer is not None \
                or base.extern_rc != 1 or base.device_id != device_id \
                or storage.engine is not engine:
            if handed is not None:
                store.free(handed)
            return None
        written.append(base.array)
    blocks, arrays = [], []
    for spec in fresh:
        if handed is not None:
            block, handed = handed, None
            store.n_recycled += 1
            array = block.view if block.view_key == (spec.shape, spec.dtype) \
                else store.array(block, spec.shape, spec.dtype)
        else:
            block, array = store.alloc_array(spec.nbytes, spec.shape, spec.dtype, False)
        if block is None:
            for taken in blocks:
                store.free(taken)
            return None
        blocks.append(block)
        arrays.append(array)
    return blocks, tuple(arrays + written)


def _run_nested(engine, op_def, attrs, device, storages, arrays, taken, fresh, writes,
                created_at, errstate):
    """Under the lock: run the kernel into the ``taken`` outputs (``_now_outputs``), then
    insert the fresh outputs (of specs ``fresh``) and the next versions of ``writes``,
    computed or failed: ``(the fresh outputs, blocks to free after the lock)``."""
    hooks, device_id = engine.hooks, device.device_id
    record = None
    attrs = dict(attrs, device=device)
    if hooks.active:   # the trace: the op as a record, on the caller's track
        inputs = [s.current for s in storages] + [s.current for s in writes]
        record = state.DirectOp(op_def, inputs, None, created_at or user_callsite())
        attrs["trace"] = functools.partial(hooks.inner_op, device_id, record.node_id)
        hooks.op_started(record, device_id, device.caller_track, record.t_created)
    blocks, outs = taken
    exc = device.cancelled or _run_kernel(op_def.impl, device.xp, arrays, attrs, outs,
                                          errstate)
    made = []
    for spec, block, array in zip(fresh, blocks, outs):
        out = DataNode(spec, device_id, None, None)
        block.label, out.block, out.array = out, block, array
        made.append(out)
    n_fresh = len(made)
    dead = [_next_version(storage, made) for storage in writes]
    error = None if exc is None else _nested_error(op_def, exc, made, device_id, created_at)
    _insert_settled(engine, made, error)
    if record is not None:
        record.outputs = made
        hooks.op_finished(record, device_id, device.caller_track, time.perf_counter_ns(),
                          exc)
    return made[:n_fresh], engine._delete_locked(dead) if dead else None


def _next_version(storage, made: list):
    """The next version of ``storage``'s value takes its buffer over (appended to
    ``made``); the old version, dead (held by nothing: ``_now_outputs``)."""
    base = storage.current
    out = DataNode(base.spec, base.device_id, None, None, base)
    out.block, out.array, out.base = base.block, base.array, None
    base.block = base.array = None
    base.extern_rc, base.dead = 0, True
    storage.current = out
    made.append(out)
    return base


def _nested_error(op_def, exc, made: list, device_id: int, created_at) -> OpError:
    """The OpError of a segment that raised ``exc``, naming the user's line of the step
    that raised it (``minerva_created_at``), else the replay's."""
    where = getattr(exc, "minerva_created_at", None) or created_at or user_callsite()
    return OpError.from_failure(exc, op=op_def.name,
                                node_id=made[0].node_id if made else new_node_id(),
                                device=device_id, created_at=format_callsite(where))


def _insert_settled(engine, made: list, error) -> None:
    """Insert a segment's outputs, computed or failed with ``error``; one op counted."""
    dag, final = engine.dag, COMPLETED if error is None else FAILED
    for out in made:
        out.state, out.error = final, error
        dag.data[out.node_id] = out
    dag.n_completed_total += 1
    if error is not None:
        dag.n_failed_total += 1
        engine._failures.append(error)
