"""Picking and placing elements by index: ``take``, ``take_along_axis``, ``put`` and
``put_along_axis`` (the last two write into an NArray in place); the diagonals
``diagonal``, ``trace`` and ``fill_diagonal`` (in place, through views).

Host indices (lists, NumPy arrays) are checked against the array's bounds at once
(IndexError, as NumPy). NArray indices are checked when the op runs: an out-of-range one
fails the op on a CPU device (the error comes at the next wait); CuPy does not check.

``diagonal`` returns a *copy* of the diagonal: NumPy returns a read-only view, which
minerva cannot mark read-only; a copy keeps a write into the result from silently changing
the base. ``trace`` reads through the diagonal view without copying; it is also
``mv.trace`` (NumPy's top-level function of that name).
"""
from __future__ import annotations

import numpy as np

from minerva.api.core.arguments import axis_index, check_bounds, host_indices
from minerva.api.core.elementwise import clip
from minerva.api.core.indexing import assign, check_writable, device_indices, take_axis
from minerva.api.core.manipulation import (diagonal_view, explicit_view, ravel, view_of,
                                           whole_flat)
from minerva.api.core.reductions import sum as _sum
from minerva.builder import COPY, build, to_narray, upload
from minerva.common.errors import ShapeIndexError
from minerva.narray import NArray
from minerva.ops import registry

_TAKE_ALONG, _PUT_ALONG = registry.get("take_along_axis"), registry.get("put_along_axis")
_PUT, _REMAINDER = registry.get("put"), registry.get("remainder_scalar")
_MODES = ("raise", "wrap", "clip")


def _check_mode(mode) -> None:
    if mode not in _MODES:
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got "
                         f"{mode!r})")


def _indices(name: str, indices, n: int, axis: int, mode: str):
    """Indices into an axis of length ``n`` after ``mode`` (host ones checked now)."""
    if isinstance(indices, NArray):
        idx = device_indices(name, indices)
        if n == 0 and idx.size and mode != "raise":
            raise ShapeIndexError("cannot do a non-empty take from an empty axes.")
        if mode == "wrap":
            if not idx.size:
                return idx
            return build(_REMAINDER, [idx], {"scalar": n, "reverse": False})
        return clip(idx, 0, max(n - 1, 0)) if mode == "clip" else idx
    values = host_indices(name, indices)
    if n == 0 and values.size and mode != "raise":
        raise ShapeIndexError("cannot do a non-empty take from an empty axes.")
    if mode == "wrap":
        values = values % n if values.size else values
    elif mode == "clip":
        values = np.clip(values, 0, max(n - 1, 0))
    check_bounds(values, n, axis)
    return values


def take(a, indices, axis=None, out=None, mode="raise") -> NArray:
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened array when None);
    ``mode`` 'raise' (IndexError for an index out of range), 'wrap' or 'clip'."""
    _check_mode(mode)
    x = to_narray(a, "take")
    if axis is None:
        x, axis = ravel(x), 0
    else:
        axis = axis_index("take", axis, x.ndim)
    return take_axis(x, _indices("take", indices, x.shape[axis], axis, mode), axis, out)


def _along_indices(name: str, indices, n: int):
    if isinstance(indices, NArray):
        if indices.dtype.kind not in "iu":
            raise ShapeIndexError(f"{name}: `indices` must be an integer array")
        return indices
    values = np.asarray(indices)
    if values.dtype.kind not in "iu":
        raise ShapeIndexError(f"{name}: `indices` must be an integer array")
    check_bounds(values, n, 0)
    return upload(values)


def take_along_axis(arr, indices, axis=-1) -> NArray:
    """Values of ``arr`` at ``indices`` along ``axis`` (``indices`` has ``arr``'s number of
    dimensions; other axes broadcast), or of the flattened ``arr`` when None."""
    x = to_narray(arr, "take_along_axis")
    if axis is not None:
        axis = axis_index("take_along_axis", axis, x.ndim)
    n = x.size if axis is None else x.shape[axis]
    idx = _along_indices("take_along_axis", indices, n)
    return build(_TAKE_ALONG, [x, idx], {"axis": axis})


def _target(name: str, arr) -> NArray:
    if not isinstance(arr, NArray):
        raise TypeError(f"{name}: argument 1 must be an NArray (it is written in place), "
                        f"not {type(arr).__name__}")
    check_writable(arr)
    return arr


def put_along_axis(arr, indices, values, axis) -> None:
    """Write ``values`` into ``arr`` in place at ``indices`` along ``axis`` (the flattened
    array when None); the places ``take_along_axis`` would read."""
    x = _target("put_along_axis", arr)
    if axis is not None:
        axis = axis_index("put_along_axis", axis, x.ndim)
    n = x.size if axis is None else x.shape[axis]
    idx = _along_indices("put_along_axis", indices, n)
    v = to_narray(values, "put_along_axis")
    build(_PUT_ALONG, [idx, v], {"axis": axis, "shape": x.shape, "dtype": x.dtype}, out=x)


def put(a, ind, v, mode="raise") -> None:
    """Write ``v`` (repeated as needed, cast to ``a``'s dtype) into ``a`` in place at the
    flat indices ``ind``; ``mode`` as ``take``'s."""
    _check_mode(mode)
    x = _target("put", a)
    values = to_narray(v, "put")
    if values.size == 0:
        return
    if isinstance(ind, NArray):
        idx = device_indices("put", ind)
    else:
        host = host_indices("put", ind)
        if x.size == 0 and host.size and mode != "raise":
            raise ShapeIndexError("cannot replace elements of an empty array")
        if mode == "raise":
            check_bounds(host, x.size, 0)
        idx = upload(host)
    build(_PUT, [idx, values], {"mode": mode, "shape": x.shape, "dtype": x.dtype}, out=x)


# ---- diagonals -------------------------------------------------------------------------

def diagonal(a, offset=0, axis1=0, axis2=1) -> NArray:
    """The diagonal ``offset`` above the main one in the plane of ``axis1``/``axis2`` (the
    diagonal becomes the last axis). A copy: NumPy's read-only view cannot be expressed."""
    return build(COPY, [diagonal_view(to_narray(a, "diagonal"), offset, axis1, axis2)])

def fill_diagonal(a, val, wrap=False) -> None:
    """Write ``val`` into the main diagonal of ``a`` in place (for more than two axes,
    all of one length, the elements whose indices are all equal), as NumPy's: an array
    ``val`` is read flat and repeated as needed; with ``wrap`` a tall matrix's diagonal
    starts again one row below each square block. Written through views of ``a``."""
    x = _target("fill_diagonal", a)
    if x.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if x.ndim > 2 and len(set(x.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    plain = type(val) in _PLAIN_SCALARS   # the common call: a Python number, as it is
    flat = whole_flat(x) if plain else None
    if flat is not None:   # a whole value: NumPy's own slice of its flat view
        flat[_flat_diagonal(x.shape, wrap)] = val
        return
    views = _diagonal_views(x, wrap)
    values = val if plain else _repeated(val, sum(view.size for view in views))
    if values is None:
        return
    start = 0
    for view in views:
        if isinstance(values, NArray):
            part = values[start:start + view.size].reshape(view.shape)
            start += view.size
        else:
            part = values
        assign(view, part)


_PLAIN_SCALARS = (int, float, complex, bool)


def _flat_diagonal(shape: tuple, wrap: bool) -> slice:
    """The slice of the flat positions of a C-ordered array of ``shape`` (two axes or
    more, all of one length) that ``fill_diagonal`` writes, as NumPy takes it."""
    if len(shape) == 2:
        return slice(None, None if wrap else shape[1] * shape[1], shape[1] + 1)
    step, size = 1, 1
    for n in shape[:-1]:
        size *= n
        step += size
    return slice(None, None, step)


def _diagonal_views(x: NArray, wrap: bool) -> list:
    """The views of ``x`` holding the diagonal ``fill_diagonal`` writes, in NumPy's flat
    order: one of its length, or for a wrapped tall matrix the diagonals of its blocks
    of ``cols + 1`` rows and that of the rows left."""
    shape, strides, offset = explicit_view(x)
    step = sum(strides)
    if x.ndim > 2 or not wrap or shape[0] <= shape[1]:
        return [view_of(x, ((min(shape),), (step,), offset))]
    rows, cols = shape
    blocks, rest = divmod(rows, cols + 1)
    views = [view_of(x, ((blocks, cols), ((cols + 1) * strides[0], step), offset))]
    if rest:
        views.append(view_of(x, ((min(rest, cols),), (step,),
                                 offset + blocks * (cols + 1) * strides[0])))
    return views


def _repeated(val, length: int):
    """``val`` as ``fill_diagonal`` writes it: a scalar as it is, an array's values read
    flat and repeated to ``length`` (an NArray; None for no values: nothing written)."""
    if not isinstance(val, NArray) and np.ndim(val) == 0:
        return val
    values = ravel(to_narray(val, "fill_diagonal"))
    if values.size == length:
        return values
    if values.size == 0 or length == 0:
        return None
    return take_axis(values, np.arange(length) % values.size, 0)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None) -> NArray:
    """Sum along the diagonal (``diagonal``'s arguments), with ``sum``'s dtype rule."""
    view = diagonal_view(to_narray(a, "trace"), offset, axis1, axis2)
    return _sum(view, axis=-1, dtype=dtype, out=out)


__all__ = ["diagonal", "fill_diagonal", "put", "put_along_axis", "take", "take_along_axis",
           "trace"]
