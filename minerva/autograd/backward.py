"""The backward walk: from the heads, in reverse recording order, run each node's gradient
rule as ordinary ops (so backward runs through the DAG, asynchronously, on the device each
forward op ran on) and sum the contributions each value receives.

Contributions to one value are summed on that value's device, in the order the walk
produces them, which is fixed by the recording: gradients are bitwise equal across engines
and device counts.
"""
from __future__ import annotations

import contextlib
import heapq

from minerva.autograd.tape import STATE, AutogradError, Edge, Leaf, needs_grad
from minerva.ops.registry import NO_GRADIENT


class Walk:
    """One backward pass: the pending gradient of each (node, output) and of each leaf.

    ``ns`` is the public namespace the rules build ops with; ``device`` is the function
    that makes a ``with`` block run on a device (``ns.device``)."""

    def __init__(self, ns, retain_graph: bool, create_graph: bool):
        self.ns = ns
        self.retain = retain_graph or create_graph
        self.create = create_graph
        self.pending: dict = {}   # id(node) -> [node, [grad or None per output]]
        self.leaves: dict = {}    # id(leaf) -> [leaf, grad]
        self.targets: dict = {}   # id(node) -> its output grads, for grad()
        self._order: list = []    # heap of (-seq, id(node)): newest first

    def seed(self, info, grad) -> None:
        """Start from a head with gradient info ``info`` and head gradient ``grad``."""
        self.add(info, grad)

    def add(self, info, grad) -> None:
        """Add one contribution ``grad`` to the value with gradient info ``info``, on that
        value's device."""
        if isinstance(info, Leaf):
            entry = self.leaves.setdefault(id(info), [info, None])
            entry[1] = self._sum(entry[1], grad, info.grad.device)
            return
        node = info.node
        entry = self.pending.get(id(node))
        if entry is None:
            entry = self.pending[id(node)] = [node, [None] * len(node.out_specs)]
            heapq.heappush(self._order, (-node.seq, id(node)))
        entry[1][info.index] = self._sum(entry[1][info.index], grad, node.device)

    def _sum(self, total, grad, device: int):
        if total is None:
            return grad if grad.device == device else grad.to(device)
        with self.ns.device(device):
            return total + grad

    def run(self, stop=None) -> None:
        """Walk every pending node, newest first; ``stop``: ids of nodes whose gradient is
        wanted as a result (``grad``), kept instead of walked through."""
        with self._recording(self.create):
            while self._order:
                _, key = heapq.heappop(self._order)
                node, grads = self.pending.pop(key)
                if stop is not None and key in stop:
                    self.targets[key] = grads
                    continue
                self._step(node, grads)

    def _step(self, node, grads) -> None:
        if node.saved_inputs is None:
            raise AutogradError(f"the recording of '{node.name}' (at {_where(node)}) was "
                                "freed by an earlier backward; pass retain_graph=True")
        vjp = node.op_def.vjp or NO_GRADIENT
        if vjp.rule is None:
            raise AutogradError(f"op '{node.name}' (at {_where(node)}) has no gradient; "
                                "take it out of the recording or detach() its inputs")
        with self.ns.device(node.device):
            in_grads = vjp.rule(self.ns, _Context(node), grads)
        if not self.retain:
            node.release()
        for parent, grad in zip(node.parents, in_grads):
            if parent is not None and grad is not None:
                self.add(parent, grad)

    @staticmethod
    @contextlib.contextmanager
    def _recording(on: bool):
        previous = STATE.recording
        STATE.recording = on
        try:
            yield
        finally:
            STATE.recording = previous


class _Context:
    """What a rule sees of its node: attrs, specs, and the saved values (checked)."""

    __slots__ = ("attrs", "in_specs", "out_specs", "inputs", "outputs")

    def __init__(self, node):
        self.attrs = node.attrs
        self.in_specs = node.in_specs
        self.out_specs = node.out_specs
        name = node.name
        self.inputs = [s.get(name) if s is not None else None for s in node.saved_inputs]
        self.outputs = [s.get(name) if s is not None else None for s in node.saved_outputs]


def _where(node) -> str:
    from_file, line = node.created_at
    return f"{from_file.rsplit('/', 1)[-1]}:{line}"


def write_leaves(walk: Walk) -> None:
    """Write each leaf's gradient into its buffer by its ``grad_req``."""
    ns = walk.ns
    for leaf, grad in walk.leaves.values():
        if grad is None or leaf.grad_req == "null":
            continue
        with ns.device(leaf.grad.device):
            if leaf.grad_req == "add":
                leaf.grad += grad
            else:
                leaf.grad[...] = grad


def check_heads(heads) -> list:
    """The gradient info of each head; AutogradError for a head that was not recorded."""
    infos = []
    for head in heads:
        info = head._grad_info
        if not needs_grad(info):
            raise AutogradError("backward: this array was not computed from a variable "
                                "that needs a gradient inside autograd.record()")
        infos.append(info)
    return infos


__all__ = ["Walk", "write_leaves", "check_heads", "Edge"]
