"""Joining and editing along an axis: ``hstack``, ``vstack``, ``dstack``,
``column_stack``, ``row_stack``, ``append``, ``insert`` and ``delete``. Each result is a
new array; positions are worked out on the host from shapes and the host ``obj`` alone,
so nothing waits (except for an NArray ``obj``, read back first)."""
from __future__ import annotations

import warnings

import numpy as np

from minerva.api.core.arguments import axis_index
from minerva.api.core.indexing import take_axis
from minerva.api.core.manipulation import broadcast_to, concatenate, moveaxis, ravel, reshape
from minerva.api.manipulation.views import atleast_1d, atleast_2d, atleast_3d
from minerva.builder import to_narray
from minerva.common.errors import DTypeError, ShapeError, ShapeIndexError
from minerva.narray import NArray
from minerva.ops.elementwise import fits

_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def join(arrays: list, axis, dtype=None, casting="same_kind") -> NArray:
    """``concatenate`` with NumPy's ``dtype=`` and ``casting=`` rules (TypeError when an
    input cannot be cast to the result dtype under ``casting``)."""
    if casting not in _CASTINGS:
        raise ValueError(f"casting must be one of {', '.join(map(repr, _CASTINGS))} "
                         f"(got {casting!r})")
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    target = np.dtype(dtype) if dtype is not None else np.result_type(
        *(x.dtype for x in arrays))
    for x in arrays:
        if not np.can_cast(x.dtype, target, casting):
            raise DTypeError(f"Cannot cast array data from {x.dtype!r} to {target!r} "
                             f"according to the rule {casting!r}")
    return concatenate(arrays, axis, dtype=dtype, casting=casting)


def _sequence(name: str, tup) -> list:
    if not hasattr(tup, "__getitem__"):
        raise TypeError(f'{name}: arrays to stack must be passed as a "sequence" type '
                        "such as list or tuple.")
    return [to_narray(x, name) for x in tup]


def _as_tuple(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def hstack(tup, *, dtype=None, casting="same_kind") -> NArray:
    """Arrays joined column-wise: along axis 1, or axis 0 for 1-D arrays."""
    arrays = _as_tuple(atleast_1d(*_sequence("hstack", tup)))
    axis = 0 if arrays and arrays[0].ndim == 1 else 1
    return join(list(arrays), axis, dtype, casting)


def vstack(tup, *, dtype=None, casting="same_kind") -> NArray:
    """Arrays joined row-wise, along axis 0 (1-D arrays become rows)."""
    arrays = _as_tuple(atleast_2d(*_sequence("vstack", tup)))
    return join(list(arrays), 0, dtype, casting)


def row_stack(tup, *, dtype=None, casting="same_kind") -> NArray:
    """``vstack`` (deprecated by NumPy: a DeprecationWarning says so)."""
    warnings.warn("`row_stack` alias is deprecated. Use `np.vstack` directly.",
                  DeprecationWarning, stacklevel=2)
    return vstack(tup, dtype=dtype, casting=casting)


def dstack(tup) -> NArray:
    """Arrays joined depth-wise, along axis 2 (made at least 3-D first)."""
    arrays = _as_tuple(atleast_3d(*_sequence("dstack", tup)))
    return join(list(arrays), 2)


def column_stack(tup) -> NArray:
    """1-D arrays as the columns of a 2-D array (2-D arrays joined along axis 1)."""
    arrays = []
    for x in _sequence("column_stack", tup):
        if x.ndim < 2:
            x = reshape(x, (-1, 1))
        arrays.append(x)
    return join(arrays, 1)


def append(arr, values, axis=None) -> NArray:
    """``values`` appended to ``arr`` along ``axis`` (both flattened when None)."""
    x, v = to_narray(arr, "append"), to_narray(values, "append")
    if axis is None:
        x, v = ravel(x), ravel(v)
        axis = 0
    return join([x, v], axis)


def _along(name: str, arr, axis) -> tuple:
    x = to_narray(arr, name)
    if axis is None:
        return ravel(x), 0
    return x, axis_index(name, axis, x.ndim)


def _host_obj(obj):
    return obj.to_numpy() if isinstance(obj, NArray) else obj


def delete(arr, obj, axis=None) -> NArray:
    """A copy of ``arr`` without the sub-arrays at ``obj`` (an int, a slice, integer
    indices or a boolean mask) along ``axis`` (the flattened array when None)."""
    x, axis = _along("delete", arr, axis)
    keep = np.delete(np.arange(x.shape[axis]), _host_obj(obj))
    return take_axis(x, keep, axis)


def insert(arr, obj, values, axis=None) -> NArray:
    """A copy of ``arr`` with ``values`` inserted before the indices ``obj`` (an int, a
    slice or a sequence) along ``axis`` (the flattened array when None), by NumPy's rules
    for the shape of ``values``; they are cast to ``arr``'s dtype."""
    x, axis = _along("insert", arr, axis)
    obj = _host_obj(obj)
    n = x.shape[axis]
    indices = _insert_indices(obj, n, axis)
    v = to_narray(values, "insert", x.dtype)
    if indices.size == 1:
        v = reshape(v, (1,) * (x.ndim - v.ndim) + v.shape)
        if indices.ndim == 0:
            v = moveaxis(v, 0, axis)
        count = v.shape[axis]
    else:
        count = indices.size
    order = np.insert(np.arange(n), obj, np.arange(n, n + count))
    block = x.shape[:axis] + (count,) + x.shape[axis + 1:]
    if not fits(v.shape, block):
        raise ShapeError(f"could not broadcast input array from shape {v.shape} into "
                         f"shape {block}")
    v = broadcast_to(reshape(v, v.shape[v.ndim - len(block):])
                               if v.ndim > len(block) else v, block)
    return take_axis(join([x, v], axis), order, axis)


def _insert_indices(obj, n: int, axis: int) -> np.ndarray:
    """``insert``'s ``obj`` as host indices (a mask as its non-zero positions), checked
    as NumPy checks them."""
    if isinstance(obj, slice):
        return np.arange(*obj.indices(n))
    indices = np.asarray(obj)
    if indices.dtype == np.bool_:
        if indices.ndim != 1:
            raise ValueError("boolean array argument obj to insert must be one "
                             "dimensional")
        indices = np.flatnonzero(indices)
    elif indices.ndim > 1:
        raise ValueError("index array argument obj to insert must be one dimensional or "
                         "scalar")
    if indices.size == 1 and indices.dtype.kind in "iu" and not -n <= indices.item() <= n:
        raise ShapeIndexError(f"index {obj} is out of bounds for axis {axis} with size {n}")
    return indices


__all__ = ["append", "column_stack", "delete", "dstack", "hstack", "insert", "row_stack",
           "vstack"]
