"""Gradient rules of the ``mv.nn`` ops: each is the op's own backward op (the same
kernels the hand-written backward passes use), over the injected namespace ``ns``.
Dropout's gradient reuses its mask: the same seed draws the same mask.

The backward ops that are linear in their inputs (conv2d's three, avg_pool2d's, relu's)
have gradients too, so ``create_graph`` goes through convolutions and average pooling;
``max_pool2d_backward``, ``cross_entropy_backward``, ``lrn_backward``, ``sigmoid_backward``
and ``tanh_backward`` have none (a second derivative through max pooling, cross-entropy or
lrn raises)."""
from __future__ import annotations

from minerva.ops.registry import defvjp, nondifferentiable


def _conv2d(ns, ctx, g):
    x_spec, w_spec = ctx.in_specs[0], ctx.in_specs[1]
    stride, pad = ctx.attrs["stride"], ctx.attrs["pad"]
    nn, needs = ns.nn, ctx.needs
    grads = [None, None]
    if needs[0]:
        grads[0] = nn.conv2d_backward_data(g[0], ctx.inputs[1], x_spec.shape, stride, pad)
    if needs[1]:
        grads[1] = nn.conv2d_backward_filter(g[0], ctx.inputs[0], w_spec.shape, stride, pad)
    if len(ctx.in_specs) == 3 and needs[2]:
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


# ---- the backward ops' own gradients (for create_graph): each is linear in ``dy`` --------

def _conv_data(ns, ctx, g):
    """``conv2d_backward_data(dy, w)``: its adjoint in ``dy`` is ``conv2d``; in ``w``, the
    filter gradient of ``dy`` against ``g``."""
    dy, w = ctx.inputs[0], ctx.inputs[1]
    stride, pad = ctx.attrs["stride"], ctx.attrs["pad"]
    return [ns.nn.conv2d(g[0], w, stride=stride, pad=pad),
            ns.nn.conv2d_backward_filter(dy, g[0], w.shape, stride, pad)]


def _conv_filter(ns, ctx, g):
    """``conv2d_backward_filter(dy, x)``: ``conv2d(x, g)`` in ``dy``, the data gradient of
    ``dy`` through ``g`` in ``x``."""
    dy, x = ctx.inputs[0], ctx.inputs[1]
    stride, pad = ctx.attrs["stride"], ctx.attrs["pad"]
    return [ns.nn.conv2d(x, g[0], stride=stride, pad=pad),
            ns.nn.conv2d_backward_data(dy, g[0], x.shape, stride, pad)]


def _conv_bias(ns, ctx, g):
    shape = ctx.in_specs[0].shape
    return [ns.broadcast_to(ns.reshape(g[0], (1, shape[1], 1, 1)), shape)]


def _avg_pool_backward(ns, ctx, g):
    a = ctx.attrs
    return [ns.nn.avg_pool2d(g[0], a["kernel"], a["stride"], a["pad"])]


def _relu_backward(ns, ctx, g):
    return [ns.nn.relu_backward(g[0], ctx.inputs[1]), None]


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
    defvjp("conv2d_backward_data", _conv_data, (0, 1))
    defvjp("conv2d_backward_filter", _conv_filter, (0, 1))
    defvjp("conv2d_backward_bias", _conv_bias)
    defvjp("avg_pool2d_backward", _avg_pool_backward)
    defvjp("relu_backward", _relu_backward, (1,))
    nondifferentiable("cross_entropy_backward", "max_pool2d_backward", "sigmoid_backward",
                      "tanh_backward", "lrn_backward")


_register_all()
