"""Gradient rules of the convolution ops (``ops.nn.conv``), over the injected namespace
``ns``: each is the op's own backward op (the same kernels the hand-written backward passes
use). The backward ops are linear in their inputs and have gradients too, so
``create_graph`` goes through convolutions."""
from __future__ import annotations

from minerva.ops.nn import conv  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.registry import defvjp


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


def _register_all() -> None:
    defvjp("conv2d", _conv2d, (0, 1))
    defvjp("conv2d_backward_data", _conv_data, (0, 1))
    defvjp("conv2d_backward_filter", _conv_filter, (0, 1))
    defvjp("conv2d_backward_bias", _conv_bias)


_register_all()
