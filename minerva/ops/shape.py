"""Ops that move data without arithmetic: reshape, transpose, basic indexing,
concatenate, stack and astype. Every result is a fresh contiguous array."""
from __future__ import annotations

import math
import operator

import numpy as np

from minerva.common.errors import ShapeIndexError
from minerva.ops import dtypes
from minerva.ops.reduction import normalize_axis
from minerva.ops.registry import ArraySpec, register, shape_error


def resolve_shape(name: str, spec: ArraySpec, shape) -> tuple:
    """``shape`` with a ``-1`` resolved; ShapeError when the sizes disagree."""
    try:
        shape = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise shape_error(name, f"shape must be ints, got {shape!r}") from None
    unknown = [i for i, n in enumerate(shape) if n == -1]
    if len(unknown) > 1 or any(n < -1 for n in shape):
        raise shape_error(name, f"invalid shape {shape}", spec)
    size = math.prod(spec.shape)
    known = math.prod(n for n in shape if n != -1)
    if unknown:
        if known == 0 or size % known:
            raise shape_error(name, f"cannot reshape size {size} into {shape}", spec)
        shape = tuple(size // known if n == -1 else n for n in shape)
    if math.prod(shape) != size:
        raise shape_error(name, f"cannot reshape size {size} into {shape}", spec)
    return shape


def _reshape_infer(x, *, shape):
    return (ArraySpec(shape, x.dtype),)


def _reshape_impl(xp, x, *, out, shape):
    out.reshape(x.shape)[...] = x


def normalize_axes(spec: ArraySpec, axes) -> tuple:
    """A permutation of the dimensions (reversed when ``axes`` is None)."""
    ndim = len(spec.shape)
    if axes is None:
        return tuple(range(ndim))[::-1]
    normalized = normalize_axis("transpose", axes, ndim) or ()
    if len(axes) != ndim or len(normalized) != ndim:
        raise shape_error("transpose", f"axes {tuple(axes)} don't match the array", spec)
    return tuple(operator.index(a) % ndim for a in axes)


def _transpose_infer(x, *, axes):
    return (ArraySpec(tuple(x.shape[a] for a in axes), x.dtype),)


def _transpose_impl(xp, x, *, out, axes):
    out[...] = x.transpose(axes)


def normalize_index(index) -> tuple:
    """A basic index as a tuple of ints, slices of ints, None and Ellipsis."""
    items = index if isinstance(index, tuple) else (index,)
    return tuple(_normalize_item(item) for item in items)


def _normalize_item(item):
    if item is None or item is Ellipsis:
        return item
    if isinstance(item, slice):
        return slice(*(_index_int(v) for v in (item.start, item.stop, item.step)))
    if isinstance(item, (bool, np.bool_)):
        raise ShapeIndexError("boolean indices are not supported; use mv.where")
    return _index_int(item)


def _index_int(value):
    if value is None:
        return None
    try:
        return operator.index(value)
    except TypeError:
        raise ShapeIndexError(
            f"only basic indexing is supported (ints, slices, None, ...); got "
            f"{type(value).__name__}") from None


def _getitem_infer(x, *, index):
    probe = np.lib.stride_tricks.as_strided(np.zeros(1, x.dtype), shape=x.shape,
                                            strides=(0,) * len(x.shape))
    try:
        shape = probe[index].shape
    except IndexError as exc:
        raise ShapeIndexError(f"getitem: {exc} (array shape {x.shape})") from None
    return (ArraySpec(shape, x.dtype),)


def _getitem_impl(xp, x, *, out, index):
    out[...] = x[index]


def _join_check(name, specs, axis):
    first = specs[0]
    for spec in specs[1:]:
        if len(spec.shape) != len(first.shape):
            raise shape_error(name, "all inputs must have the same number of dimensions",
                              *specs)
        for i, (m, n) in enumerate(zip(first.shape, spec.shape)):
            if i != axis and m != n:
                raise shape_error(name, f"sizes differ along axis {i}", *specs)


def _concatenate_infer(*specs, axis):
    if axis is None:
        shape = (sum(math.prod(s.shape) for s in specs),)
    else:
        _join_check("concatenate", specs, axis)
        shape = list(specs[0].shape)
        shape[axis] = sum(s.shape[axis] for s in specs)
    return (ArraySpec(tuple(shape), dtypes.result_dtype("concatenate", _np_join, *specs)),)


def _np_join(*arrays):
    return np.concatenate(arrays)


def _concatenate_impl(xp, *arrays, out, axis):
    xp.concatenate(arrays, axis=axis, out=out)


def _stack_infer(*specs, axis):
    if any(s.shape != specs[0].shape for s in specs):
        raise shape_error("stack", "all inputs must have the same shape", *specs)
    shape = list(specs[0].shape)
    shape.insert(axis, len(specs))
    return (ArraySpec(tuple(shape), dtypes.result_dtype("stack", _np_join, *specs)),)


def _stack_impl(xp, *arrays, out, axis):
    xp.stack(arrays, axis=axis, out=out)


def _astype_infer(x, *, dtype):
    return (ArraySpec(x.shape, dtypes.supported_dtype(dtype)),)


def _astype_impl(xp, x, *, out, dtype):
    xp.copyto(out, x, casting="unsafe")


register("reshape", _reshape_infer, _reshape_impl)
register("transpose", _transpose_infer, _transpose_impl)
register("getitem", _getitem_infer, _getitem_impl)
register("concatenate", _concatenate_infer, _concatenate_impl)
register("stack", _stack_infer, _stack_impl)
register("astype", _astype_infer, _astype_impl, elementwise=True)
