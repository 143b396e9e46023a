"""Gradient rules of the pooling ops (``ops.nn.pool``), over the injected namespace ``ns``:
each is the op's own backward op. ``avg_pool2d_backward`` is linear and has a gradient (so
``create_graph`` goes through average pooling); ``max_pool2d_backward`` has none."""
from __future__ import annotations

from minerva.ops.nn import pool  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.registry import defvjp, nondifferentiable


def _max_pool(ns, ctx, g):
    a = ctx.attrs
    return [ns.nn.max_pool2d_backward(g[0], ctx.inputs[0], ctx.outputs[0], a["kernel"],
                                      a["stride"], a["pad"])]

def _avg_pool(ns, ctx, g):
    a = ctx.attrs
    return [ns.nn.avg_pool2d_backward(g[0], ctx.in_specs[0].shape, a["kernel"], a["stride"],
                                      a["pad"])]

def _avg_pool_backward(ns, ctx, g):
    a = ctx.attrs
    return [ns.nn.avg_pool2d(g[0], a["kernel"], a["stride"], a["pad"])]


def _register_all() -> None:
    defvjp("max_pool2d", _max_pool, (0,), (0,))
    defvjp("avg_pool2d", _avg_pool)
    defvjp("avg_pool2d_backward", _avg_pool_backward)
    nondifferentiable("max_pool2d_backward")


_register_all()
