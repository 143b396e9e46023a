"""A hook bus: the scheduler, devices and stores announce events; listeners (the trace
recorder) subscribe. With no listener every event is a call of a shared no-op function.

Events and their arguments (times are ``time.perf_counter_ns()`` values):

- ``op_created(op)``, ``op_ready(op)``: an op node entered the DAG / had all inputs ready.
- ``op_started(op, device_id, track, t_ns)``: a device began running ``op`` on ``track``
  (a worker or stream name).
- ``op_finished(op, device_id, track, t_ns, error)``: it ended; ``error`` is None on success.
- ``op_poisoned(op, error)``: the op was skipped because an input had failed.
- ``data_deleted(data)``: a dead data node left the DAG.
- ``mem_alloc(device_id, block, in_use_bytes)``, ``mem_free(device_id, block,
  in_use_bytes)``: a store handed out or took back a block.
- ``dispatch(kind, node, t0_ns, t1_ns)``: a dispatcher thread handled one task.
- ``inner_op(device_id, parent_id, name, created_at, t0_ns, t1_ns)``: a kernel run inside
  op node ``parent_id`` (a step of a jit replay on a CPU device) took ``t0_ns..t1_ns``.
- ``host_op(name, device_id, created_at, t0_ns, t1_ns)``: the host fallback ran NumPy's
  ``name`` (``numpy.fft.fft``) on the calling thread for the user's line ``created_at``
  (``(file, line)``), its results going to ``device_id``.
"""
from __future__ import annotations

EVENTS = ("op_created", "op_ready", "op_started", "op_finished", "op_poisoned",
          "data_deleted", "mem_alloc", "mem_free", "dispatch", "inner_op", "host_op")
NODE_EVENTS = ("op_created", "op_ready", "data_deleted")


def _noop(*_args) -> None:
    return None


def _fan_out(functions):
    def call_all(*args):
        for function in functions:
            function(*args)
    return call_all


class HookBus:
    """Routes each event to the listeners that define a method of the event's name.
    Its fields are slots (the C lean path reads ``lean_trace`` by offset)."""

    __slots__ = ("_listeners", "active", "wants_nodes", "lean_trace") + EVENTS

    def __init__(self):
        self._listeners: list = []
        self.active = False
        """Whether any listener is subscribed (a plain attribute: hot paths test it before
        they announce an event)."""
        self.wants_nodes = False
        """Whether a listener follows nodes through the DAG (``op_created``, ``op_ready``
        or ``data_deleted``): then every op gets a node. A listener of the other events
        alone (the trace) lets tiny ops run without one, announced with
        ``op_started``/``op_finished`` only (such an op never has a failed input, so it
        is never poisoned)."""
        self.lean_trace = False
        """What the C lean path does about listeners, in one attribute: False — nobody
        listens; a function — the one listener is a Recorder following no nodes, and
        its ``append_finished`` takes the path's own op records; None — somebody else
        listens, and the path leaves its ops to Python."""
        self._bind()

    def subscribe(self, listener) -> None:
        """Start sending events to ``listener``."""
        self._listeners.append(listener)
        self._bind()

    def unsubscribe(self, listener) -> None:
        """Stop sending events to ``listener`` (no error if it was not subscribed)."""
        if listener in self._listeners:
            self._listeners.remove(listener)
        self._bind()

    def _bind(self) -> None:
        self.active = bool(self._listeners)
        self.wants_nodes = any(hasattr(lst, event) for lst in self._listeners
                               for event in NODE_EVENTS)
        only = self._listeners[0] if len(self._listeners) == 1 else None
        self.lean_trace = False if not self._listeners else None if self.wants_nodes \
            else getattr(only, "append_finished", None)
        for event in EVENTS:
            functions = [getattr(lst, event) for lst in self._listeners if hasattr(lst, event)]
            if not functions:
                bound = _noop
            elif len(functions) == 1:
                bound = functions[0]
            else:
                bound = _fan_out(functions)
            setattr(self, event, bound)


NULL_HOOKS = HookBus()
"""A bus nobody subscribes to, for components built without one."""
