"""Turn the Recorder's raw tuples into per-op records, memory samples and dispatcher spans.

Runs once, when a trace stops. The events hold plain values (see ``recorder``); only a
poisoned op's node is read here, duck-typed: ``node_id``, ``name``, ``device_id``,
``inputs``, ``outputs``, ``where`` and ``t_created`` (also of the live ops at the stop).
An input is described by the traced op that produced it, else by its node if it is
still in the DAG, else by its id alone.
"""
from __future__ import annotations

import math

from minerva.common.callsite import format_callsite
from minerva.tracing import recorder as R


class OpRecord:
    """What the trace knows of one op node; times are ns since the recording began."""

    __slots__ = ("node_id", "name", "device_id", "track", "created_at", "inputs",
                 "outputs", "deps", "t_created", "t_ready", "t_start", "t_end", "error",
                 "poisoned_by", "t_poisoned")

    def __init__(self, node_id: int, name: str, device_id: int, created_at: str,
                 inputs: list, outputs: list):
        self.node_id = node_id
        self.name = name
        self.device_id = device_id
        self.created_at = created_at
        self.inputs = inputs      # value dicts (see ``value``); some hold only id, label
        self.outputs = outputs
        self.track = None
        self.deps: list = []
        self.t_created = self.t_ready = self.t_start = self.t_end = None
        self.error = self.poisoned_by = self.t_poisoned = None

    @classmethod
    def of_node(cls, op) -> "OpRecord":
        """The record of a live op node (read duck-typed)."""
        return cls(op.node_id, op.name, op.device_id, getattr(op, "where", "?"),
                   [value_of_node(d) for d in op.inputs],
                   [value_of_node(d) for d in op.outputs])

    @property
    def nbytes(self) -> int:
        """Bytes of the op's outputs (for a copy: the bytes moved)."""
        return sum(out.get("nbytes", 0) for out in self.outputs)

    @property
    def ran(self) -> bool:
        """Whether a device started this op while the trace was on."""
        return self.t_start is not None


_DTYPE_NAMES: dict = {}


def value(node_id: int, device_id: int, dtype, shape, version: str | None = None) -> dict:
    """A value's description: ``id``, ``shape``, ``dtype``, ``nbytes``, ``device``,
    ``version`` (``storage@k``: which array, after how many writes) and ``label``
    (``#id (storage@k) dtype[shape] @device``)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype)
    dims = ", ".join(map(str, shape))
    tag = "" if version is None else f" ({version})"
    return {"id": node_id, "shape": list(shape), "dtype": name,
            "nbytes": math.prod(shape) * dtype.itemsize, "device": device_id,
            "version": version, "label": f"#{node_id}{tag} {name}[{dims}] @{device_id}"}


def value_of_node(data) -> dict:
    """The description of a data node."""
    return value(data.node_id, data.device_id, data.spec.dtype, data.spec.shape,
                 getattr(data, "label", None))


def format_error(error) -> str:
    """``Type: message`` of an exception (its first line)."""
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text}"


class Recording:
    """The converted trace: ops by node id, memory samples per device, dispatcher spans,
    and the recording's time span (all times in ns from ``t0``)."""

    def __init__(self, t0: int, t_stop: int):
        self.t0 = t0
        self.duration = t_stop - t0
        self.ops: dict[int, OpRecord] = {}
        self.memory: list[tuple[int, int, int]] = []     # (t, device_id, in_use_bytes)
        self.dispatch: list[tuple] = []                  # (t0, t1, thread, kind, node id)
        self.pending: list[int] = []                     # t_created of ops left at stop
        self.inner: list[tuple] = []   # (t0, t1, device_id, parent id, name, "file:line")
        self.host: list[tuple] = []    # (t0, t1, name, device_id, "file:line", thread)

    def ran_ops(self) -> list[OpRecord]:
        """Ops that a device started, by start time."""
        return sorted((r for r in self.ops.values() if r.ran), key=lambda r: r.t_start)


def convert(events: list, t_start: int, t_stop: int, live_ops=(),
            live_data=None) -> Recording:
    """A Recording of the raw ``events`` taken between ``t_start`` and ``t_stop``.

    Ops get a record from a FINISHED or POISONED event. ``live_ops`` (the op nodes still
    in the DAG at the stop) add the ops still running, as unfinished, and the creation
    times of the others; ``live_data`` (data nodes by id) describes inputs made before
    the trace.
    """
    starts = [ev[6] for ev in events if ev[0] == R.FINISHED and ev[6] is not None]
    t0 = min([t_start] + starts)
    rec = Recording(t0, t_stop)
    for ev in events:
        _HANDLERS[ev[0]](rec, ev, t0)
    _add_live(rec, live_ops, t_start)
    _link_inputs(rec, live_data or {})
    return rec


def _add_live(rec: Recording, live_ops, t_start: int) -> None:
    """Ops running at the stop become unfinished records (``op.t_started`` holds the start
    the recorder noted); the creation times of the other pending ones are kept."""
    for op in live_ops:
        started = getattr(op, "t_started", None)
        if op.node_id in rec.ops:  # finished, its completion not yet applied
            continue
        if started is not None and started >= t_start:
            record = rec.ops[op.node_id] = OpRecord.of_node(op)
            record.t_created = _relative(op.t_created, rec.t0)
            record.t_start, record.track = started - rec.t0, _track_of(rec, op.device_id)
        elif op.t_created >= t_start:
            rec.pending.append(op.t_created - rec.t0)


def _relative(t_ns, t0: int):
    return None if t_ns is None else t_ns - t0


def _on_finished(rec: Recording, ev: tuple, t0: int) -> None:
    (_tag, node_id, name, device_id, track, t_created, t_start, t_end, error, file, line,
     n_in) = ev[:12]
    inputs = [{"id": i, "label": f"#{i}"} for i in ev[12:12 + n_in]]
    outputs, i = [], 12 + n_in
    while i < len(ev):
        out_id, storage_id, version, dtype, ndim = ev[i:i + 5]
        outputs.append(value(out_id, device_id, dtype, ev[i + 5:i + 5 + ndim],
                             f"{storage_id}@{version}"))
        i += 5 + ndim
    where = "?" if file == "?" else format_callsite((file, line))
    record = rec.ops[node_id] = OpRecord(node_id, name, device_id, where, inputs, outputs)
    record.track = str(track)
    record.t_created = _relative(t_created, t0)
    record.t_start = t_start - t0 if t_start is not None else 0
    record.t_end = t_end - t0
    if error is not None:
        record.error = format_error(error)


def _on_poisoned(rec: Recording, ev: tuple, t0: int) -> None:
    op = ev[1]
    record = rec.ops[op.node_id] = OpRecord.of_node(op)
    record.t_created = _relative(getattr(op, "t_created", None), t0)
    record.t_poisoned = ev[2] - t0
    record.poisoned_by = getattr(ev[3], "node_id", None)
    record.error = format_error(ev[3])


def _on_memory(rec: Recording, ev: tuple, t0: int) -> None:
    rec.memory.append((ev[3] - t0, ev[1], ev[2]))


def _on_dispatch(rec: Recording, ev: tuple, t0: int) -> None:
    _tag, kind, node_id, start, end, thread = ev
    rec.dispatch.append((start - t0, end - t0, thread, kind, node_id))


def _on_inner(rec: Recording, ev: tuple, t0: int) -> None:
    _tag, device_id, parent_id, name, file, line, start, end = ev
    where = "?" if file == "?" else format_callsite((file, line))
    rec.inner.append((start - t0, end - t0, device_id, parent_id, name, where))


def _on_host(rec: Recording, ev: tuple, t0: int) -> None:
    _tag, name, device_id, file, line, start, end, thread = ev
    where = "?" if file == "?" else format_callsite((file, line))
    rec.host.append((start - t0, end - t0, name, device_id, where, thread))


_HANDLERS = {R.FINISHED: _on_finished, R.POISONED: _on_poisoned, R.ALLOC: _on_memory,
             R.FREE: _on_memory, R.DISPATCH: _on_dispatch, R.INNER: _on_inner,
             R.HOST: _on_host}


def _track_of(rec: Recording, device_id: int) -> str:
    """A track of ``device_id`` that ops ran on (the device reports no track at start)."""
    tracks = (r.track for r in rec.ops.values() if r.device_id == device_id and r.track)
    return next(tracks, "running at stop")


def _link_inputs(rec: Recording, live_data: dict) -> None:
    """Fill each op's ``deps`` (the producer op id of each input, None if unseen),
    describe its inputs, and derive when it became ready (its last input computed)."""
    producer, values = {}, {}
    for record in rec.ops.values():
        for out in record.outputs:
            producer[out["id"]] = record
            values[out["id"]] = out
    for record in rec.ops.values():
        record.inputs = [values.get(inp["id"]) or _live_value(live_data, inp)
                         for inp in record.inputs]
        sources = [producer.get(inp["id"]) for inp in record.inputs]
        record.deps = [None if s is None else s.node_id for s in sources]
        if record.t_created is not None:
            ends = [s.t_end for s in sources if s is not None and s.t_end is not None]
            record.t_ready = max([record.t_created] + ends)


def _live_value(live_data: dict, inp: dict) -> dict:
    node = live_data.get(inp["id"])
    return inp if node is None else value_of_node(node)
