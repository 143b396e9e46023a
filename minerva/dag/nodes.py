"""Op nodes, data nodes (versions) and storages of the physical DAG, with their runtime info.

A **version** (``DataNode``) is an immutable value made by one op. A **storage** is the
identity of one buffer's contents over time: it holds its ``current`` version; a write makes
a new version that takes over the buffer of the one before it. Handles (``NArray``) hold a
storage plus a view. See doc/design.md, "Mutation".

Runtime info lives on the nodes themselves (slots, for speed). The scheduler's lock guards
every field marked (L); fields marked (D) are written by the device running the producer
before it reports completion, and read only after it.
"""
from __future__ import annotations

import itertools

from minerva.common.callsite import format_callsite

PENDING, READY, RUNNING, LAUNCHED, COMPLETED, FAILED = range(6)
STATE_NAMES = ("pending", "ready", "running", "launched", "completed", "failed")
"""States of ops and data nodes, in order. ``LAUNCHED`` (between running and completed) is
reported only by devices that order their own work (``Device.launches_ahead``: a GPU's
streams): the op's work is queued and ordered ahead of anything that device queues later,
but not yet done. Work queued later on the *same* device may use its outputs; everything
else (the host, other devices, frees, writes over what it reads) waits for COMPLETED."""

new_node_id = itertools.count(1).__next__
"""A process-wide unique node id (a call of a C function: cheap on the hot path)."""


class OpNode:
    """An operation: an op definition applied to input versions, producing versions.

    ``inputs[:n_args]`` are the kernel's arguments, read through ``views`` (None, or one
    view or None per argument); the inputs after them are the versions the op overwrites
    (one per written output, ``DataNode.base``), written through ``out_views`` (None, or
    one view or None per output). A view is ``(shape, strides, offset)`` in bytes. ``n_waiting`` (L) counts inputs not yet
    computed, earlier readers of an overwritten version still pending, plus one hold while
    the op is being registered, so it cannot fire half-built. ``error`` is set when it
    fails. ``t_created`` is the ``perf_counter_ns`` of its registration and ``t_started``
    the start time a trace recorder notes between ``op_started`` and ``op_finished``.
    ``ahead`` (L) is set when it started while an input was only launched (not completed):
    if that input fails later, this op fails with it when it completes. ``errstate`` is
    the floating-point error state of the user's thread when it was issued
    (``common.fp_errors.capture``; None for the copies the engine inserts), which its
    kernel runs under.
    """

    __slots__ = ("node_id", "op_def", "attrs", "inputs", "n_args", "views", "out_views",
                 "outputs", "device_id", "created_at", "state", "n_waiting", "error",
                 "priority", "t_created", "t_started", "ahead", "errstate")

    def __init__(self, op_def, attrs: dict, inputs: list, device_id: int, created_at):
        self.node_id = new_node_id()
        self.op_def = op_def
        self.attrs = attrs
        self.inputs = inputs
        self.n_args = len(inputs)
        self.views = None
        self.out_views = None
        self.outputs: list[DataNode] = []
        self.device_id = device_id
        self.created_at = created_at
        self.state = PENDING
        self.n_waiting = 1
        self.error = None
        self.priority = op_def.priority
        self.t_created = 0
        self.t_started = None
        self.ahead = False
        self.errstate = None

    @property
    def name(self) -> str:
        """The op's registered name."""
        return self.op_def.name

    @property
    def where(self) -> str:
        """``file.py:line`` of the user's line that created this op."""
        return format_callsite(self.created_at)

    def __repr__(self) -> str:
        return (f"OpNode({self.node_id} {self.op_def.name} dev={self.device_id} "
                f"{STATE_NAMES[self.state]} waiting={self.n_waiting} at {self.where})")


class DataNode:
    """A version: one producer op, any number of consumer ops.

    ``rc`` (L) counts consumer ops not yet finished; ``extern_rc`` (L) counts the holds of a
    storage whose current version this is, plus holds from a copy cache. ``waiting_ops``
    (L) are consumers created before this value was computed. ``copies`` (L) maps a device
    id to this value's copy there. ``base`` is the version whose buffer this one takes over
    (None for a fresh buffer); ``writer`` (L) the op registered to overwrite this version's
    buffer, which waits until only its own ``writer_refs`` reads are left in ``rc``.
    ``storage_id`` and ``version`` name it (``storage_id@version``). ``block``/``array``
    (D) are its buffer once computed.
    """

    __slots__ = ("node_id", "spec", "device_id", "producer", "state", "rc", "extern_rc",
                 "waiting_ops", "copies", "copy_of", "base", "writer", "writer_refs",
                 "storage_id", "version", "block", "array", "error", "waiter", "dead",
                 "created_at", "__weakref__")

    def __init__(self, spec, device_id: int, producer: OpNode, created_at, base=None):
        self.node_id = node_id = new_node_id()
        self.spec = spec
        self.device_id = device_id
        self.producer = producer
        self.state = PENDING
        self.rc = 0
        self.extern_rc = 1
        self.waiting_ops: list[OpNode] | None = None
        self.copies = None
        self.copy_of = None
        self.base = base
        self.writer = None
        self.writer_refs = 0
        if base is None:
            self.storage_id, self.version = node_id, 0
        else:
            self.storage_id, self.version = base.storage_id, base.version + 1
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

    @property
    def label(self) -> str:
        """``storage@version``: which array this is and how many writes it has seen."""
        return f"{self.storage_id}@{self.version}"

    def describe(self) -> str:
        """For people: dtype, shape, where it was created, and its version label."""
        spec = self.spec
        return (f"array {spec.dtype} {spec.shape} created at "
                f"{format_callsite(self.created_at)} (value {self.label})")

    def __str__(self) -> str:
        return self.describe()

    def __repr__(self) -> str:
        return (f"DataNode({self.node_id} {self.label} {self.spec.dtype}"
                f"{list(self.spec.shape)} dev={self.device_id} {STATE_NAMES[self.state]} "
                f"rc={self.rc} extern_rc={self.extern_rc})")


class Storage:
    """One buffer's identity over time: ``current`` (L) is its latest version.

    Handles hold a storage; views of one array share it. When the last handle goes, the
    storage's finalizer hands its current version to its ``engine``'s lock-free release
    queue, so the value is freed once its pending readers finish.
    """

    __slots__ = ("current", "engine", "__weakref__")

    def __init__(self, current: DataNode, engine):
        self.current = current
        self.engine = engine

    def __del__(self):
        try:
            self.engine.release(self.current)
        except Exception:  # interpreter shutdown: modules may be gone
            pass
