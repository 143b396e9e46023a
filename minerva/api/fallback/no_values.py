"""NumPy's functions that need no values, native so that they never wait nor leave the
device (a host fallback of them would copy the array to the host on every call of a
loop): ``shape``, ``ndim``, ``size``, ``isscalar``, ``iterable`` (NumPy's answers, also
for lists and scalars), ``may_share_memory`` and ``shares_memory`` (by storage and byte
extents), ``broadcast_shapes`` (NumPy's own: it takes shapes).
"""
from __future__ import annotations

import numpy as np
from numpy import broadcast_shapes

from minerva.api.core.manipulation import explicit_view
from minerva.narray import NArray, storage_of


def _stand_in(x: NArray) -> np.ndarray:
    """A NumPy array of ``x``'s shape and dtype that holds no memory (for NumPy's own
    answers about shapes)."""
    return np.broadcast_to(np.empty((), x.dtype), x.shape)


def shape(a) -> tuple:
    """The shape of ``a`` (an NArray's at once; of a list or scalar, as NumPy gives it)."""
    return a.shape if isinstance(a, NArray) else np.shape(a)


def ndim(a) -> int:
    """The number of dimensions of ``a``, as ``numpy.ndim``."""
    return a.ndim if isinstance(a, NArray) else np.ndim(a)


def size(a, axis=None) -> int:
    """The number of elements of ``a`` (along ``axis`` when given), as ``numpy.size``."""
    if isinstance(a, NArray):
        return a.size if axis is None else np.size(_stand_in(a), axis)
    return np.size(a, axis)


def isscalar(element) -> bool:
    """Whether ``element`` is a scalar, as ``numpy.isscalar``: never an NArray."""
    return False if isinstance(element, NArray) else np.isscalar(element)


def iterable(y) -> bool:
    """Whether ``y`` can be iterated, as ``numpy.iterable``: an NArray unless 0-d."""
    return y.ndim > 0 if isinstance(y, NArray) else np.iterable(y)


def _extent(x: NArray) -> tuple:
    """``(first byte, end byte)`` of the elements ``x`` sees in its storage's buffer;
    ``(0, 0)`` for no element."""
    shape_, strides, offset = explicit_view(x)
    if 0 in shape_:
        return (0, 0)
    low = offset + sum(min(0, (n - 1) * s) for n, s in zip(shape_, strides))
    high = offset + sum(max(0, (n - 1) * s) for n, s in zip(shape_, strides))
    return (low, high + x.itemsize)


def _overlapping(a: NArray, b: NArray) -> bool:
    (low_a, high_a), (low_b, high_b) = _extent(a), _extent(b)
    return (storage_of(a) is storage_of(b) and low_a < high_a and low_b < high_b
            and low_a < high_b and low_b < high_a)


def may_share_memory(a, b, /, max_work=0) -> bool:
    """Whether ``a`` and ``b`` might share memory, as ``numpy.may_share_memory``: two
    NArrays when they see one storage and their byte extents in it overlap; an NArray and
    a NumPy array when the NumPy array is over the buffer of the NArray's computed value
    (``numpy.asarray(x)``'s alias: scikit-learn's ``check_array(copy=True)`` asks this);
    an NArray never shares memory with another object. Never waits."""
    if isinstance(a, NArray) and isinstance(b, NArray):
        if max_work == 0 or not _overlapping(a, b):  # NumPy's default: the bounds
            return _overlapping(a, b)
        try:
            return shares_memory(a, b, max_work)
        except np.exceptions.TooHardError:
            return True
    if isinstance(a, NArray) or isinstance(b, NArray):
        return _with_host_array(np.may_share_memory, a, b, max_work)
    return np.may_share_memory(a, b, max_work=max_work)


def shares_memory(a, b, /, max_work=-1) -> bool:
    """Whether ``a`` and ``b`` share an element's memory, exactly, as
    ``numpy.shares_memory`` (NumPy solves it on stand-ins laid out as the two NArrays are
    in their storage; its ``TooHardError`` past ``max_work``). Never waits."""
    if isinstance(a, NArray) and isinstance(b, NArray):
        if not _overlapping(a, b):
            return False
        return np.shares_memory(*_laid_out(a, b), max_work=max_work)
    if isinstance(a, NArray) or isinstance(b, NArray):
        return _with_host_array(np.shares_memory, a, b, max_work)
    return np.shares_memory(a, b, max_work=max_work)


def _with_host_array(numpy_answer, a, b, max_work) -> bool:
    """NumPy's ``numpy_answer`` (``may_share_memory`` or ``shares_memory``) for an NArray
    and another object: the NArray seen as a NumPy array over its current value's buffer
    when that value is computed on the host (the only memory a NumPy array can share with
    it, through an alias), else False. Never waits."""
    x, other = (a, b) if isinstance(a, NArray) else (b, a)
    if not isinstance(other, np.ndarray):
        return False
    buffer = getattr(storage_of(x).current, "array", None)
    if not isinstance(buffer, np.ndarray) or not np.may_share_memory(buffer, other):
        return False
    shape_, strides, offset = explicit_view(x)
    raw = buffer.reshape(-1).view(np.uint8)
    view = np.ndarray(shape_, x.dtype, raw, 0 if 0 in shape_ else offset, strides)
    return bool(numpy_answer(view, other, max_work=max_work))


def _laid_out(a: NArray, b: NArray) -> tuple:
    """NumPy arrays over one scratch buffer laid out as ``a`` and ``b`` are in their
    storage (only the bytes both span)."""
    (low_a, high_a), (low_b, high_b) = _extent(a), _extent(b)
    low = min(low_a, low_b)
    buffer = np.empty(max(high_a, high_b) - low, np.uint8)
    arrays = []
    for x in (a, b):
        shape_, strides, offset = explicit_view(x)
        arrays.append(np.ndarray(shape_, x.dtype, buffer, offset - low, strides))
    return tuple(arrays)


__all__ = ["broadcast_shapes", "isscalar", "iterable", "may_share_memory", "ndim", "shape",
           "shares_memory", "size"]
