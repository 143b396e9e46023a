"""NumPy's index tricks and index arrays: ``r_``, ``c_``, ``s_``, ``index_exp``, ``ix_``,
``indices``, ``unravel_index`` and ``ravel_multi_index`` (the grids ``mgrid``, ``ogrid``
and ``meshgrid`` are creation's).

``r_``/``c_`` translate slices (``1:4``, ``0:1:5j`` for ``linspace``-like steps), scalars
and arrays into one concatenation, with NumPy's directives (``'0,2,1'``); the matrix
directives ``'r'``/``'c'`` (``numpy.matrix`` results) are not supported.
"""
from __future__ import annotations

import numpy as np

from minerva.api.core.creation import check_dtype, check_shape
from minerva.api.core.manipulation import concatenate, reshape, transpose
from minerva.builder import build, to_narray, upload
from minerva.narray import NArray
from minerva.ops import registry

_INDICES = registry.get("indices")
_UNRAVEL, _RAVEL = registry.get("unravel_index"), registry.get("ravel_multi_index")


class AxisConcatenator:
    """Translates ``obj[...]`` items (slices, scalars, arrays, a leading directive
    string) into a concatenation along ``axis``, as NumPy's ``AxisConcatenator``."""

    __slots__ = ("axis", "ndmin", "trans1d")

    def __init__(self, axis=0, ndmin=1, trans1d=-1):
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key) -> NArray:
        if isinstance(key, str):
            raise ValueError("matrix strings are not supported by minerva")
        key = key if isinstance(key, tuple) else (key,)
        settings = [self.axis, self.ndmin, self.trans1d]
        objs, kinds = [], []
        for k, item in enumerate(key):
            if isinstance(item, str):
                _directive(item, k, settings)
                continue
            obj, kind = _item(item, settings[1], settings[2])
            objs.append(obj)
            kinds.append(kind)
        if not objs:
            raise ValueError("need at least one array to concatenate")
        dtype = np.result_type(*kinds)
        arrays = [_converted(obj, dtype, settings[1]) for obj in objs]
        return concatenate(arrays, settings[0])

    def __len__(self) -> int:
        return 0


def _directive(item: str, k: int, settings: list) -> None:
    if k != 0:
        raise ValueError("special directives must be the first entry.")
    if item in ("r", "c"):
        raise ValueError("the matrix directives 'r' and 'c' are not supported by minerva")
    parts = item.split(",")
    try:
        values = [int(x) for x in parts[:3 if len(parts) == 3 else 2]]
    except ValueError as exc:
        raise ValueError(f"unknown special directive {item!r}") from exc
    settings[:len(values)] = values


def _item(item, ndmin: int, trans1d: int):
    """One item as ``(host or NArray object, what decides the dtype)``."""
    if isinstance(item, slice):
        values = _range(item)
        if ndmin > 1:
            values = np.array(values, ndmin=ndmin)
            if trans1d != -1:
                values = values.swapaxes(-1, trans1d)
        return values, values.dtype
    if type(item) in np.ScalarType:
        return item, item
    x = item if isinstance(item, NArray) else np.asarray(item)
    ndim = x.ndim
    if ndim < ndmin:
        x = _reshape(x, (1,) * (ndmin - ndim) + x.shape)
        if trans1d != -1:
            k2, k1 = ndmin - ndim, trans1d
            k1 = k1 + k2 + 1 if k1 < 0 else k1
            axes = list(range(ndmin))
            x = _transpose(x, axes[:k1] + axes[k2:] + axes[k1:k2])
    return x, x.dtype


def _range(item: slice) -> np.ndarray:
    start = 0 if item.start is None else item.start
    step = 1 if item.step is None else item.step
    if isinstance(step, (complex, np.complexfloating)):
        return np.linspace(start, item.stop, num=int(abs(step)))
    return np.arange(start, item.stop, step)


def _reshape(x, shape):
    return reshape(x, shape) if isinstance(x, NArray) else x.reshape(shape)


def _transpose(x, axes):
    return transpose(x, axes) if isinstance(x, NArray) else x.transpose(axes)


def _converted(obj, dtype, ndmin: int) -> NArray:
    if isinstance(obj, NArray):
        return to_narray(obj, "concatenate", dtype)
    return upload(np.array(obj, dtype=dtype, ndmin=ndmin))


r_ = AxisConcatenator(0)
"""``r_[...]``: slices, scalars and arrays joined along the first axis."""
c_ = AxisConcatenator(-1, ndmin=2, trans1d=0)
"""``c_[...]``: 1-D items as columns, joined along the last axis."""
s_ = np.s_
index_exp = np.index_exp


def ix_(*args) -> tuple:
    """Open-mesh index arrays from 1-D sequences (boolean ones become their non-zero
    positions, which waits for an NArray mask): ``a[ix_(rows, cols)]`` is a cross product."""
    out = []
    for k, arg in enumerate(args):
        x = arg if isinstance(arg, NArray) else np.asarray(arg)
        if not isinstance(arg, (NArray, np.ndarray)) and x.size == 0:
            x = x.astype(np.intp)
        if x.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if x.dtype == np.bool_:
            (x,) = np.nonzero(x.to_numpy() if isinstance(x, NArray) else x)
        x = x if isinstance(x, NArray) else upload(x)
        out.append(reshape(x, (1,) * k + (x.size,) + (1,) * (len(args) - k - 1)))
    return tuple(out)


def indices(dimensions, dtype=int, sparse=False):
    """An array of the index of each position of a grid of ``dimensions`` (one row per
    axis); with ``sparse``, a tuple of broadcastable aranges instead."""
    dims = check_shape(tuple(dimensions))
    dtype = check_dtype(dtype)
    if not sparse:
        return build(_INDICES, [], {"dimensions": dims, "dtype": dtype})
    result = []
    for i, n in enumerate(dims):
        shape = (1,) * i + (n,) + (1,) * (len(dims) - i - 1)
        result.append(upload(np.arange(n, dtype=dtype).reshape(shape)))
    return tuple(result)


def unravel_index(indices, shape, order="C"):
    """``numpy.unravel_index``: the index per axis of each flat position in an array of
    ``shape``. Host positions (ints, lists, NumPy arrays) are computed at once by NumPy
    (ints give NumPy's ints, arrays NArrays), with NumPy's errors; an NArray of positions
    is one op (a position out of bounds fails it when it runs)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if not isinstance(indices, NArray):
        result = np.unravel_index(indices, shape, order=order)
        return result if np.ndim(indices) == 0 else tuple(upload(r) for r in result)
    _check_index_order(order)
    stacked = build(_UNRAVEL, [indices], {"shape": shape, "order": order})
    return tuple(stacked[axis] for axis in range(len(shape)))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """``numpy.ravel_multi_index``: the flat positions of indices per axis (a sequence,
    one per axis of ``dims``) under ``mode`` (``'raise' 'wrap' 'clip'``, or one per axis).
    Host indices are computed at once by NumPy, with NumPy's errors; NArray indices are
    one op (an index out of bounds with ``'raise'`` fails it when it runs)."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    parts = list(multi_index)
    if not any(isinstance(part, NArray) for part in parts):
        result = np.ravel_multi_index(tuple(parts), dims, mode=mode, order=order)
        return result if np.ndim(result) == 0 else upload(result)
    _check_index_order(order)
    arrays = [to_narray(part, "ravel_multi_index") for part in parts]
    modes = mode if isinstance(mode, str) else tuple(mode)
    return build(_RAVEL, arrays, {"dims": dims, "mode": modes, "order": order})


def _check_index_order(order) -> None:
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")


__all__ = ["c_", "index_exp", "indices", "ix_", "r_", "ravel_multi_index", "s_",
           "unravel_index"]
