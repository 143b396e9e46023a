"""What autograd records: one ``Node`` per recorded op, linked to its inputs' nodes.

Recording happens at the op-building seam (``builder.SEAM``): right after an op is built
on the user's thread, if recording is on and an input needs a gradient, a Node is made
and each output handle gets ``_grad_info = Edge(node, index, version)``. Attached
variables carry a ``Leaf`` (their gradient buffer); a result whose values are not floating
point carries a ``Cut`` (the op's name, for the error). Nodes hold their parents' edges and
the values their gradient rule reads, and nothing holds a node but the handles made from it
and the nodes made after it: dropping the last handle of a result frees its recording at
once (no reference cycle: saved values are fresh handles without gradient info).

A saved value remembers the version it had; if a write replaced it before ``backward``,
the rule cannot run, and backward raises naming the line of that write. An edge remembers
its storage's version number too: a handle whose memory was written through another view
is refused when recorded again (see doc/autograd.md).
"""
from __future__ import annotations

import itertools
import threading

import numpy as np

from minerva.common.callsite import format_callsite
from minerva.common.errors import MinervaError
from minerva.narray import NArray
from minerva.ops.registry import NO_GRADIENT

_next_seq = itertools.count(1).__next__


class AutogradError(MinervaError):
    """A gradient cannot be computed as asked (an op without a gradient, a saved value
    overwritten by a write, a freed graph, an in-place write on a leaf)."""


class Leaf:
    """An attached variable: its gradient buffer and how backward writes it."""

    __slots__ = ("grad", "grad_req", "__weakref__")

    def __init__(self, grad, grad_req: str):
        self.grad = grad
        self.grad_req = grad_req


class Edge:
    """Output ``index`` of ``node``: where a handle's value came from; ``version`` is the
    version number its storage had then (a write through another view of the same memory
    makes the handle's value differ from what was recorded)."""

    __slots__ = ("node", "index", "version")

    def __init__(self, node, index: int, version: int = -1):
        self.node = node
        self.index = index
        self.version = version

    def check(self, x: NArray, writing: bool = False) -> None:
        """AutogradError when ``x`` (a handle with this edge) was written since the edge
        was made (other than by the write being recorded now, when ``writing``)."""
        current = x._storage.current
        if self.version >= 0 and not 0 <= current.version - self.version <= writing:
            raise AutogradError(
                f"an array computed by '{self.node.name}' (at "
                f"{format_callsite(self.node.created_at)}) was later written through "
                "another view of its memory (last at "
                f"{format_callsite(current.created_at)}); autograd follows writes made "
                "through the array itself only: take views after the write, or write into "
                "a copy")


class Cut:
    """The gradient info of a recorded op's result that gradients cannot flow through (a
    bool or integer result: comparisons, argmax): it names the op for the error."""

    __slots__ = ("name", "created_at")

    def __init__(self, name: str, created_at):
        self.name = name
        self.created_at = created_at

    def error(self, what: str) -> AutogradError:
        """The error for asking a gradient through this result."""
        return AutogradError(f"{what}: this array is the result of '{self.name}' (at "
                             f"{format_callsite(self.created_at)}), which has no gradient "
                             "(its values are not floating point)")


class Saved:
    """A value a gradient rule reads, and the version it had when it was recorded
    (``version`` None: the write being recorded overwrote it already)."""

    __slots__ = ("handle", "version", "number")

    def __init__(self, x: NArray, overwritten: bool = False):
        self.handle = NArray(x._storage, x._view, x._spec)  # without gradient info
        current = x._storage.current
        self.version = None if overwritten else current
        self.number = current.version - overwritten

    def get(self, op_name: str) -> NArray:
        """The saved value; AutogradError when a write replaced it since."""
        current = self.handle._storage.current
        if current is not self.version:
            n = current.version - self.number
            raise AutogradError(
                f"a value that the gradient of '{op_name}' needs was overwritten by "
                f"{n} in-place write{'s' if n > 1 else ''} after it was recorded (the last "
                f"at {format_callsite(current.created_at)}); write into a copy, or make "
                "the update outside autograd.record()")
        return self.handle


class Node:
    """One recorded op: its definition, attributes, parents (an Edge or Leaf per input, or
    None), the specs it saw, what its rule saved, and where it ran."""

    __slots__ = ("op_def", "attrs", "parents", "in_specs", "out_specs", "saved_inputs",
                 "saved_outputs", "device", "seq", "created_at", "__weakref__")

    def __init__(self, op_def, attrs, parents, inputs, outputs, device: int, created_at):
        vjp = op_def.vjp or NO_GRADIENT
        self.op_def = op_def
        self.attrs = attrs
        self.parents = parents
        self.in_specs = [x._spec for x in inputs]
        self.out_specs = [y._spec for y in outputs]
        self.saved_inputs = [Saved(inputs[i]) if i in vjp.save_inputs else None
                             for i in range(len(inputs))]
        self.saved_outputs = [Saved(outputs[i]) if i in vjp.save_outputs else None
                              for i in range(len(outputs))]
        self.device = device
        self.seq = _next_seq()
        self.created_at = created_at

    def overwritten_inputs(self, inputs, outputs) -> None:
        """For a write (``x *= y``): a saved input that shares storage with a written
        output already holds the new value, so the rule cannot read the old one: it is
        marked overwritten (backward raises naming the write)."""
        written = {id(y._storage) for y in outputs}
        for i, saved in enumerate(self.saved_inputs):
            if saved is not None and id(inputs[i]._storage) in written:
                self.saved_inputs[i] = Saved(inputs[i], overwritten=True)

    @property
    def name(self) -> str:
        """The recorded op's name."""
        return self.op_def.name

    def release(self) -> None:
        """Drop what the rule saved (backward built this node's gradient ops)."""
        self.saved_inputs = self.saved_outputs = None


class RecordState(threading.local):
    """Per thread: whether ops are recorded, and whether in training mode."""

    recording: bool = False
    training: bool = False


STATE = RecordState()


def needs_grad(info) -> bool:
    """Whether a handle with ``_grad_info`` ``info`` takes part in gradients."""
    if info is None or isinstance(info, Cut):
        return False
    return info.grad_req != "null" if isinstance(info, Leaf) else True


def differentiable(dtype) -> bool:
    """Gradients flow through floating and complex values only."""
    return np.dtype(dtype).kind in "fc"
