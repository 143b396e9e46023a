"""Gradient rules of the indexing ops (``ops.indexing``), over the injected namespace
``ns``.

An advanced index's gradient is a scatter-add: an element picked twice receives both
contributions; so is ``take_along_axis``'s. ``put``, ``put_along_axis``, ``indices``
and the ``at`` of ufuncs other than ``add`` (``ufunc_at``) have no gradient.
"""
from __future__ import annotations

import numpy as np

from minerva.ops import indexing  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.elementwise import ARRAY
from minerva.ops.grad_util import unbroadcast
from minerva.ops.registry import defvjp, nondifferentiable


def _take_index(ns, ctx, g):
    """Scatter-add the gradient back to where each element was taken from."""
    spec = ctx.in_specs[0]
    indices = ctx.inputs[1:]
    slots = iter(indices)
    index = tuple(next(slots) if item is ARRAY else item for item in ctx.attrs["layout"])
    result = ns.zeros(spec.shape, dtype=g[0].dtype)
    ns.add.at(result, index, g[0])
    return [result] + [None] * len(indices)

def _scatter_add(ns, ctx, g):
    """``add.at(out, index, values)`` into a fresh ``out`` (the recorder refuses one that
    has a gradient): each value gets the gradient of the element it was added to."""
    indices = ctx.inputs[1:]
    slots = iter(indices)
    index = tuple(next(slots) if item is ARRAY else item for item in ctx.attrs["layout"])
    picked = g[0][index]
    return [unbroadcast(ns, picked, ctx.in_specs[0].shape)] + [None] * len(indices)

def _take_along(ns, ctx, g):
    """Scatter-add the gradient back to where each element was taken from (repeated
    indices accumulate)."""
    shape, axis = ctx.in_specs[0].shape, ctx.attrs["axis"]
    indices = ctx.inputs[1]
    if axis is None:
        flat = ns.zeros((int(np.prod(shape)),), dtype=g[0].dtype)
        ns.add.at(flat, indices, g[0])
        return [ns.reshape(flat, shape), None]
    result = ns.zeros(shape, dtype=g[0].dtype)
    ns.add.at(result, _along_index(ns, shape, indices, axis), g[0])
    return [result, None]

def _along_index(ns, shape: tuple, indices, axis: int) -> tuple:
    """The advanced index that picks ``indices`` along ``axis`` (NumPy's
    ``_make_along_axis_idx``), of NArrays built with ``ns`` (``ops.indexing.along_index``
    is the kernels' twin, over ``xp``)."""
    index = []
    for d, n in enumerate(shape):
        fancy = [1] * len(shape)
        fancy[d] = n
        index.append(indices if d == axis else ns.reshape(ns.arange(n), fancy))
    return tuple(index)


def _register_all() -> None:
    defvjp("take_index", _take_index, tuple(range(1, 33)))
    defvjp("scatter_add", _scatter_add, tuple(range(1, 33)))
    defvjp("take_along_axis", _take_along, (1,))
    nondifferentiable("put", "put_along_axis", "indices", "ufunc_at")


_register_all()
