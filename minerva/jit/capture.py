"""Capturing what a function does: a hook at the op-building seam that notes each op
built while the function runs (its definition, attributes, the values it reads and writes
with their views, its device and the user's line).

Values are storages, told apart by where they come from: an **argument** of the function,
a **capture** (an array the function reads or writes that it did not make: a closure, a
global, a model's weights — held by identity), or a **tmp** (made by an op of the capture).
Views are kept per use: an op reads ``(value, view)``. A value made during the recording
by no op the seam told of (an op submitted to the engine directly) is refused with a
JitError: a replay would read the recorded value.

The storage of an argument that is a view is **movable**: a replay may get another view
of the same shape and strides at another offset (``minerva.jit.signature``). The capture
follows the views made from the arguments (the views the seam tells of): a use of a
movable storage through any other handle (a captured array on the same buffer, or a view
of one) makes it **untracked**, and the plan keeps to the recorded offsets.
"""
from __future__ import annotations

import contextlib

from minerva.builder import SEAM
from minerva.common.callsite import format_callsite, user_callsite
from minerva.common.errors import JitError
from minerva.dag.nodes import new_node_id
from minerva.ops.views import PSEUDO_OPS
from minerva.seeding import DRAWS

ARG, CAPTURE, TMP = "arg", "capture", "tmp"


class Value:
    """One storage seen by the capture."""

    __slots__ = ("vid", "kind", "index", "storage", "spec", "device")

    def __init__(self, vid: int, kind: str, index, storage):
        self.vid = vid
        self.kind = kind
        self.index = index
        self.storage = storage
        version = storage.current
        self.spec = version.spec
        self.device = version.device_id


class Step:
    """One captured op: ``ins`` and ``outs`` are ``(vid, view)`` pairs; ``write`` tells
    whether the outputs are written into existing values (``out=``, in place)."""

    __slots__ = ("op_def", "attrs", "ins", "outs", "write", "device", "created_at")

    def __init__(self, op_def, attrs, ins, outs, write, device, created_at):
        self.op_def = op_def
        self.attrs = attrs
        self.ins = ins
        self.outs = outs
        self.write = write
        self.device = device
        self.created_at = created_at


class Capture:
    """The seam hook of one recording: ``steps`` in issue order and ``values`` by id.

    ``_by_storage`` maps ``id(storage)`` to its Value; the Values hold their storages, so
    an id cannot be reused by another storage while the capture runs."""

    def __init__(self, args: list):
        self.values: list[Value] = []
        self.steps: list[Step] = []
        self.seeds: list = []
        self.movable: dict = {}   # vid -> its first argument's offset, for view arguments
        self.untracked: set = set()  # movable vids used through a handle of no argument
        self._derived: set = set()   # (vid, view) of the arguments' handles and views
        self._by_storage: dict = {}
        self._first_node = new_node_id()  # values with a larger id were made meanwhile
        for i, x in enumerate(args):
            if x is not None:
                value = self._value(x._storage, ARG, i)
                if x._view is not None:
                    self._derived.add((value.vid, x._view))
                    if value.index == i:  # the first argument on its storage
                        self.movable[value.vid] = x._view[2]

    @contextlib.contextmanager
    def listening(self):
        """A ``with`` block whose ops this capture notes (and the seeds drawn in it)."""
        SEAM.push(self)
        sink, DRAWS.sink = DRAWS.sink, self.seeds
        try:
            yield self
        finally:
            DRAWS.sink = sink
            SEAM.pop(self)

    def __call__(self, op_def, attrs, inputs, result, out) -> None:
        if op_def.name in PSEUDO_OPS:
            if op_def.name != "write_region":
                self._note_view(inputs[0], result)
            return
        targets = () if out is None else out if isinstance(out, tuple) else (out,)
        written = {id(t._storage) for t in targets}  # their current values are new
        ins = [(self._known(x._storage, id(x._storage) not in written).vid, x._view)
               for x in inputs]
        if out is not None:
            outs = [(self._known(t._storage, False).vid, t._view) for t in targets]
        else:
            results = result if isinstance(result, tuple) else (result,)
            outs = [(self._value(y._storage, TMP, None).vid, y._view) for y in results]
        self._note_uses(ins + outs)
        device = self.values[outs[0][0]].device
        self.steps.append(Step(op_def, attrs, ins, outs, out is not None, device,
                               user_callsite()))

    def _note_view(self, x, result) -> None:
        """Follow a view ``result`` made from ``x`` on a movable storage."""
        value = self._by_storage.get(id(x._storage))
        if value is None or value.vid not in self.movable:
            return
        if x._view is None or (value.vid, x._view) not in self._derived:
            self.untracked.add(value.vid)
        elif result._view is not None:
            self._derived.add((value.vid, result._view))

    def _note_uses(self, pairs) -> None:
        """Note the movable storages used through a handle made from no argument."""
        for vid, view in pairs:
            if vid in self.movable and (view is None or (vid, view) not in self._derived):
                self.untracked.add(vid)

    def _known(self, storage, read: bool = True) -> Value:
        """The Value of ``storage``, a new capture if unseen. A capture first seen read (not
        written by the op just built) must hold a value made before the recording: one
        made since, by no op the capture saw, was made outside the seam and would be
        replayed stale."""
        value = self._by_storage.get(id(storage))
        if value is None:
            if read and storage.current.node_id > self._first_node:
                raise JitError(_unseen_message())
            value = self._value(storage, CAPTURE, None)
        return value

    def _value(self, storage, kind: str, index) -> Value:
        value = self._by_storage.get(id(storage))
        if value is None:
            value = Value(len(self.values), kind, index, storage)
            self.values.append(value)
            self._by_storage[id(storage)] = value
        return value

    def ref(self, x) -> tuple:
        """``(vid, view)`` of a handle the function returns (a capture if unseen)."""
        pair = (self._known(x._storage).vid, x._view)
        self._note_uses([pair])
        return pair


def _unseen_message() -> str:
    return (f"an array used at {format_callsite(user_callsite())} was made while the jitted "
            "function was being recorded, but not by an op the recording sees (it was "
            "submitted outside the op-building seam, minerva.builder); a replay could only "
            "reuse the recorded value")
