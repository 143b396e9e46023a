"""Pure state transitions of the DAG runtime.

Every function here runs under the engine's lock, touches only node fields and the
PhysicalDag, and returns what the caller must do next (ops that became ready, data nodes
that died). None of them block, call a device, or start a thread, so tests drive them
directly and assert whole runtime-info tables.

Lifecycle of an op: ``register_op`` (state PENDING, ``n_waiting`` = inputs not computed
+ earlier readers of what it overwrites + 1 registration hold) -> ``release_hold`` (READY
when nothing is outstanding) -> ``start_run`` (RUNNING; returns an input's error when the
op is poisoned) -> [``launch_op`` (LAUNCHED), on devices that order their own work] ->
``complete_op`` (COMPLETED or FAILED; wakes consumers and writers,
drops input counts, hands overwritten buffers to the new versions).

Launching ahead: a device that orders its own work (a GPU's streams) reports an op
``launch_op`` (LAUNCHED) when its work is queued, before it is done. Consumers *on that
device* waiting only for it become ready (the device orders them after it); every other
consumer, a host waiter, a writer waiting for it to finish reading (write after read) and
the deletes of what it reads still wait for ``complete_op``. A consumer that started on a
launched input (``OpNode.ahead``) fails with that input if the input's op fails later.

An op that runs at once on the calling thread (tiny, inputs computed) skips the op node:
``begin_direct`` counts its reads and inserts its output, ``end_direct`` settles it; one
that runs whole under the engine lock needs neither: ``settled_value`` inserts its output.

A write (an output with a ``base``) takes the version it overwrites as an input, waits
for that version's earlier readers (write after read: ``base.writer``), and takes over its
buffer when it completes. A data node is *dead* when its producer is done, no consumer is
pending (``rc == 0``) and no storage or copy-cache hold remains (``extern_rc == 0``). A
dead node is marked once and handed back to the caller, who frees it with ``delete_data``.
"""
from __future__ import annotations

import time

from minerva.dag.nodes import (COMPLETED, FAILED, LAUNCHED, READY, RUNNING, DataNode,
                               OpNode, new_node_id)
from minerva.dag.physical_dag import PhysicalDag


def register_op(dag: PhysicalDag, op_def, attrs: dict, args: list, out_specs,
                device_id: int, created_at, views=None, bases=None) -> OpNode:
    """Create an op node with its outputs, count its inputs, and insert it (still held).

    ``args`` are the kernel's input versions, read through ``views``; ``bases`` (None, or
    one version or None per output) are the versions the outputs overwrite. An input
    launched on ``device_id`` itself counts as computed (the device orders the op after
    it)."""
    op = OpNode(op_def, attrs, args, device_id, created_at)
    op.views = views
    if bases is not None:
        op.inputs = args + [b for b in bases if b is not None]
        for base in bases:
            if base is not None:
                _claim_buffer(op, base)
    n_waiting = op.n_waiting
    for data in op.inputs:
        data.rc += 1
        st = data.state
        if st < COMPLETED and (st != LAUNCHED or data.device_id != device_id):
            n_waiting += 1
            if data.waiting_ops is None:
                data.waiting_ops = [op]
            else:
                data.waiting_ops.append(op)
    op.n_waiting = n_waiting
    live = dag.data
    if bases is None and len(out_specs) == 1:
        out = DataNode(out_specs[0], device_id, op, created_at)
        op.outputs = [out]
        live[out.node_id] = out
    else:
        bases = bases or [None] * len(out_specs)
        op.outputs = [DataNode(spec, device_id, op, created_at, base)
                      for spec, base in zip(out_specs, bases)]
        for out in op.outputs:
            live[out.node_id] = out
    dag.ops[op.node_id] = op
    return op


class DirectOp:
    """An op run by ``begin_direct``/``end_direct``, as the hooks ``op_started`` and
    ``op_finished`` see it (the fields of an op node they read); made only while a
    listener (the trace) is subscribed."""

    __slots__ = ("node_id", "op_def", "inputs", "outputs", "created_at", "t_created",
                 "t_started")

    def __init__(self, op_def, args: list, outputs: list, created_at):
        self.node_id = new_node_id()
        self.op_def, self.inputs, self.outputs = op_def, args, outputs
        self.created_at = created_at
        self.t_created = self.t_started = time.perf_counter_ns()


def begin_direct(dag: PhysicalDag, args: list, specs, device_id: int, created_at,
                 base: DataNode | None = None) -> list | None:
    """An op about to run at once on the calling thread, without an op node: when every
    input is computed and has no pending writer, count the reads and insert the outputs
    (one per spec of ``specs``, pending, no producer); else None (the op takes the normal
    path). With ``base`` (the version a write overwrites; one output only) the output is
    its next version and takes its storage's hold — only when ``base`` is computed, read
    by nothing pending and held by that one storage alone (no write after read to wait
    for, no copy on write to make)."""
    for data in args:
        if data.state != COMPLETED or data.writer is not None:
            return None
    if base is not None:
        if base.state != COMPLETED or base.rc or base.writer is not None \
                or base.extern_rc != 1:
            return None
        base.extern_rc = 0
    for data in args:
        data.rc += 1
    outs = [DataNode(spec, device_id, None, created_at, base) for spec in specs]
    for out in outs:
        dag.data[out.node_id] = out
    return outs


def settled_value(dag: PhysicalDag, spec, device_id: int, failed: bool) -> DataNode:
    """The output of an op that ran whole under the engine lock (the lean direct path:
    nothing else could read or write meanwhile, so its reads are not counted): inserted
    computed, or failed (the caller sets its ``error``), with no producer."""
    out = DataNode(spec, device_id, None, None)
    if failed:
        out.state = FAILED
        dag.n_failed_total += 1
    else:
        out.state = COMPLETED
    dag.data[out.node_id] = out
    dag.n_completed_total += 1
    return out


def writable_now(base: DataNode, device_id: int) -> bool:
    """Whether an op running whole under the engine lock may overwrite ``base`` in place
    (``settled_write``): computed on ``device_id``, read by nothing pending, held by one
    storage alone, no cached copies to drop."""
    return base.state == COMPLETED and not base.rc and base.writer is None \
        and base.extern_rc == 1 and base.copies is None and base.device_id == device_id


def settled_write(dag: PhysicalDag, base: DataNode, failed: bool, created_at) -> DataNode:
    """The next version of ``base``'s storage, written in place at the user's line
    ``created_at`` by an op that ran whole under the engine lock (``writable_now`` held):
    inserted computed, or failed (the caller sets its ``error``), owning ``base``'s
    buffer; ``base`` leaves the DAG."""
    out = DataNode(base.spec, base.device_id, None, created_at, base)
    base.extern_rc = 0
    _take_over(out)
    if out.block is not None:
        out.block.label = out
    base.dead = True
    del dag.data[base.node_id]
    out.state = FAILED if failed else COMPLETED
    dag.data[out.node_id] = out
    dag.n_completed_total += 1
    if failed:
        dag.n_failed_total += 1
    return out


def end_direct(dag: PhysicalDag, args: list, outs: list, error) -> tuple[list, list]:
    """The direct op of ``begin_direct`` ran (failed when ``error`` is set): settle its
    outputs and drop the reads. Returns ``(ready_ops, dead_data)`` as ``complete_op``."""
    ready: list[OpNode] = []
    dead: list[DataNode] = []
    base = outs[0].base
    dag.n_completed_total += 1
    if error is not None:
        dag.n_failed_total += 1
    for out in outs:
        _settle_direct(out, error, ready, dead)
    if base is not None and base.rc == 0 and base not in args:
        base.dead = True   # overwritten and read by nothing: its buffer is out's now
        dead.append(base)
    for data in args:
        data.rc -= 1
        if data.writer is not None and data.rc == data.writer_refs:
            _release_writer(data, ready)
        if data.rc == 0 and data.extern_rc == 0 and not data.dead:
            data.dead = True
            dead.append(data)
    return ready, dead


def _settle_direct(out: DataNode, error, ready: list, dead: list) -> None:
    """A direct op's output ``out`` computed (failed when ``error`` is set): what waited
    for it woken into ``ready``, itself into ``dead`` when nothing holds it."""
    if out.base is not None:
        _take_over(out)
    out.state = COMPLETED if error is None else FAILED
    out.error = error
    if out.waiting_ops is not None or out.waiter is not None:
        _wake(out, ready)   # ops and waiters that met a written storage's new version
    if out.extern_rc == 0:
        out.dead = True
        dead.append(out)


def _claim_buffer(op: OpNode, base: DataNode) -> None:
    """``op`` will overwrite ``base``'s buffer: it waits for the readers registered before
    it, and the storage's hold moves from ``base`` to the new version."""
    if base.writer is not None or base.extern_rc != 1:
        raise RuntimeError(f"internal: {base!r} is not owned by one storage")
    if base.rc:
        base.writer = op
        op.n_waiting += 1
    base.writer_refs = op.inputs.count(base)
    base.extern_rc = 0


def release_hold(op: OpNode) -> bool:
    """Drop the registration hold; True when the op is ready to run."""
    op.n_waiting -= 1
    if op.n_waiting == 0:
        op.state = READY
        return True
    return False


def start_run(op: OpNode):
    """Mark the op running; return the first failed input's error (the op is poisoned).
    An input only launched so far marks the op ``ahead``."""
    op.state = RUNNING
    for data in op.inputs:
        if data.error is not None:
            return data.error
        if data.state == LAUNCHED:
            op.ahead = True
    return None


def launch_op(op: OpNode) -> tuple[list[OpNode], bool]:
    """A device that orders its own work queued ``op`` (not yet done): its outputs are
    LAUNCHED, a write's new version takes over the old buffer now, and consumers on the
    same device waiting only for it become ready. Returns ``(ready_ops, awaited)``:
    ``awaited`` is True when something must learn of its completion soon (a consumer on
    another device, a host waiter, a writer waiting for it to finish reading)."""
    op.state = LAUNCHED
    device_id = op.device_id
    ready: list[OpNode] = []
    awaited = False
    for out in op.outputs:
        if out.base is not None:
            _take_over(out)
        out.state = LAUNCHED
        if out.waiting_ops is not None:
            awaited = _wake_on_device(out, device_id, ready) or awaited
        if out.waiter is not None:
            awaited = True
    for data in op.inputs:
        if data.writer is not None:
            awaited = True
    return ready, awaited


def _wake_on_device(out: DataNode, device_id: int, ready: list) -> bool:
    """Consumers of launched ``out`` on ``device_id`` count it; True when others remain."""
    later = None
    for consumer in out.waiting_ops:
        if consumer.device_id != device_id:
            if later is None:
                later = []
            later.append(consumer)
            continue
        consumer.n_waiting -= 1
        if consumer.n_waiting == 0:
            consumer.state = READY
            ready.append(consumer)
    out.waiting_ops = later
    return later is not None


def complete_op(dag: PhysicalDag, op: OpNode, error) -> tuple[list[OpNode], list[DataNode]]:
    """Finish ``op`` (failed when ``error`` is set): settle outputs, wake consumers, drop
    input counts (releasing writers whose earlier readers are done). An op that started on
    a launched input fails with it when that input failed since. Returns
    ``(ready_ops, dead_data)``."""
    if error is None and op.ahead:
        error = _input_error(op)
    final = COMPLETED if error is None else FAILED
    op.state = final
    op.error = error
    dag.finish_op(op)
    ready: list[OpNode] = []
    dead: list[DataNode] = []
    for out in op.outputs:
        if out.base is not None:
            _take_over(out)
        out.state = final
        out.error = error
        out.producer = None
        if out.waiting_ops is not None or out.waiter is not None:
            _wake(out, ready)
        if out.rc == 0 and out.extern_rc == 0:
            out.dead = True
            dead.append(out)
    for data in op.inputs:
        data.rc -= 1
        if data.writer is not None and data.rc == data.writer_refs:
            _release_writer(data, ready)
        if data.rc == 0 and data.extern_rc == 0 and not data.dead \
                and data.state >= COMPLETED:  # else its producer's completion frees it
            data.dead = True
            dead.append(data)
    return ready, dead


def _input_error(op: OpNode):
    for data in op.inputs:
        if data.error is not None:
            return data.error
    return None


def _release_writer(data: DataNode, ready: list) -> None:
    """The readers issued before ``data``'s writer are done: drop the writer's hold."""
    writer, data.writer = data.writer, None
    writer.n_waiting -= 1
    if writer.n_waiting == 0:
        writer.state = READY
        ready.append(writer)


def _take_over(out: DataNode) -> None:
    """A write finished (or was skipped): the new version owns the old one's buffer."""
    base = out.base
    out.block, out.array = base.block, base.array
    base.block = base.array = None
    out.base = None


def release_handle(data: DataNode) -> bool:
    """One storage (or copy-cache) hold on ``data`` is gone; True when it just died."""
    data.extern_rc -= 1
    if _is_dead(data):
        data.dead = True
        return True
    return False


def drain_releases(releases) -> list[DataNode]:
    """Apply every queued handle release of the deque ``releases`` (``release_handle`` on
    each, in one pass); the values that died."""
    dead = []
    while releases:
        data = releases.popleft()
        data.extern_rc -= 1
        if data.rc == 0 and data.extern_rc == 0 and data.state >= COMPLETED and not data.dead:
            data.dead = True
            dead.append(data)
    return dead


def delete_data(dag: PhysicalDag, data: DataNode) -> tuple[object, list[DataNode]]:
    """Remove a dead node; return its block (to free outside the lock; None when a write
    took its buffer over) and the cached copies that died with it."""
    del dag.data[data.node_id]
    block, data.block, data.array = data.block, None, None
    dead: list[DataNode] = []
    if data.copies:
        for copy in data.copies.values():
            copy.copy_of = None
            if release_handle(copy):
                dead.append(copy)
        data.copies = None
    return block, dead


def uncache_copy(data: DataNode) -> bool:
    """Drop the copy ``data`` from its source's copy cache (it failed, or a write takes its
    buffer); True when it just died."""
    source = data.copy_of
    if source is not None:
        if source.copies is not None and source.copies.get(data.device_id) is data:
            del source.copies[data.device_id]
        data.copy_of = None
        return release_handle(data)
    return False


def _wake(out: DataNode, ready: list) -> None:
    """``out`` is settled: its waiting consumers count it, its waiter (if any) wakes."""
    if out.waiting_ops is not None:
        for consumer in out.waiting_ops:
            consumer.n_waiting -= 1
            if consumer.n_waiting == 0:
                consumer.state = READY
                ready.append(consumer)
        out.waiting_ops = None
    if out.waiter is not None:
        out.waiter.set()


def _is_dead(data: DataNode) -> bool:
    return (data.rc == 0 and data.extern_rc == 0 and data.state >= COMPLETED
            and not data.dead)


__all__ = ["register_op", "release_hold", "start_run", "launch_op", "complete_op",
           "release_handle", "drain_releases", "delete_data", "uncache_copy", "begin_direct",
           "end_direct", "settled_value", "settled_write", "writable_now"]
