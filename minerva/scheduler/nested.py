"""A jit replay's segment run at once on the calling thread, a part of the engine
(``Engine`` inherits it): whole under the engine lock, without an op node, as the lean path
(``scheduler.direct``) runs a tiny op, with its kernel runner (``DirectPath.run_kernel``)."""
from __future__ import annotations

import functools
import time

from minerva.common import fp_errors
from minerva.common.callsite import format_callsite, user_callsite
from minerva.common.errors import OpError
from minerva.dag.nodes import COMPLETED, FAILED, DataNode, Storage, new_node_id
from minerva.scheduler import state


class NestedNow:
    """Small replays run at once on the calling thread (mixed into ``Engine``, whose lock
    guards the nodes it makes)."""

    def run_nested_now(self, op_def, attrs, storages, fresh, writes, device_id,
                       scratch=None, created_at=None):
        """Run a jit replay's segment (``op_def`` is nested: its kernel gets the device,
        ``attrs["device"]``, set by the caller) at once on the calling thread, whole under
        the engine lock as the lean path runs a tiny op. It reads the current values of
        ``storages``, makes fresh outputs of the specs ``fresh`` and writes in place the
        values of ``writes`` (each storage's next version) and of ``scratch`` (a plan's
        arena, which only that plan's replays use: no new version while no trace
        records). It runs when the runtime has room, no
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

    def rerun_nested_now(self, op_def, attrs, storages, kept, writes, device_id,
                         scratch=None, created_at=None, errstate=None) -> bool:
        """``run_nested_now`` of a segment whose outputs are the values of ``kept``:
        storages of an earlier replay's results that only the caller holds (no handle).
        Each is computed anew in its buffer, as it is: nothing else holds it, so no
        version tells it apart (a trace, which names every value made, gets fresh ones:
        False). The same conditions, the kept values' as the written ones'; True when
        it ran (the kept storages are the outputs), else False (nothing done).
        ``errstate``: the caller's (``fp_errors.caller_state``), when it has it.
        Deliberately flat: it is the whole cost of a tiny jitted call beyond its
        kernels."""
        hooks = self.hooks
        if hooks.wants_nodes or hooks.active:
            return False
        device = self.devices.table[device_id]
        if errstate is None:
            errstate = fp_errors.caller_state()
        ran, later, blocks, targets = False, None, None, None
        written = kept if not writes and scratch is None else \
            kept + writes if scratch is None else kept + writes + [scratch]
        with self._lock:
            if self._releases:
                later = self._reap_locked(device_id, -1)[1]
            arrays = None if self.closed or self.n_inflight >= self.max_pending else []
            for storage in storages if arrays is not None else ():   # (_now_inputs)
                data = storage.current
                if data.state != COMPLETED or data.writer is not None \
                        or data.device_id != device_id or storage.engine is not self:
                    arrays = None
                    break
                arrays.append(data.array)
            if arrays is not None:
                targets = _now_writable(self, written, device_id)
            if targets is not None:
                exc = device.cancelled or self.run_kernel(op_def.impl, device.xp, arrays,
                                                          attrs, targets, errstate)
                ran = True
                if exc is None and not writes:   # the kept values stay as they are
                    self.dag.n_completed_total += 1
                else:
                    made = [storage.current for storage in kept]
                    dead = [_next_version(storage, made) for storage in writes]
                    error = None if exc is None else \
                        _nested_error(op_def, exc, made, device_id, created_at)
                    _insert_settled(self, made, error)
                    blocks = self._delete_locked(dead) if dead else None
        if later:
            self._free_blocks(later)
        if blocks:
            self._free_blocks(blocks)
        if ran and fp_errors.DIRECT_RECORDS:   # floating-point errors met: the user's line
            fp_errors.report(errstate, fp_errors.take_direct_records(), op_def.name,
                             created_at or user_callsite())
        return ran


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


def _now_writable(engine, storages, device_id: int):
    """The arrays of the values of ``storages``, each computed on ``device_id``, held by
    its storage alone and read and written by nothing pending (a replay on the caller may
    write it in place), as a tuple; None where one is not."""
    arrays = []
    for storage in storages:
        base = storage.current
        if base.state != COMPLETED or base.rc or base.writer is not None \
                or base.extern_rc != 1 or base.device_id != device_id \
                or storage.engine is not engine:
            return None
        arrays.append(base.array)
    return tuple(arrays)


def _now_outputs(engine, device, fresh, writes, scratch, handed=None):
    """``(fresh blocks, output arrays)``: the written values' buffers (each held by its
    storage alone, computed, read and written by nothing pending) and blocks for the
    fresh outputs (the first one ``handed``, a dead value's block of its size, when there
    is one), taken without the out-of-memory ladder; None where one fails (every block
    taken, ``handed`` too, given back)."""
    device_id, store = device.device_id, device.store
    written = _now_writable(engine, writes if scratch is None else writes + [scratch],
                            device_id)
    if written is None:
        if handed is not None:
            store.free(handed)
        return None
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
    return blocks, tuple(arrays) + written


def _run_nested(engine, op_def, attrs, device, storages, arrays, taken, fresh, writes,
                created_at, errstate):
    """Under the lock: run the kernel into the ``taken`` outputs (``_now_outputs``), then
    insert the fresh outputs (of specs ``fresh``) and the next versions of ``writes``,
    computed or failed: ``(the fresh outputs, blocks to free after the lock)``."""
    hooks, device_id = engine.hooks, device.device_id
    record = None
    if hooks.active:   # the trace: the op as a record, on the caller's track
        inputs = [s.current for s in storages] + [s.current for s in writes]
        record = state.DirectOp(op_def, inputs, [None], created_at or user_callsite())
        attrs = dict(attrs, trace=functools.partial(hooks.inner_op, device_id,
                                                    record.node_id))
        hooks.op_started(record, device_id, device.caller_track, record.t_created)
    blocks, outs = taken
    exc = device.cancelled or engine.run_kernel(op_def.impl, device.xp, arrays, attrs, outs,
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
