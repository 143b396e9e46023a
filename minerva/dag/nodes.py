"""Op and data nodes of the physical DAG, with their runtime info.

Runtime info lives on the nodes themselves (slots, for speed). The scheduler's lock guards
every field marked (L); fields marked (D) are written by the device running the producer
before it reports completion, and read only after it.
"""
from __future__ import annotations

import itertools

from minerva.common.callsite import format_callsite

PENDING, READY, RUNNING, COMPLETED, FAILED = range(5)
STATE_NAMES = ("pending", "ready", "running", "completed", "failed")

_next_id = itertools.count(1).__next__


def new_node_id() -> int:
    """A process-wide unique node id."""
    return _next_id()


class OpNode:
    """An operation: an op definition applied to input data nodes, producing outputs.

    ``n_waiting`` (L) counts inputs not yet computed plus one hold while the op is being
    registered, so the op cannot fire half-built. ``error`` is set when it fails.
    ``t_created`` is the ``perf_counter_ns`` of its registration; ``trace`` is a slot for a
    trace recorder (the start time it notes between ``op_started`` and ``op_finished``).
    """

    __slots__ = ("node_id", "op", "attrs", "inputs", "outputs", "device_id", "created_at",
                 "state", "n_waiting", "error", "priority", "t_created", "trace")

    def __init__(self, op, attrs: dict, inputs: list, device_id: int, created_at):
        self.node_id = new_node_id()
        self.op = op
        self.attrs = attrs
        self.inputs = inputs
        self.outputs: list[DataNode] = []
        self.device_id = device_id
        self.created_at = created_at
        self.state = PENDING
        self.n_waiting = 1
        self.error = None
        self.priority = op.priority
        self.t_created = 0
        self.trace = None

    @property
    def name(self) -> str:
        """The op's registered name."""
        return self.op.name

    @property
    def where(self) -> str:
        """``file.py:line`` of the user's line that created this op."""
        return format_callsite(self.created_at)

    def __repr__(self) -> str:
        return (f"OpNode({self.node_id} {self.op.name} dev={self.device_id} "
                f"{STATE_NAMES[self.state]} waiting={self.n_waiting} at {self.where})")


class DataNode:
    """An array value: one producer op, any number of consumer ops.

    ``rc`` (L) counts consumer ops not yet finished; ``extern_rc`` (L) counts live NArray
    handles plus holds from a copy cache. ``waiting_ops`` (L) are consumers created before
    this value was computed. ``copies`` (L) maps a device id to this value's copy there.
    ``block``/``array`` (D) are its storage once computed.
    """

    __slots__ = ("node_id", "spec", "device_id", "producer", "state", "rc", "extern_rc",
                 "waiting_ops", "copies", "copy_of", "block", "array", "error", "waiter",
                 "dead", "created_at", "__weakref__")

    def __init__(self, spec, device_id: int, producer: OpNode, created_at):
        self.node_id = new_node_id()
        self.spec = spec
        self.device_id = device_id
        self.producer = producer
        self.state = PENDING
        self.rc = 0
        self.extern_rc = 1
        self.waiting_ops: list[OpNode] | None = None
        self.copies = None
        self.copy_of = None
        self.block = None
        self.array = None
        self.error = None
        self.waiter = None
        self.dead = False
        self.created_at = created_at

    @property
    def done(self) -> bool:
        """Whether the value is computed or failed."""
        return self.state >= COMPLETED

    def __str__(self) -> str:
        return f"{self.spec.dtype} {self.spec.shape} created at {format_callsite(self.created_at)}"

    def __repr__(self) -> str:
        return (f"DataNode({self.node_id} {self.spec.dtype}{list(self.spec.shape)} "
                f"dev={self.device_id} {STATE_NAMES[self.state]} rc={self.rc} "
                f"extern_rc={self.extern_rc})")
