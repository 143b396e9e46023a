"""Gradient rules of the engine's copies (``ops.copy``), over the injected namespace
``ns``: a copy's gradient is the identity; an assignment's is cast back to the value's
dtype and summed over the axes it was broadcast along; reversing bytes has none."""
from __future__ import annotations

from minerva.ops import copy  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.grad_util import unbroadcast
from minerva.ops.registry import defvjp, nondifferentiable


def _identity(ns, ctx, g):
    return [g[0]]

def _assign(ns, ctx, g):
    return [unbroadcast(ns, ns.astype(g[0], ctx.in_specs[0].dtype), ctx.in_specs[0].shape)]


defvjp("copy", _identity)
defvjp("assign", _assign)
nondifferentiable("byteswap")
