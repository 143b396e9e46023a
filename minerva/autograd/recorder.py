"""The hook at the op-building seam that records ops while ``record()`` is on."""
from __future__ import annotations

from minerva.autograd import aliases
from minerva.autograd.tape import (STATE, AutogradError, Cut, Edge, Node, differentiable,
                                   needs_grad)
from minerva.common.callsite import user_callsite

REGION_WRITES = frozenset({"fill", "put_index"})
"""Ops that write part of an array (item assignment): the indexing layer tells the seam
of each as a ``write_region`` on the indexed array, which is what autograd records. Each
is checked against the variables' memory, as exactly as the handle it writes allows (the
``write_region`` that follows is not: it names the whole indexed array). (``assign`` is
recorded: it also makes whole writes, ``out=`` of another dtype; in an item assignment it
writes a temporary view, and the ``write_region`` on the array follows.)"""


VIEWS = frozenset({"view_transpose", "view_reshape", "view_index", "view_broadcast",
                   "view_strided"})
"""The view pseudo-ops: a view computes nothing, so it is not checked for a stale input
(item assignment makes one after writing); it inherits its base's recorded version."""

ITEM_WRITE = "write_region"
"""An item assignment, told on the indexed array after its write op (checked already)."""

PARTIAL_WRITES = frozenset({"scatter_add", "put", "put_along_axis", "copyto", "set_part"})
"""Ops that write part of their ``out=`` array without reading it as an input: the old
value of the rest is invisible to the recording, so such a write into an array that has a
gradient is refused (into a fresh array, ``add.at`` in a gradient rule, it is fine)."""


def record(op_def, attrs, inputs, result, out) -> None:
    """Record one op (or view) just built, if recording is on and an input needs a
    gradient; give its outputs their gradient info."""
    if not STATE.recording:
        return
    outputs = result if isinstance(result, tuple) else (result,)
    if out is not None:
        _check_targets(op_def.name, outputs)
        if op_def.name in REGION_WRITES:
            return
    infos = [x._grad_info for x in inputs]
    view = op_def.name in VIEWS
    if not view:
        _check_versions(op_def.name, inputs, infos, outputs if out is not None else ())
    if not any(needs_grad(info) for info in infos):
        for y in outputs:
            y._grad_info = None  # overwritten by a value without a gradient
        return
    parents = [info if needs_grad(info) else None for info in infos]
    node = Node(op_def, attrs, parents, inputs, outputs, outputs[0].device, user_callsite())
    if out is not None:
        node.overwritten_inputs(inputs, outputs)
        aliases.note_write(node, outputs)
    for index, y in enumerate(outputs):
        version = y._storage.current.version
        if view and isinstance(infos[0], Edge):  # a view of a stale array stays stale
            version = infos[0].version
        y._grad_info = (Edge(node, index, version) if differentiable(y.dtype)
                        else Cut(node.name, node.created_at))


def _check_versions(op_name, inputs, infos, written) -> None:
    """Each recorded input still holds the value its recording made (an input the write
    being recorded overwrote has seen exactly that one write); an input without gradient
    info holds no value that a recorded write made through another view."""
    storages = {id(y._storage) for y in written}
    for x, info in zip(inputs, infos):
        if isinstance(info, Edge):
            info.check(x, id(x._storage) in storages)
        elif info is None:
            aliases.check_untracked(x, id(x._storage) in storages,
                                    f"recording {aliases.describe(op_name)}")


def _check_targets(op_name, outputs) -> None:
    """Refuse a write into a variable's memory (through any handle), and a partial write
    that autograd cannot follow into an array that takes part in gradients."""
    for y in outputs:
        variable = None if op_name == ITEM_WRITE else aliases.written_variable(y)
        if variable is not None:
            raise aliases.variable_error(op_name, variable)
        if op_name in PARTIAL_WRITES and needs_grad(y._grad_info):
            raise AutogradError(f"'{op_name}' writes part of an array that takes part in "
                                "gradients while recording, which autograd cannot follow; "
                                "use x[index] = value or where(), or write outside "
                                "autograd.record()")
