"""Gradient rules of the ``mv.nn`` ops: each is the op's own backward op (the same
kernels the hand-written backward passes use), over the injected namespace ``ns``.
Dropout's gradient reuses its mask: the same seed draws the same mask."""
from __future__ import annotations

from minerva.ops.registry import defvjp, nondifferentiable


def _conv2d(ns, ctx, g):
    x, w = ctx.inputs[0], ctx.inputs[1]
    stride, pad = ctx.attrs["stride"], ctx.attrs["pad"]
    nn = ns.nn
    grads = [nn.conv2d_backward_data(g[0], w, x.shape, stride, pad),
             nn.conv2d_backward_filter(g[0], x, w.shape, stride, pad)]
    if len(ctx.in_specs) == 3:
        grads.append(nn.conv2d_backward_bias(g[0]))
    return grads


def _max_pool(ns, ctx, g):
    a = ctx.attrs
    return [ns.nn.max_pool2d_backward(g[0], ctx.inputs[0], ctx.outputs[0], a["kernel"],
                                      a["stride"], a["pad"])]


def _avg_pool(ns, ctx, g):
    a = ctx.attrs
    return [ns.nn.avg_pool2d_backward(g[0], ctx.in_specs[0].shape, a["kernel"], a["stride"],
                                      a["pad"])]


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


def _lrn(ns, ctx, g):
    a = ctx.attrs
    return [ns.nn.lrn_backward(g[0], ctx.inputs[0], ctx.outputs[0], a["size"], a["alpha"],
                               a["beta"], a["k"])]


def _dropout(ns, ctx, g):
    return [ns.nn.dropout_backward(g[0], ctx.attrs["p"], ctx.attrs["seed"])]


def _register_all() -> None:
    defvjp("conv2d", _conv2d, (0, 1))
    defvjp("max_pool2d", _max_pool, (0,), (0,))
    defvjp("avg_pool2d", _avg_pool)
    defvjp("softmax", _softmax, (), (0,))
    defvjp("log_softmax", _log_softmax, (), (0,))
    defvjp("cross_entropy", _cross_entropy, (0, 1))
    defvjp("lrn", _lrn, (0,), (0,))
    defvjp("dropout", _dropout)
    defvjp("dropout_backward", _dropout)
    nondifferentiable("cross_entropy_backward", "max_pool2d_backward", "avg_pool2d_backward",
                      "conv2d_backward_data", "conv2d_backward_filter", "relu_backward",
                      "sigmoid_backward", "tanh_backward", "lrn_backward")


_register_all()
