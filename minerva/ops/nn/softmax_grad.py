"""Gradient rules of softmax and the loss (``ops.nn.softmax``), over the injected namespace
``ns``; ``cross_entropy``'s is its own backward op, which has no gradient (a second
derivative through cross-entropy raises)."""
from __future__ import annotations

from minerva.ops.nn import softmax  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.registry import defvjp, nondifferentiable


def _softmax(ns, ctx, g):
    y, axis = ctx.outputs[0], ctx.attrs.get("axis", -1)
    return [y * (g[0] - ns.sum(g[0] * y, axis=axis, keepdims=True))]

def _log_softmax(ns, ctx, g):
    y, axis = ctx.outputs[0], ctx.attrs.get("axis", -1)
    return [g[0] - ns.exp(y) * ns.sum(g[0], axis=axis, keepdims=True)]

def _cross_entropy(ns, ctx, g):
    logits, labels = ctx.inputs[0], ctx.inputs[1]
    reduction = ctx.attrs.get("reduction", "mean")
    return [ns.nn.cross_entropy_backward(logits, labels, reduction, g[0]), None]


def _register_all() -> None:
    defvjp("softmax", _softmax, (), (0,))
    defvjp("log_softmax", _log_softmax, (), (0,))
    defvjp("cross_entropy", _cross_entropy, (0, 1))
    nondifferentiable("cross_entropy_backward")


_register_all()
