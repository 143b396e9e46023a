"""The direct path, a part of the engine: a tiny op whose inputs are computed runs at once
on the calling thread, without an op node (``Engine`` inherits it).

It is the one path for tiny ops (``is_tiny``: inputs and output of at most the device's
``inline_limit`` bytes, an input read through a view counted as the view's elements, on a
device that has one; an op the device cuts into row ranges, ``OpDef.row_split``, only up
to its ``whole_limit``, where it is never cut: its numbers may depend on the cut). Everything else — an input still
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

import math
import time

import numpy as np

from minerva.common import fp_errors
from minerva.common.callsite import format_callsite, user_callsite
from minerva.common.errors import OpError
from minerva.dag.nodes import COMPLETED, Storage
from minerva.device.base import detach_traceback
from minerva.scheduler import state


AHEAD_BYTES = 64 << 10
"""A fresh output of an op touching more bytes than this (up to the device's
``inline_limit``) is made on the calling thread only while no op is in flight: else the
program runs ahead of its devices, and a buffer made now — an upload in a loop, say —
would be held from now on rather than from when the ops before it have run."""


_HOST_VARIANTS: dict = {}
"""Each op's ``host_variant``, made once (``DirectPath.run_host``)."""


def host_variant(op_def):
    """A twin of ``op_def`` (the same name, shape rule and flags, not registered) whose
    kernel takes attribute ``host``, a tuple of ``(position, NumPy array)`` in increasing
    positions, as array operands: ``op_def``'s kernel over a CPU device's inputs with each
    of those arrays put at its position among them."""
    impl = op_def.impl

    def with_host(xp, *arrays, out, host, **attrs):
        operands = list(arrays)
        for position, array in host:
            operands.insert(position, array)
        return impl(xp, *operands, out=out, **attrs)
    return op_def.twin(with_host)


def is_tiny(storages, spec, out_view, limit: int, views=None) -> bool:
    """Whether an op reading ``storages`` (through ``views``, one view or None per input,
    when it reads parts of them) and writing ``spec`` (through ``out_view``, when it writes
    part of a buffer) touches at most ``limit`` bytes."""
    if out_view is None:
        total = spec.nbytes
    else:
        total = math.prod(out_view[0]) * spec.dtype.itemsize
    return total + input_bytes(storages, views) <= limit


def input_bytes(storages, views) -> int:
    """The bytes an op reads of the current values of ``storages``: a whole value's, or
    through its view (``views``: None, or one view or None per input) the view's elements
    at the itemsize it reads them as (``x[3, 1:399]`` of a 9x400x400 array: 398 of
    them), as the kernel's work is the view's, not its buffer's."""
    total = 0
    if views is None:
        for storage in storages:
            total += storage.current.spec.nbytes
        return total
    for storage, view in zip(storages, views):
        spec = storage.current.spec
        if view is None:
            total += spec.nbytes
        else:
            total += math.prod(view[0]) * getattr(view[1], "dtype", spec.dtype).itemsize
    return total


def run_kernel(impl, xp, arrays, attrs, target, errstate):
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


class DirectPath:
    """Tiny ops run at once on the calling thread (mixed into ``Engine``, whose lock
    guards the nodes it counts)."""

    run_kernel = staticmethod(run_kernel)
    """``run_kernel``, for the engine's other parts (``scheduler.nested``)."""

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

    def _computed_arrays(self, storages, device_id):
        """Under the lock: the arrays of ``storages``' current values when each is
        computed on ``device_id`` with no writer, in this engine; else None."""
        arrays = []
        for storage in storages:
            data = storage.current
            if data.state != COMPLETED or data.writer is not None \
                    or data.device_id != device_id or storage.engine is not self:
                return None
            arrays.append(data.array)
        return arrays

    def _try_direct(self, op_def, attrs, storages, specs, device_id, created_at, views,
                    writes, out_views):
        """Run a tiny op now on this thread when it can be (the lean path, else the
        general one; an op of several outputs, all fresh, by the general one); its output
        storages, or None for the DAG path."""
        device = self.devices.table[device_id]
        limit = device.inline_limit
        if not limit:
            return None
        if out_views is None:
            total = input_bytes(storages, views)
            for spec in specs:
                total += spec.nbytes
            if total > limit or (total > device.whole_limit and op_def.row_split):
                return None
            if writes is None and not self.hooks.wants_nodes and len(specs) == 1:
                result = self.run_lean(op_def, attrs, storages, specs[0], device, views,
                                       total)
                return None if result is None else [result]
        elif len(specs) != 1 or not is_tiny(storages, specs[0], out_views[0], limit,
                                            views) or (
                op_def.row_split and not is_tiny(storages, specs[0], out_views[0],
                                                 device.whole_limit, views)):
            return None
        if writes is not None and len(specs) != 1:
            return None
        return self._run_direct(op_def, attrs, storages, specs, device,
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
            total = (nbytes if out_view is None else
                     math.prod(out_view[0]) * spec.dtype.itemsize) + \
                input_bytes(storages, views)
            limit = device.inline_limit
            if not limit or total > limit or (total > device.whole_limit
                                              and op_def.row_split):
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
            arrays = self._computed_arrays(storages, device_id) if ready else None
            ready = arrays is not None
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
                exc = device.cancelled or run_kernel(op_def.impl, device.xp, arrays,
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
                    out.error = direct_error(op_def, exc, out.node_id, device)
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

    def run_new(self, op_def, attrs, storages, spec, device_id: int):
        """The lean path of an op whose kernel can neither fail nor meet a floating-point
        error (``from_host`` of data of its output's dtype, ``fill`` of a value of it or of
        0 or 1, ``empty``, ``copy`` of a whole value), with a fresh output on CPU device
        ``device_id``, reading whole values ``storages``, while nothing listens to the
        engine (a trace or a node follower: ``run_lean`` or the DAG path serve them):
        ``run_lean`` without what such an op does not need (the caller's error state,
        BLAS threads, views, the kernel's failure). Returns the output's storage, or None
        when the op must take another path (nothing done then)."""
        device = self.devices.table[device_id]
        nbytes = spec.nbytes
        limit = device.inline_limit
        if not limit or self.hooks.active or self.hooks.wants_nodes \
                or not op_def.tiny_inline or device.cancelled is not None:
            return None
        total = nbytes
        for storage in storages:
            total += storage.current.spec.nbytes
        if total > limit:
            return None
        store = device.store
        out = None
        with self._lock:
            block, later = self._reap_locked(device_id, nbytes if store.recycles else -1) \
                if self._releases else (None, None)
            ready = not self.closed and self.n_inflight < self.max_pending and (
                total <= AHEAD_BYTES or not self.n_inflight)
            arrays = self._computed_arrays(storages, device_id) if ready else None
            ready = arrays is not None
            if not ready:
                if block is not None:
                    store.free(block)
            else:
                out = self._new_locked(op_def, attrs, arrays, spec, device, block)
        if later:
            self._free_blocks(later)
        return None if out is None else Storage(out, self)

    def _new_locked(self, op_def, attrs, arrays, spec, device, block):
        """``run_new``'s output under the lock: ``block`` (handed over, or None: one taken
        without the ladder) filled by the kernel, inserted computed; None when no block is
        to be had or the kernel raised (given back: the general path runs the op)."""
        store = device.store
        if block is not None:
            store.n_recycled += 1
            target = block.view if block.view_key == (spec.shape, spec.dtype) \
                else store.array(block, spec.shape, spec.dtype)
        else:
            block, target = store.alloc_array(spec.nbytes, spec.shape, spec.dtype, False)
            if target is None:
                return None
        try:
            op_def.impl(device.xp, *arrays, out=target, **attrs)
        except Exception:   # not for such an op: the general path raises or stores it
            store.free(block)
            return None
        out = state.settled_value(self.dag, spec, device.device_id, False)
        block.label, out.block, out.array = out, block, target
        return out

    def run_host(self, op_def, attrs, storages, host, spec, device_id: int, views=None,
                 written=None, out_view=None):
        """``run_lean`` of an op some of whose array operands are NumPy arrays (``x[idx]``,
        ``x[idx] = v`` with host index arrays), read as they are by a CPU device (NumPy's),
        so they need no upload: ``host`` holds ``(position, array)`` in increasing
        positions among the operands, ``storages`` (through ``views``) are the others, in
        order; the output is fresh, or the next version of ``written`` (through
        ``out_view``). Only while no trace records (it shows the uploads, as the general
        path makes them). Returns the output's storage, or None when the op must take
        another path (nothing done then)."""
        device = self.devices.table[device_id]
        if device.xp is not np or self.hooks.active:
            return None
        total = input_bytes(storages, views) + spec.nbytes if out_view is None else \
            input_bytes(storages, views) + math.prod(out_view[0]) * spec.dtype.itemsize
        for _, array in host:
            total += array.nbytes
        limit = device.inline_limit
        if not limit or total > limit or (total > device.whole_limit and op_def.row_split):
            return None
        variant = _HOST_VARIANTS.get(op_def)
        if variant is None:
            variant = _HOST_VARIANTS[op_def] = host_variant(op_def)
        if not variant.tiny_inline or self.hooks.wants_nodes:
            return None
        return self.run_lean(variant, dict(attrs, host=host), storages, spec, device,
                             views, total, written, out_view)

    def _announce_lean(self, op_def, out, device, started: int, inputs, exc) -> None:
        """While a trace records: the lean op that ran from ``started`` on ``inputs`` (its
        input values) into ``out``, as the hooks ``op_started`` and ``op_finished`` see an
        op, on the caller's track."""
        record = state.DirectOp(op_def, inputs, [out], user_callsite(3))
        record.t_created = record.t_started = started
        hooks, track = self.hooks, device.caller_track
        hooks.op_started(record, device.device_id, track, started)
        hooks.op_finished(record, device.device_id, track, time.perf_counter_ns(), exc)

    def _run_direct(self, op_def, attrs, storages, specs, device, created_at, views,
                    written=None, out_view=None):
        """Run a tiny op now on this thread; its output storages (``written`` itself when
        it writes one), or None when it must take the DAG path."""
        begun = self._begin_direct(storages, specs, device, created_at, written)
        if begun is None:
            return None
        args, outs = begun
        hooks = self.hooks
        if hooks.active:   # the trace: the op as a record, on the caller's track
            record = state.DirectOp(op_def, args, outs, created_at)
            hooks.op_started(record, device.device_id, device.caller_track,
                             record.t_created)
        exc = device.run_direct(op_def, attrs, args, views, outs, out_view)
        if hooks.active:
            hooks.op_finished(record, device.device_id, device.caller_track,
                              time.perf_counter_ns(), exc)
        error = None if exc is None else OpError.from_failure(
            exc, op=op_def.name, node_id=outs[0].node_id, device=device.device_id,
            created_at=format_callsite(created_at))
        return self._end_direct(args, outs, error, written)

    def _begin_direct(self, storages, specs, device, created_at, written):
        """Under the lock: the input versions and the new output versions, or None (the
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
            outs = state.begin_direct(self.dag, args, specs, device.device_id,
                                      created_at, base)
            if outs is None:
                return None
            if written is not None:
                written.current = outs[0]
            self.n_inflight += 1
            blocks = self._delete_locked(self._drain_releases_locked()) \
                if self._releases else None
        if blocks:
            self._free_blocks(blocks)
        return args, outs

    def _end_direct(self, args, outs, error, written) -> list:
        """Under the lock: settle the direct op's outputs; their storages."""
        with self._lock:
            ready, dead = state.end_direct(self.dag, args, outs, error)
            if error is not None:
                self._failures.append(error)
            result = [Storage(out, self) for out in outs] if written is None \
                else [written]
            self._settle_inflight_locked()
            blocks = self._delete_locked(dead) if dead else None
        if blocks:
            self._free_blocks(blocks)
        if ready:
            self._start(ready)
        return result


def direct_error(op_def, exc, node_id: int, device) -> OpError:
    """The OpError of a direct op that raised ``exc``, naming the user's line (still on
    the stack)."""
    return OpError.from_failure(exc, op=op_def.name, node_id=node_id,
                                device=device.device_id,
                                created_at=format_callsite(user_callsite()))
