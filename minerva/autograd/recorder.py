"""The hook at the op-building seam that records ops while ``record()`` is on."""
from __future__ import annotations

from minerva.autograd.tape import (STATE, AutogradError, Edge, Leaf, Node, differentiable,
                                   needs_grad)
from minerva.common.callsite import user_callsite

REGION_WRITES = frozenset({"fill", "assign", "put_index"})
"""Ops that write part of an array (item assignment): the indexing layer tells the seam
of each as a ``write_region`` on the indexed array, which is what autograd records."""


def record(op_def, attrs, inputs, result, out) -> None:
    """Record one op (or view) just built, if recording is on and an input needs a
    gradient; give its outputs their gradient info."""
    if not STATE.recording or (out is not None and op_def.name in REGION_WRITES):
        return
    outputs = result if isinstance(result, tuple) else (result,)
    infos = [x._grad_info for x in inputs]
    if out is not None:
        _check_targets(outputs, infos)
    if not any(needs_grad(info) for info in infos):
        for y in outputs:
            y._grad_info = None  # overwritten by a value without a gradient
        return
    parents = [info if needs_grad(info) else None for info in infos]
    node = Node(op_def, attrs, parents, inputs, outputs, outputs[0].device, user_callsite())
    for index, y in enumerate(outputs):
        y._grad_info = Edge(node, index) if differentiable(y.dtype) else None


def _check_targets(outputs, infos) -> None:
    for y in outputs:
        info = y._grad_info
        if isinstance(info, Leaf) and info.grad_req != "null" and any(
                needs_grad(i) for i in infos):
            raise AutogradError("an in-place write into a variable that needs a gradient "
                                "(attach_grad) while recording; write outside "
                                "autograd.record(), or use autograd.pause()")
