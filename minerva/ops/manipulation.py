"""Ops of NumPy's array-manipulation functions that move or pick elements: roll, tile,
repeat, pad, tril/triu, take/put along an axis, flat ``put``, masked ``copyto``, and the
array makers ``eye``, ``tri`` and ``indices``.

The faces (``minerva.manipulation``) normalize every argument (axes non-negative, shapes
and index lists as tuples) and raise NumPy's errors; the shape rules here trust them.
"""
from __future__ import annotations

import math

import numpy as np

from minerva.common.errors import ShapeIndexError
from minerva.ops import manipulation2  # noqa: F401  (registers the array makers)
from minerva.ops.registry import ArraySpec, register, shape_error


def _same_infer(x, **attrs):
    return (ArraySpec(x.shape, x.dtype),)


def _roll_impl(xp, x, *, out, shift, axis):
    out[...] = xp.roll(x, shift, axis)


def tiled_shape(shape: tuple, reps: tuple) -> tuple:
    """Shape of ``numpy.tile`` of an array of ``shape`` by ``reps``."""
    ndim = max(len(shape), len(reps))
    shape = (1,) * (ndim - len(shape)) + tuple(shape)
    reps = (1,) * (ndim - len(reps)) + tuple(reps)
    return tuple(n * r for n, r in zip(shape, reps))


def _tile_infer(x, *, reps):
    return (ArraySpec(tiled_shape(x.shape, reps), x.dtype),)


def _tile_impl(xp, x, *, out, reps):
    out[...] = xp.tile(x, reps)


def _repeat_infer(x, *, repeats, axis):
    shape = (math.prod(x.shape),) if axis is None else x.shape
    at = 0 if axis is None else axis
    if isinstance(repeats, tuple):
        if len(repeats) not in (1, shape[at]):
            raise shape_error("repeat", f"operands could not be broadcast together with "
                              f"shape ({shape[at]},) ({len(repeats)},)", x)
        total = sum(repeats) if len(repeats) == shape[at] else repeats[0] * shape[at]
    else:
        total = repeats * shape[at]
    return (ArraySpec(shape[:at] + (total,) + shape[at + 1:], x.dtype),)


def _repeat_impl(xp, x, *, out, repeats, axis):
    out[...] = xp.repeat(x, list(repeats) if isinstance(repeats, tuple) else repeats, axis)


def _pad_infer(x, *, pad_width, mode, options):
    shape = tuple(n + before + after for n, (before, after) in zip(x.shape, pad_width))
    return (ArraySpec(shape, x.dtype),)


def _pad_impl(xp, x, *, out, pad_width, mode, options):
    if mode == "median" and not isinstance(x, np.ndarray):  # CuPy has no median padding
        out[...] = xp.asarray(np.pad(x.get(), pad_width, mode, **dict(options)))
        return
    out[...] = xp.pad(x, pad_width, mode, **dict(options))


def _triangle_infer(x, *, k, lower):
    rows, cols = x.shape[-2:] if len(x.shape) >= 2 else (x.shape[-1],) * 2
    shape = np.broadcast_shapes(x.shape, (rows, cols))
    return (ArraySpec(tuple(shape), x.dtype),)


def _triangle_impl(xp, x, *, out, k, lower):
    rows, cols = out.shape[-2:]
    mask = xp.tri(rows, cols, k if lower else k - 1, dtype=bool)
    if not lower:
        mask = ~mask
    out[...] = xp.where(mask, x, xp.zeros(1, x.dtype))


# ---- along an axis ----------------------------------------------------------------------

def along_shape(name: str, shape: tuple, indices: ArraySpec, axis) -> tuple:
    """Shape of ``take_along_axis`` of an array of ``shape`` (flattened when ``axis`` is
    None) by ``indices``: each other axis broadcast with the indices' axis."""
    if indices.dtype.kind not in "iu":
        raise ShapeIndexError(f"{name}: `indices` must be an integer array")
    if axis is None:
        if len(indices.shape) != 1:
            raise shape_error(name, "when axis=None, `indices` must have a single "
                              "dimension.", indices)
        return indices.shape
    if len(indices.shape) != len(shape):
        raise shape_error(name, "`indices` and `arr` must have the same number of "
                          "dimensions", indices)
    result = []
    for d, (n, m) in enumerate(zip(shape, indices.shape)):
        if d != axis and n != m and 1 not in (n, m):
            raise ShapeIndexError(f"{name}: shape mismatch: indexing arrays could not be "
                                  f"broadcast together with shapes {shape} {indices.shape}")
        result.append(m if d == axis or n == 1 else n)
    return tuple(result)


def along_index(xp, shape: tuple, indices, axis) -> tuple:
    """The fancy index that picks ``indices`` along ``axis`` of an array of ``shape``
    (NumPy's ``_make_along_axis_idx``)."""
    index = []
    for d, n in enumerate(shape):
        if d == axis:
            index.append(indices)
        else:
            fancy = [1] * len(shape)
            fancy[d] = n
            index.append(xp.arange(n).reshape(fancy))
    return tuple(index)


def flat_index(xp, shape: tuple, indices):
    """Flat ``indices`` (negative ones count from the end) as a multi-index of ``shape``."""
    indices = xp.where(indices < 0, indices + math.prod(shape), indices)
    return xp.unravel_index(indices, shape)


def _take_along_infer(x, indices, *, axis):
    shape = along_shape("take_along_axis", x.shape, indices, axis)
    return (ArraySpec(shape, x.dtype),)


def _take_along_impl(xp, x, indices, *, out, axis):
    if axis is None:
        out[...] = x.reshape(-1)[indices]
        return
    out[...] = x[along_index(xp, x.shape, indices, axis)]


def _put_along_infer(indices, values, *, axis, shape, dtype):
    target = along_shape("put_along_axis", shape, indices, axis)
    try:
        np.broadcast_shapes(values.shape, target)
    except ValueError:
        raise shape_error("put_along_axis", f"shape mismatch: value array of shape "
                          f"{values.shape} could not be broadcast to indexing result of "
                          f"shape {target}") from None
    return (ArraySpec(shape, dtype),)


def _put_along_impl(xp, indices, values, *, out, axis, shape, dtype):
    if axis is None:
        out[flat_index(xp, shape, indices)] = values
        return
    out[along_index(xp, shape, indices, axis)] = values


def _put_infer(indices, values, *, mode, shape, dtype):
    return (ArraySpec(shape, dtype),)


def _put_impl(xp, indices, values, *, out, mode, shape, dtype):
    indices, values = indices.reshape(-1), values.reshape(-1)
    if indices.size == 0 or values.size == 0:
        return
    size = math.prod(shape)
    if mode == "wrap":
        indices = xp.mod(indices, size)
    elif mode == "clip":
        indices = xp.clip(indices, 0, size - 1)
    if values.size < indices.size:
        values = xp.tile(values, -(-indices.size // values.size))
    out[flat_index(xp, shape, indices)] = values[:indices.size]


def _copyto_infer(src, mask, *, shape, dtype):
    for spec in (src, mask):
        try:
            if np.broadcast_shapes(spec.shape, shape) != shape:
                raise ValueError
        except ValueError:
            raise shape_error("copyto", f"could not broadcast input array from shape "
                              f"{spec.shape} into shape {shape}") from None
    return (ArraySpec(shape, dtype),)


def _copyto_impl(xp, src, mask, *, out, shape, dtype):
    xp.copyto(out, src, casting="unsafe", where=mask)


register("roll", _same_infer, _roll_impl)
register("tile", _tile_infer, _tile_impl)
register("repeat", _repeat_infer, _repeat_impl)
register("pad", _pad_infer, _pad_impl)
register("triangle", _triangle_infer, _triangle_impl)
register("take_along_axis", _take_along_infer, _take_along_impl)
register("put_along_axis", _put_along_infer, _put_along_impl)
register("put", _put_infer, _put_impl)
register("copyto", _copyto_infer, _copyto_impl)
from minerva.ops import manipulation_grad  # noqa: E402,F401  (gradient rules of these ops)
