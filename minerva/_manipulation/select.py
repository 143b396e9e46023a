"""Picking and placing elements by index: ``take``, ``take_along_axis``, ``put``,
``put_along_axis`` and ``copyto`` (the last three write into an NArray in place).

Host indices (lists, NumPy arrays) are checked against the array's bounds at once
(IndexError, as NumPy). NArray indices are checked when the op runs: an out-of-range one
fails the op on a CPU device (the error comes at the next wait); CuPy does not check.
"""
from __future__ import annotations

import numpy as np

from minerva import functions, indexing, ufuncs
from minerva.builder import build, to_narray, upload
from minerva.common.errors import DTypeError, ShapeError, ShapeIndexError
from minerva.narray import NArray
from minerva._manipulation.common import (axis_index, check_bounds, device_indices,
                                          host_indices, take_axis)
from minerva.ops import registry
from minerva.ops.dtypes import is_scalar

_TAKE_ALONG, _PUT_ALONG = registry.get("take_along_axis"), registry.get("put_along_axis")
_PUT, _COPYTO = registry.get("put"), registry.get("copyto")
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
            return ufuncs.remainder(idx, n) if idx.size else idx
        return functions.clip(idx, 0, max(n - 1, 0)) if mode == "clip" else idx
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
        x, axis = functions.ravel(x), 0
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
    indexing.check_writable(arr)
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


def copyto(dst, src, casting="same_kind", where=True) -> None:
    """Copy ``src`` (broadcast) into ``dst`` in place, where ``where`` is true; TypeError
    when ``src`` cannot be cast to ``dst``'s dtype under ``casting``."""
    if not isinstance(dst, NArray):
        raise TypeError(f"copyto() argument 1 must be an NArray, not {type(dst).__name__}")
    _check_cast(src, dst.dtype, casting)
    indexing.check_writable(dst)
    if where is True:
        indexing.assign(dst, src)
        return
    if isinstance(src, NArray):
        value = src
    else:
        value = upload(np.asarray(src, dtype=dst.dtype if is_scalar(src) else None))
    mask = _mask(where)
    inputs = [_trimmed(value, dst.ndim, "input array"), _trimmed(mask, dst.ndim, "where mask")]
    build(_COPYTO, inputs, {"shape": dst.shape, "dtype": dst.dtype}, out=dst)


_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _check_cast(src, dtype: np.dtype, casting: str) -> None:
    if casting not in _CASTINGS:
        raise ValueError(f"casting must be one of {', '.join(map(repr, _CASTINGS))} "
                         f"(got {casting!r})")
    if isinstance(src, NArray) or not is_scalar(src):
        kind = src.dtype if isinstance(src, NArray) else np.asarray(src).dtype
        if not np.can_cast(kind, dtype, casting):
            raise DTypeError(f"Cannot cast array data from {kind!r} to {dtype!r} according "
                             f"to the rule {casting!r}")
        return
    try:
        np.copyto(np.empty((), dtype), src, casting=casting)  # NumPy's scalar rules
    except TypeError as exc:
        raise DTypeError(str(exc)) from None


def _mask(where) -> NArray:
    if isinstance(where, (NArray, np.ndarray)) and where.dtype != np.bool_:
        raise DTypeError(f"Cannot cast array data from {where.dtype!r} to "
                         f"{np.dtype(np.bool_)!r} according to the rule 'safe'")
    return to_narray(where, "copyto", np.bool_)


def _trimmed(x: NArray, ndim: int, what: str) -> NArray:
    """``x`` without leading size-1 axes beyond ``ndim`` (NumPy drops them)."""
    extra = x.shape[:max(0, x.ndim - ndim)]
    if any(n != 1 for n in extra):
        raise ShapeError(f"could not broadcast {what} from shape {x.shape} into an array "
                         f"of {ndim} dimensions")
    return functions.reshape(x, x.shape[len(extra):]) if extra else x
