"""Gradient rules of the array-manipulation ops (``ops.manipulation``): roll, tile,
repeat, pad, tril/triu and take_along_axis; and of the sorting module's element-wise and
ordering ops (``ops.sorting``): sort, nan_to_num, real/imag parts. Over the injected
namespace ``ns``.

Each rule moves the output gradient back to where each element came from: a roll the
other way, sums over the copies of tile and repeat, the interior of a constant pad (a
scatter-add through an index map for the other index-only modes), the same triangle, a
scatter-add for take_along_axis, and the inverse permutation for sort. ``round`` and the
ops that return indices, booleans or set results have no gradient.

(The sorting rules live here because ``ops.sorting`` imports ``ops.statistics``: this
module can import it without a cycle.)
"""
from __future__ import annotations

import numpy as np

from minerva.ops import sorting  # noqa: F401  (registers sort, nan_to_num, ... first)
from minerva.ops.grad_util import unbroadcast
from minerva.ops.registry import defvjp, nondifferentiable


def _roll(ns, ctx, g):
    shift, axis = ctx.attrs["shift"], ctx.attrs["axis"]
    back = tuple(-s for s in shift) if isinstance(shift, tuple) else -shift
    return [ns.roll(g[0], back, axis)]


def _tile(ns, ctx, g):
    """Sum the gradient over the copies: each axis split into (copies, size)."""
    shape, reps = ctx.in_specs[0].shape, ctx.attrs["reps"]
    ndim = max(len(shape), len(reps))
    padded = (1,) * (ndim - len(shape)) + tuple(shape)
    reps = (1,) * (ndim - len(reps)) + tuple(reps)
    split = tuple(n for pair in zip(reps, padded) for n in pair)
    summed = ns.sum(ns.reshape(g[0], split), axis=tuple(range(0, 2 * ndim, 2)))
    return [ns.reshape(summed, shape)]


def _repeat(ns, ctx, g):
    """Sum the gradient over each element's copies (a scatter-add by owner index)."""
    shape, repeats, axis = ctx.in_specs[0].shape, ctx.attrs["repeats"], ctx.attrs["axis"]
    grad = g[0] if axis is not None else ns.ravel(g[0])
    at = 0 if axis is None else axis
    n = int(np.prod(shape)) if axis is None else shape[axis]
    counts = np.broadcast_to(np.asarray(repeats, dtype=np.intp), (n,))
    owner = ns.asarray(np.repeat(np.arange(n), counts))
    result = ns.zeros(grad.shape[:at] + (n,) + grad.shape[at + 1:], dtype=grad.dtype)
    ns.add.at(result, (slice(None),) * at + (owner,), grad)
    return [ns.reshape(result, shape)]


def _pad(ns, ctx, g):
    """The interior of a constant (or empty) pad; for edge, reflect, symmetric and wrap
    modes, a scatter-add through the map of which element each output element copies."""
    widths, mode = ctx.attrs["pad_width"], ctx.attrs["mode"]
    shape = ctx.in_specs[0].shape
    if mode in ("constant", "empty"):
        inside = tuple(slice(before, before + n) for (before, _), n in zip(widths, shape))
        return [ns.copy(g[0][inside])]
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise NotImplementedError(f"pad: no gradient for mode {mode!r} (only for modes "
                                  "that copy elements: constant, edge, reflect, symmetric, "
                                  "wrap)")
    size = int(np.prod(shape))
    source = np.pad(np.arange(size).reshape(shape), widths, mode,
                    **dict(ctx.attrs["options"]))
    flat = ns.zeros((size,), dtype=g[0].dtype)
    ns.add.at(flat, ns.asarray(source.reshape(-1)), ns.ravel(g[0]))
    return [ns.reshape(flat, shape)]


def _triangle(ns, ctx, g):
    k, lower = ctx.attrs["k"], ctx.attrs["lower"]
    kept = ns.tril(g[0], k) if lower else ns.triu(g[0], k)
    return [unbroadcast(ns, kept, ctx.in_specs[0].shape)]


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
    ``_make_along_axis_idx``; ``ops.manipulation`` has the kernels' twin, which this module
    does not import: that module imports this one)."""
    index = []
    for d, n in enumerate(shape):
        fancy = [1] * len(shape)
        fancy[d] = n
        index.append(indices if d == axis else ns.reshape(ns.arange(n), fancy))
    return tuple(index)


# ---- sorting's ops -----------------------------------------------------------------------

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


def _nan_to_num(ns, ctx, g):
    """The identity where the input is finite; the replaced NaNs and infinities are
    constants."""
    return [ns.where(ns.isfinite(ctx.inputs[0]), g[0], 0)]


def _real_part(ns, ctx, g):
    spec = ctx.in_specs[0]
    if ctx.attrs["part"] == "real":
        return [ns.astype(g[0], spec.dtype)]
    if spec.dtype.kind == "c":
        return [ns.astype(g[0], spec.dtype) * 1j]
    return [ns.zeros(spec.shape, dtype=spec.dtype)]


def _register_all() -> None:
    defvjp("roll", _roll)
    defvjp("tile", _tile)
    defvjp("repeat", _repeat)
    defvjp("pad", _pad)
    defvjp("triangle", _triangle)
    defvjp("take_along_axis", _take_along, (1,))
    defvjp("sort", _sort, (0,))
    defvjp("nan_to_num", _nan_to_num, (0,))
    defvjp("real_part", _real_part)
    nondifferentiable("round", "angle", "argsort", "argpartition", "searchsorted", "isin",
                      "isclose", "put", "put_along_axis", "copyto", "eye", "tri", "indices")


_register_all()
