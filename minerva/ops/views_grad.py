"""Gradient rules of the views (``ops.views``: each kind of view as the recorders see it),
over the injected namespace ``ns``.

A view's gradient maps the output gradient back onto its base: transposed back, reshaped
back, placed into zeros at the index, summed over the broadcast axes. ``view_strided``
(flip, diagonal, ...) scatters it back through an index map of the two views, computed on
the host. ``write_region`` (an item assignment) splits it between the old array and the
value written.
"""
from __future__ import annotations

import numpy as np

from minerva.ops import views  # noqa: F401  (registers the view definitions given rules here)
from minerva.ops.grad_util import unbroadcast
from minerva.ops.registry import defvjp


def _transpose_vjp(ns, ctx, grads):
    return [ns.transpose(grads[0], tuple(np.argsort(ctx.attrs["axes"])))]


def _reshape_vjp(ns, ctx, grads):
    return [ns.reshape(grads[0], ctx.in_specs[0].shape)]


def _index_vjp(ns, ctx, grads):
    spec = ctx.in_specs[0]
    result = ns.zeros(spec.shape, dtype=grads[0].dtype)
    result[ctx.attrs["index"]] = grads[0]
    return [result]


def _broadcast_vjp(ns, ctx, grads):
    return [unbroadcast(ns, grads[0], ctx.in_specs[0].shape)]


def _strided_vjp(ns, ctx, grads):
    """Put the gradient back through the flat index of each output element in ``x``
    (added up where several output elements share one element of ``x``)."""
    spec, g = ctx.in_specs[0], grads[0]
    where = _flat_positions(ctx.attrs["x_view"], ctx.attrs["view"], spec.dtype.itemsize)
    flat = ns.zeros((int(np.prod(spec.shape)),), dtype=g.dtype)
    if np.unique(where).size == where.size:
        flat[where] = ns.ravel(g)
    else:
        ns.add.at(flat, where, ns.ravel(g))
    return [ns.reshape(flat, spec.shape)]


def _flat_positions(x_view, view, itemsize: int) -> np.ndarray:
    """For each element of ``view`` (row-major), the flat index of the same memory element
    in ``x_view``; both are ``(shape, strides, offset)`` over one buffer."""
    x_offsets = _offsets(x_view, itemsize).ravel()
    order = np.argsort(x_offsets, kind="stable")
    at = np.searchsorted(x_offsets[order], _offsets(view, itemsize).ravel())
    return order[at].astype(np.intp)


def _offsets(view, itemsize: int) -> np.ndarray:
    shape, strides, offset = view
    grids = np.indices(shape, sparse=True) if shape else ()
    total = np.full(shape, offset, dtype=np.int64)
    for grid, stride in zip(grids, strides):
        total = total + grid * stride
    return total // itemsize


def _write_region_vjp(ns, ctx, grads):
    """The old ``x`` gets the gradient outside ``index``; ``value`` the part inside it,
    summed over the axes it was broadcast along. Where an integer index repeats a
    position, the value written last is the one kept (NumPy's rule): only it gets the
    gradient."""
    g, index = grads[0], ctx.attrs["index"]
    kept = ns.copy(g)
    kept[index] = 0
    if len(ctx.in_specs) == 1:
        return [kept]
    picked = ns.copy(g[index])
    if any(getattr(item, "dtype", np.dtype(bool)).kind in "iu" for item in index):
        picked = ns.where(_last_writes(ns, g.shape, index, picked.shape), picked, 0)
    return [kept, unbroadcast(ns, picked, ctx.in_specs[1].shape)]


def _last_writes(ns, shape: tuple, index, picked_shape: tuple):
    """For each element an integer index writes, whether it is the last write to its
    position (the one whose value stays)."""
    n = int(np.prod(picked_shape))
    order = ns.reshape(ns.arange(n), picked_shape)
    marks = ns.full(shape, -1, dtype=order.dtype)
    marks[index] = order
    return marks[index] == order


defvjp("write_region", _write_region_vjp)
defvjp("view_transpose", _transpose_vjp)
defvjp("view_reshape", _reshape_vjp)
defvjp("view_index", _index_vjp)
defvjp("view_broadcast", _broadcast_vjp)
defvjp("view_strided", _strided_vjp)
