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
from collections.abc import Sequence

from minerva.autograd.aliases import check_untracked
from minerva.autograd.tape import STATE, AutogradError, Cut, Edge, Leaf, needs_grad
from minerva.narray import NArray
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
            if grad.device == device:
                return grad
            if not self.create:
                return grad.to(device)
            with self.ns.device(device):  # a recorded copy: .to() is not recorded
                return self.ns.copy(grad)
        with self.ns.device(device):
            return total + grad

    def run(self, stop=None, floor: int = 0) -> None:
        """Walk every pending node, newest first; ``stop``: ids of nodes whose gradient is
        wanted as a result (``grad``), kept (and walked through, to the other wanted ones);
        nodes recorded before ``floor`` (a recording number) are not walked: nothing wanted
        lies behind them."""
        with self._recording(self.create):
            while self._order:
                _, key = heapq.heappop(self._order)
                node, grads = self.pending.pop(key)
                if stop is not None and key in stop:
                    self.targets[key] = list(grads)
                if node.seq > floor:
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
            in_grads = vjp.rule(self.ns, _Context(node, self.create), grads)
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
    """What a rule sees of its node: attrs, specs, the saved values (checked as the rule
    reads them: one it does not read may have been overwritten), and ``needs``: whether
    each input wants a gradient (a rule may return None for one that does not)."""

    __slots__ = ("attrs", "in_specs", "out_specs", "inputs", "outputs", "needs")

    def __init__(self, node, create: bool):
        self.attrs = node.attrs
        self.needs = tuple(parent is not None for parent in node.parents)
        self.in_specs = node.in_specs
        self.out_specs = node.out_specs
        self.inputs = _SavedValues(node.saved_inputs, node, create and node.parents)
        self.outputs = _SavedValues(node.saved_outputs, node, create and _edges(node))


def _edges(node) -> list:
    """The gradient info of each output of ``node``, as recorded."""
    return [None if s is None else Edge(node, i, s.number)
            for i, s in enumerate(node.saved_outputs)]


class _SavedValues(Sequence):
    """A node's saved inputs (or outputs), as a read-only sequence: None where nothing was
    saved; AutogradError on reading a value that a write replaced since.

    Saved values are kept without gradient info (a node holding its own output's edge, or
    a handle whose edge a later write replaced, could make a reference cycle); with
    ``create_graph`` each is handed out as a new handle with the gradient info it was
    recorded with (``infos``), so the gradient ops built from it are differentiable."""

    __slots__ = ("_saved", "_node", "_infos")

    def __init__(self, saved: list, node, infos):
        self._saved = saved
        self._node = node
        self._infos = infos

    def __len__(self) -> int:
        return len(self._saved)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self._saved)))]
        saved = self._saved[i]
        if saved is None:
            return None
        value = saved.get(self._node.name)
        if not self._infos or self._infos[i] is None:
            return value
        linked = NArray(value._storage, value._view, value._spec)
        linked._grad_info = self._infos[i]
        return linked


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
        if isinstance(info, Cut):
            raise info.error("backward")
        if info is None:
            check_untracked(head, what="backward")
        if not needs_grad(info):
            raise AutogradError("backward: this array was not computed from a variable "
                                "that needs a gradient inside autograd.record()")
        if isinstance(info, Edge):
            info.check(head)
        infos.append(info)
    return infos


__all__ = ["Walk", "write_leaves", "check_heads", "Edge"]
