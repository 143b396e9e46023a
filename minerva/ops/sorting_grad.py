"""Gradient rules of the sorting ops (``ops.sorting``), over the injected namespace
``ns``: ``sort``'s gradient goes back through the inverse permutation; the ops that return
indices (``argsort``, ``argpartition``, ``searchsorted``) have none."""
from __future__ import annotations

from minerva.ops import sorting  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.registry import defvjp, nondifferentiable


def _sort(ns, ctx, g):
    """The gradient put back through the permutation the sort applied (found again by a
    stable ``argsort`` of the input; among equal values any assignment is a gradient)."""
    x, axis = ctx.inputs[0], ctx.attrs["axis"]
    if axis is None:
        x, axis_used = ns.ravel(x), 0
    else:
        axis_used = axis
    order = ns.argsort(x, axis=axis_used, kind="stable")
    inverse = ns.argsort(order, axis=axis_used, kind="stable")
    grad = ns.take_along_axis(g[0], inverse, axis=axis_used)
    return [grad if axis is not None else ns.reshape(grad, ctx.in_specs[0].shape)]


def _register_all() -> None:
    defvjp("sort", _sort, (0,))
    nondifferentiable("argsort", "argpartition", "searchsorted")


_register_all()
