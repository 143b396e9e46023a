"""Gradient rules of the activations, LRN and dropout (``ops.nn.activation``), over the
injected namespace ``ns``: each is the op's own backward op. Dropout's gradient reuses its
mask: the same seed draws the same mask. ``relu_backward`` is linear in ``dy`` and has a
gradient; ``sigmoid_backward``, ``tanh_backward`` and ``lrn_backward`` have none."""
from __future__ import annotations

from minerva.ops.nn import activation  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.registry import defvjp, nondifferentiable


def _lrn(ns, ctx, g):
    a = ctx.attrs
    return [ns.nn.lrn_backward(g[0], ctx.inputs[0], ctx.outputs[0], a["size"], a["alpha"],
                               a["beta"], a["k"])]

def _dropout(ns, ctx, g):
    return [ns.nn.dropout_backward(g[0], ctx.attrs["p"], ctx.attrs["seed"])]

def _relu_backward(ns, ctx, g):
    return [ns.nn.relu_backward(g[0], ctx.inputs[1]), None]


def _register_all() -> None:
    defvjp("lrn", _lrn, (0,), (0,))
    defvjp("dropout", _dropout)
    defvjp("dropout_backward", _dropout)
    defvjp("relu_backward", _relu_backward, (1,))
    nondifferentiable("sigmoid_backward", "tanh_backward", "lrn_backward")


_register_all()
