"""The Recorder: a hook listener that keeps one small tuple per event.

Every handler builds one tuple and appends it to a bounded deque. ``deque.append`` is
atomic, so the scheduler, devices and stores may call the handlers from any thread, with
or without their own locks held, and the Recorder takes no lock at all.

The hot path stays cheap in three ways. Events are few: ``op_started`` only notes the
start time on the op node (its ``trace`` slot, there for the tracer) and ``op_finished``
records the whole op at once — name, callsite, creation, start and end times, input ids,
output shapes — so an op costs one tuple, plus one per allocation and free. Tuples are
flat and hold only ints, strings and dtypes, which the garbage collector stops tracking
the first time it sees them: keeping node objects instead would hold every op's graph
alive until the trace stops, and the full collections over that growing heap would cost
more than the events themselves (nested tuples, likewise, survive into older
generations). Only the rare ``op_poisoned`` keeps its op node. And some events are not
recorded at all: ``op_created`` (the op node carries ``t_created``), ``op_ready`` (the
converter derives it from the producers' end times) and ``data_deleted`` (the memory
counters show the frees).

The deque keeps the last ``max_events`` events: a long run keeps its most recent part and
memory stays bounded.
"""
from __future__ import annotations

import collections
import threading
import time

FINISHED, POISONED, ALLOC, FREE, DISPATCH, INNER, HOST = range(7)
"""Tags of the recorded tuples (the first field of each).

``(FINISHED, node_id, name, device_id, track, t_created, t_start, t_end, error, file,
line, n_inputs, *input_ids, then per output: node_id, storage_id, version, dtype, ndim,
*shape)``;
``t_start`` is None for an op that started before the recording. The other events are
listed by their handler.
"""

MAX_EVENTS = 2_000_000
"""Default bound of a recording (about 600,000 ops)."""

NO_CALLSITE = ("?", 0)

_now = time.perf_counter_ns
_thread_id = threading.get_ident


class Recorder:
    """Listens on a HookBus and appends ``(tag, ...)`` tuples to ``events``.

    Holds no lock: appends are atomic and ``snapshot()`` copies the deque. Events that
    arrive after ``close()`` (from a thread that fetched a handler just before the
    unsubscribe) are ignored by snapshots taken before them.
    """

    def __init__(self, max_events: int = MAX_EVENTS):
        self.t_start = _now()
        self.t_stop: int | None = None
        self.max_events = max_events
        self.events: collections.deque = collections.deque(maxlen=max_events)
        self._append = self.append_finished = self.events.append
        """``append_finished(record)``: the C lean path's own op records
        (``HookBus.lean_trace``): the fields of the tuple ``op_finished`` makes, in
        a sequence the garbage collector does not count, made a tuple by ``snapshot``."""
        self._kind_names: dict = {}

    # ---- hook handlers (hot path: one tuple, one append) ------------------------------

    def op_started(self, op, device_id, track, t_ns) -> None:
        """A device began ``op``: note the time on the node until it finishes."""
        op.t_started = t_ns

    def op_finished(self, op, device_id, track, t_ns, error) -> None:
        """A device ended ``op`` (``error`` set when it raised): one flat tuple. The usual
        op (one output, one or two inputs) builds it in one expression."""
        inputs, outputs = op.inputs, op.outputs
        file, line = op.created_at or NO_CALLSITE
        n_inputs = len(inputs)
        if len(outputs) == 1 and 0 < n_inputs < 3:
            data = outputs[0]
            spec = data.spec
            shape = spec.shape
            ids = (inputs[0].node_id,) if n_inputs == 1 else \
                (inputs[0].node_id, inputs[1].node_id)
            self._append((FINISHED, op.node_id, op.op_def.name, device_id, track,
                          op.t_created, op.t_started, t_ns, error, file, line, n_inputs,
                          *ids, data.node_id, data.storage_id, data.version, spec.dtype,
                          len(shape), *shape))
            return
        event = [FINISHED, op.node_id, op.op_def.name, device_id, track, op.t_created,
                 op.t_started, t_ns, error, file, line, n_inputs]
        for data in inputs:
            event.append(data.node_id)
        for data in outputs:
            spec = data.spec
            shape = spec.shape
            event += (data.node_id, data.storage_id, data.version, spec.dtype, len(shape),
                      *shape)
        self._append(tuple(event))

    def op_poisoned(self, op, error) -> None:
        """``op`` was skipped because an input failed with ``error``."""
        self._append((POISONED, op, _now(), error))

    def mem_alloc(self, device_id, block, in_use_bytes) -> None:
        """A store handed out a block; ``in_use_bytes`` is its new total."""
        self._append((ALLOC, device_id, in_use_bytes, _now()))

    def mem_free(self, device_id, block, in_use_bytes) -> None:
        """A store took a block back; ``in_use_bytes`` is its new total."""
        self._append((FREE, device_id, in_use_bytes, _now()))

    def inner_op(self, device_id, parent_id, name, created_at, t0_ns, t1_ns) -> None:
        """A kernel ran inside op ``parent_id`` (a jit replay's step)."""
        file, line = created_at or NO_CALLSITE
        self._append((INNER, device_id, parent_id, name, file, line, t0_ns, t1_ns))

    def host_op(self, name, device_id, created_at, t0_ns, t1_ns) -> None:
        """The host fallback ran NumPy's ``name`` on the calling thread."""
        file, line = created_at or NO_CALLSITE
        self._append((HOST, name, device_id, file, line, t0_ns, t1_ns, _thread_id()))

    def dispatch(self, kind, node, t0_ns, t1_ns) -> None:
        """A dispatcher thread handled one task (one begun before the recording is cut
        at its start)."""
        if t0_ns < self.t_start:
            t0_ns = self.t_start
        name = self._kind_names.get(kind)
        if name is None:
            name = self._kind_names[kind] = str(getattr(kind, "name", kind))
        self._append((DISPATCH, name, getattr(node, "node_id", None), t0_ns, t1_ns,
                      _thread_id()))

    # ---- control ------------------------------------------------------------------------

    def close(self) -> None:
        """Mark the end of the recording (call after unsubscribing)."""
        self.t_stop = _now()

    @property
    def full(self) -> bool:
        """Whether the bound was reached (older events may have been dropped)."""
        return len(self.events) >= self.max_events

    def snapshot(self) -> list:
        """A copy of the events recorded so far, each a tuple."""
        return [event if type(event) is tuple else tuple(event) for event in self.events]
