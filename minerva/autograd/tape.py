"""What autograd records: one ``Node`` per recorded op, linked to its inputs' nodes.

Recording happens at the op-building seam (``builder.SEAM``): right after an op is built
on the user's thread, if recording is on and an input needs a gradient, a Node is made
and each output handle gets ``_grad_info = Edge(node, index)``. Attached variables carry a
``Leaf`` (their gradient buffer). Nodes hold their parents' edges and the values their
gradient rule reads, and nothing holds a node but the handles made from it and the nodes
made after it: dropping the last handle of a result frees its recording at once (no
reference cycle: saved outputs are fresh handles without gradient info).

A saved value remembers the version it had; if a write replaced it before ``backward``,
the rule cannot run, and backward raises naming the line of that write.
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
    """Output ``index`` of ``node``: where a handle's value came from."""

    __slots__ = ("node", "index")

    def __init__(self, node, index: int):
        self.node = node
        self.index = index


class Saved:
    """A value a gradient rule reads, and the version it had when it was recorded."""

    __slots__ = ("handle", "version")

    def __init__(self, x: NArray, fresh: bool):
        self.handle = NArray(x._storage, x._view, x._spec) if fresh else x
        self.version = x._storage.current

    def get(self, op_name: str) -> NArray:
        """The saved value; AutogradError when a write replaced it since."""
        current = self.handle._storage.current
        if current is not self.version:
            raise AutogradError(
                f"a value that the gradient of '{op_name}' needs was overwritten by an "
                f"in-place write at {format_callsite(current.created_at)} after it was "
                f"recorded; write into a copy, or record the update outside "
                f"autograd.record()")
        return self.handle


class Node:
    """One recorded op: its definition, attributes, parents (an Edge or Leaf per input, or
    None), the specs it saw, what its rule saved, and where it ran."""

    __slots__ = ("op_def", "attrs", "parents", "in_specs", "out_specs", "saved_inputs",
                 "saved_outputs", "device", "seq", "created_at")

    def __init__(self, op_def, attrs, parents, inputs, outputs, device: int, created_at):
        vjp = op_def.vjp or NO_GRADIENT
        self.op_def = op_def
        self.attrs = attrs
        self.parents = parents
        self.in_specs = [x._spec for x in inputs]
        self.out_specs = [y._spec for y in outputs]
        self.saved_inputs = [Saved(inputs[i], False) if i in vjp.save_inputs else None
                             for i in range(len(inputs))]
        self.saved_outputs = [Saved(outputs[i], True) if i in vjp.save_outputs else None
                              for i in range(len(outputs))]
        self.device = device
        self.seq = _next_seq()
        self.created_at = created_at

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
    if info is None:
        return False
    return info.grad_req != "null" if isinstance(info, Leaf) else True


def differentiable(dtype) -> bool:
    """Gradients flow through floating and complex values only."""
    return np.dtype(dtype).kind in "fc"
