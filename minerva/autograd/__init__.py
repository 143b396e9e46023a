"""``mv.autograd``: automatic differentiation, MXNet Gluon's API, run through the DAG.

    x.attach_grad()
    with mv.autograd.record():
        loss = f(x)
    loss.backward()
    x.grad

Ops are recorded at the op-building seam right after they are built; ``backward`` walks
the recording in reverse and builds each gradient as ordinary ops, asynchronously, on the
device each forward op ran on. See doc/autograd.md.
"""
from __future__ import annotations

import contextlib

from minerva.autograd import aliases
from minerva.autograd.backward import Walk, check_heads, write_leaves
from minerva.autograd.recorder import record as _record_hook
from minerva.autograd.tape import STATE, AutogradError, Cut, Edge, Leaf, needs_grad
from minerva.builder import SEAM
from minerva.narray import NArray

GRAD_REQS = ("write", "add", "null")


class _Namespace:
    """The public array namespace the gradient rules build ops with (set by ``install``)."""

    ns = None


def install(namespace) -> None:
    """Give the gradient rules the public namespace (``minerva`` itself), once."""
    _Namespace.ns = namespace


@contextlib.contextmanager
def _state(recording: bool | None, training: bool | None):
    previous = (STATE.recording, STATE.training)
    hooked = _record_hook in SEAM.hooks
    if recording and not hooked:
        SEAM.push(_record_hook)
    if recording is not None:
        STATE.recording = recording
    if training is not None:
        STATE.training = training
    try:
        yield
    finally:
        STATE.recording, STATE.training = previous
        if recording and not hooked:
            SEAM.pop(_record_hook)


def record(train_mode: bool = True):
    """A ``with`` block whose ops (on this thread) are recorded for ``backward``."""
    return _state(True, train_mode)


def pause(train_mode: bool = False):
    """A ``with`` block inside ``record`` whose ops are not recorded (the optimizer
    step)."""
    return _state(False, train_mode)


def train_mode():
    """A ``with`` block in training mode (dropout active), recording unchanged."""
    return _state(None, True)


def predict_mode():
    """A ``with`` block in prediction mode, recording unchanged."""
    return _state(None, False)


def is_recording() -> bool:
    """Whether this thread records ops."""
    return STATE.recording


def is_training() -> bool:
    """Whether this thread is in training mode."""
    return STATE.training


def mark_variables(variables, gradients, grad_reqs="write") -> None:
    """Make ``variables`` leaves whose gradients go into ``gradients`` (MXNet's)."""
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else grad_reqs
    for x, g, req in zip(variables, gradients, reqs):
        _check_req(req)
        x._grad_info = Leaf(g, req)
        aliases.register(x)


def attach_grad(x: NArray, grad_req: str = "write", stype=None) -> None:
    """Make ``x`` a variable whose gradient ``backward`` writes into ``x.grad`` (zeros of
    ``x``'s shape and dtype, on its device)."""
    _check_req(grad_req)
    ns = _Namespace.ns
    with ns.device(x.device):
        grad = ns.zeros(x.shape, dtype=x.dtype)
    x._grad_info = Leaf(grad, grad_req)
    aliases.register(x)


def _check_req(grad_req) -> None:
    if grad_req not in GRAD_REQS:
        raise ValueError(f"grad_req must be one of {GRAD_REQS}, got {grad_req!r}")


def grad_of(x: NArray):
    """``x.grad``: the gradient buffer of a variable (None for other arrays)."""
    info = x._grad_info
    return info.grad if isinstance(info, Leaf) else None


def detach(x: NArray) -> NArray:
    """The same array (same storage and view) without its recording."""
    return NArray(x._storage, x._view, x._spec)


def backward(heads, head_grads=None, retain_graph: bool = False, train_mode: bool = True):
    """Gradients of ``heads`` (an array or a list) into every variable they depend on."""
    heads = _as_list(heads)
    walk = _walk(heads, head_grads, retain_graph, False)
    with _state(None, train_mode):
        walk.run()
    write_leaves(walk)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):
    """Gradients of ``heads`` with respect to ``variables`` (leaves or recorded arrays),
    returned instead of written into ``.grad``."""
    heads, variables = _as_list(heads), _as_list(variables)
    retain = create_graph if retain_graph is None else retain_graph
    walk = _walk(heads, head_grads, retain, create_graph)
    nodes = [v._grad_info.node for v in variables if isinstance(v._grad_info, Edge)]
    leaves = len(nodes) < len(variables)
    floor = min(node.seq for node in nodes) if nodes and not leaves else 0
    with _state(None, train_mode):
        walk.run({id(node) for node in nodes}, floor)
    return [_result(walk, v) for v in variables]


def _walk(heads, head_grads, retain, create) -> Walk:
    ns = _Namespace.ns
    infos = check_heads(heads)
    walk = Walk(ns, retain, create)
    grads = _as_list(head_grads) if head_grads is not None else [None] * len(heads)
    for head, info, g in zip(heads, infos, grads):
        with ns.device(head.device):
            seed = ns.ones(head.shape, dtype=head.dtype) if g is None else ns.asarray(g)
        walk.seed(info, seed)
    return walk


def _result(walk, variable):
    info = variable._grad_info
    if isinstance(info, Leaf):
        entry = walk.leaves.get(id(info))
        found = None if entry is None else entry[1]
    elif isinstance(info, Edge):
        grads = walk.targets.get(id(info.node))
        found = None if grads is None else grads[info.index]
    elif isinstance(info, Cut):
        raise info.error("grad")
    else:
        raise AutogradError("grad: a variable was not recorded (attach_grad it first)")
    if found is None:
        ns = _Namespace.ns
        with ns.device(variable.device):
            found = ns.zeros(variable.shape, dtype=variable.dtype)
    return found


def value_and_grad(f, argnums=0):
    """``f`` made to return ``(value, gradients)``: the gradients of its result with
    respect to the arguments ``argnums`` (an int or a tuple of ints)."""
    single = isinstance(argnums, int)
    positions = (argnums,) if single else tuple(argnums)

    def wrapped(*args, **kwargs):
        args = list(args)
        variables = []
        for i in positions:
            args[i] = detach(args[i])
            attach_grad(args[i])
            variables.append(args[i])
        with record():
            value = f(*args, **kwargs)
        grads = grad(value, variables)
        return value, (grads[0] if single else tuple(grads))
    return wrapped


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "backward", "grad", "value_and_grad", "mark_variables", "AutogradError",
           "needs_grad"]
