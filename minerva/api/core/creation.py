"""The basics of NumPy's array creation every chapter builds on: new arrays on the current
device with NumPy's defaults: fills (``float64`` unless asked, or
``MINERVA_DEFAULT_DTYPE``), copies of host data (dtype inferred as NumPy infers it, laid out
in NumPy's memory orders), ``arange``; and the checks of dtypes and shapes. The rest of
NumPy's creation functions are the chapter ``minerva.api.creation``."""
from __future__ import annotations

import operator

import numpy as np

from minerva.api.core import lean
from minerva.api.core.indexing import setitem
from minerva.api.core.layout import (check_order, copy_in, fill_axes, fresh_now,
                                     laid_out_as, memory_order, upload_in)
from minerva.api.core.manipulation import in_memory_order, reshape
from minerva.builder import build, default_dtype, host_array, placed, to_narray
from minerva.common.errors import ShapeError
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.registry import ArraySpec
from minerva.ops.dtypes import NUMERIC_KINDS, supported_dtype

_FILL, _EMPTY = registry.get("fill"), registry.get("empty")
_ARANGE = registry.get("arange")
MAX_DIMS = 64


def check_dtype(dtype, default=None, sized: bool = True) -> np.dtype:
    """``dtype`` as a NumPy dtype minerva holds (``ops.dtypes.holds``); None gives
    ``default`` (the default float dtype when None). ``sized``: an unsized ``'U'``, ``'S'``
    or ``'V'`` as NumPy's creation functions size it (``'U'`` is ``<U1``)."""
    if dtype is None:
        return default_dtype() if default is None else supported_dtype(default)
    dtype = supported_dtype(dtype)
    if sized and not dtype.itemsize and dtype.kind in "SUV":
        dtype = np.zeros(0, dtype).dtype
    return dtype


def fill_data(value, what: str, dtype):
    """Scalar ``value`` as a host array of ``dtype`` (None: its own), as NumPy's fills
    cast it (unsafely: ``full(3, 1, 'V8')`` holds the bytes of 1)."""
    if dtype is not None and check_dtype(dtype).kind not in NUMERIC_KINDS:
        return np.full((), value, check_dtype(dtype))
    return host_array(value, what, dtype)


def zero_of(dtype: np.dtype):
    """The element of ``dtype`` whose bytes are all zero, as NumPy's ``zeros`` fills
    (``''`` for strings, 1970-01-01 for dates)."""
    return 0 if dtype.kind in NUMERIC_KINDS else np.zeros((), dtype)[()]


def check_shape(shape) -> tuple:
    """``shape`` (an int or a sequence of ints >= 0) as a tuple; ShapeError for shapes
    NumPy refuses (negative, more than 64 dimensions, too many elements)."""
    if type(shape) is int and 0 <= shape < 1 << 59:   # the common case: one axis
        return (shape,)
    if type(shape) is tuple and len(shape) <= MAX_DIMS:   # a tuple of plain ints
        size = 1
        for n in shape:
            if type(n) is not int or n < 0:
                break
            size *= n
        else:
            if size * 16 < 1 << 63:
                return shape
    try:
        dims = (operator.index(shape),) if not isinstance(shape, (tuple, list)) \
            else tuple(operator.index(n) for n in shape)
    except TypeError:
        raise ShapeError(f"a shape is an int or a tuple of ints, got {shape!r}") from None
    if any(n < 0 for n in dims):
        raise ShapeError(f"negative dimensions are not allowed: {dims}")
    if len(dims) > MAX_DIMS:
        raise ShapeError(f"maximum supported dimension for an ndarray is currently "
                         f"{MAX_DIMS}, found {len(dims)}")
    size = 1
    for n in dims:
        size *= n
    if size * 16 >= 1 << 63:
        raise ShapeError(f"array is too big: shape {dims}")
    return dims


@placed
def full(shape, fill_value, dtype=None, order="C", *, like=None) -> NArray:
    """An array of ``shape`` filled with ``fill_value`` (a scalar, or an array broadcast to
    ``shape``); the dtype is ``fill_value``'s unless given, as NumPy's ``full``."""
    shape = check_shape(shape)
    axes = None if order == "C" and like is None else fill_axes(shape, order, like)
    if isinstance(fill_value, NArray) or np.ndim(fill_value) > 0:
        value = to_narray(fill_value, "full")
        result = empty(shape, value.dtype if dtype is None else dtype, order)
        setitem(result, Ellipsis, value)
        return result
    data = fill_data(fill_value, "full", dtype)
    return _filled(shape, data.dtype, data[()], axes)


@placed
def zeros(shape, dtype=None, order="C", *, like=None) -> NArray:
    """An array of zeros (``float64`` unless ``dtype`` is given), in memory order
    ``order`` (``'C'`` or ``'F'``)."""
    shape = check_shape(shape)
    axes = None if order == "C" and like is None else fill_axes(shape, order, like)
    dtype = check_dtype(dtype)
    return _filled(shape, dtype, zero_of(dtype), axes)


@placed
def ones(shape, dtype=None, order="C", *, like=None) -> NArray:
    """An array of ones (``float64`` unless ``dtype`` is given), in memory order
    ``order`` (``'C'`` or ``'F'``)."""
    shape = check_shape(shape)
    axes = None if order == "C" and like is None else fill_axes(shape, order, like)
    return _filled(shape, check_dtype(dtype), 1, axes)


@placed
def empty(shape, dtype=None, order="C", *, like=None) -> NArray:
    """An array whose values are not set (``float64`` unless ``dtype`` is given), in
    memory order ``order`` (``'C'`` or ``'F'``)."""
    shape = check_shape(shape)
    axes = None if order == "C" and like is None else fill_axes(shape, order, like)
    return _filled(shape, check_dtype(dtype), None, axes)


def _filled(shape: tuple, dtype, value, axes) -> NArray:
    """A new array of ``shape`` holding ``value`` (None: unset) laid out with ``axes``
    outermost first in memory (None: C order)."""
    if axes is None:
        attrs = {"shape": shape, "dtype": dtype}
        op_def = _EMPTY if value is None else _FILL
        if value is not None:
            attrs["value"] = value
        if _exact(value, dtype):   # at once, where it can be
            result = fresh_now(op_def, attrs, (), ArraySpec(shape, dtype))
            if result is not None:
                return result
        return build(op_def, [], attrs)
    attrs = {"shape": tuple(shape[a] for a in axes), "dtype": dtype}
    result = build(_EMPTY, [], attrs) if value is None else build(
        _FILL, [], dict(attrs, value=value))
    return in_memory_order(result, axes)


def _exact(value, dtype) -> bool:
    """Whether filling an array of ``dtype`` with ``value`` (None: not at all) meets no
    floating-point error and cannot fail: 0 or 1, or a NumPy scalar of that dtype."""
    return value is None or (type(value) is int and (value == 0 or value == 1)) or (
        getattr(value, "dtype", None) == dtype)


def _like(name, x, dtype, order, shape):
    """``(shape, dtype, axes)`` of a new array like ``x``: its shape and dtype unless
    given, laid out in memory order ``order`` of ``x`` (NumPy's rules for ``'K'``)."""
    x = x if isinstance(x, (NArray, np.ndarray)) else host_array(x, name)
    order = check_order(order)
    new_shape = x.shape if shape is None else check_shape(shape)
    if order == "K" and len(new_shape) != x.ndim:
        order = "C"  # NumPy: another number of axes is laid out in C order
    if type(x) is NArray and x._view is None:   # a whole value: C order, no flags to read
        axes = memory_order(order, new_shape, (), True, False)
    else:
        flags = x.flags
        axes = memory_order(order, new_shape, x.strides if len(new_shape) == x.ndim else (),
                            flags.c_contiguous, flags.f_contiguous)
    return new_shape, check_dtype(dtype, x.dtype), axes


@placed
def zeros_like(a, dtype=None, order="K", subok=True, shape=None) -> NArray:
    """Zeros of ``a``'s shape and dtype (unless given), laid out as ``a`` (``order``)."""
    shape, dtype, axes = _like("zeros_like", a, dtype, order, shape)
    return _filled(shape, dtype, zero_of(dtype), axes)


@placed
def ones_like(a, dtype=None, order="K", subok=True, shape=None) -> NArray:
    """Ones of ``a``'s shape and dtype (unless given), laid out as ``a`` (``order``)."""
    shape, dtype, axes = _like("ones_like", a, dtype, order, shape)
    return _filled(shape, dtype, 1, axes)


@placed
def empty_like(prototype, /, dtype=None, order="K", subok=True, shape=None) -> NArray:
    """An unset array of ``prototype``'s shape and dtype (unless given), laid out as
    ``prototype`` (``order``)."""
    shape, dtype, axes = _like("empty_like", prototype, dtype, order, shape)
    return _filled(shape, dtype, None, axes)


@placed
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None) -> NArray:
    """``fill_value`` in ``a``'s shape and dtype (unless given), laid out as ``a``
    (``order``)."""
    shape, dtype, axes = _like("full_like", a, dtype, order, shape)
    if isinstance(fill_value, NArray) or np.ndim(fill_value) > 0:
        result = _filled(shape, dtype, None, axes)
        setitem(result, Ellipsis, to_narray(fill_value, "full_like"))
        return result
    return _filled(shape, dtype, fill_data(fill_value, "full_like", dtype)[()], axes)


@placed
def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0) -> NArray:
    """A new array holding ``obj`` (a list, NumPy array, scalar or NArray) on the current
    device, laid out in memory order ``order`` as NumPy's (``minerva.api.core.layout``),
    with at least ``ndmin`` dimensions (size-1 axes in front); the dtype is inferred as
    NumPy infers it when not given. By NumPy 2's copy rules ``copy=None`` returns an NArray
    itself when no cast and no other layout is needed, and ``copy=False`` never copies: it
    returns the NArray itself (or a view of it for ``ndmin``) or raises NumPy's ValueError
    (a cast, another layout, or host data, which minerva always copies onto a device)."""
    order = check_order(order)
    dtype = None if dtype is None else check_dtype(dtype, sized=False)
    if isinstance(obj, NArray):
        result = _from_narray(obj, dtype, copy, order)
    elif copy is False:
        raise ValueError(NO_COPY.format(f"host data ({type(obj).__name__}) is always "
                                         "copied onto a device"))
    elif isinstance(obj, (list, tuple)) and _holds_narrays(obj):
        result = _from_narray(_stack_nested(obj, dtype), None, None, order)
    else:
        result = upload_in(host_array(obj, "array", dtype), order)
    if type(ndmin) is int and not ndmin:   # the default
        return result
    return _at_least(result, operator.index(ndmin))


array = lean.new_array(array)   # ``array([a, b, c])`` of plain numbers in C, where built
zeros = lean.filled(zeros, _FILL, 0)   # a plain shape and numeric dtype in C, where built
ones = lean.filled(ones, _FILL, 1)
empty = lean.filled(empty, _EMPTY, None)


NO_COPY = ("Unable to avoid copy while creating an array as requested (copy=False): {}. "
            "Use copy=None (numpy.asarray) to allow a copy when needed.")


def _from_narray(x: NArray, dtype, copy, order: str) -> NArray:
    cast = to_narray(x, "array", dtype)
    if copy is False and cast is not x:
        raise ValueError(NO_COPY.format(f"a cast from {x.dtype} to {cast.dtype}"))
    if laid_out_as(cast, order) and (copy is not True or cast is not x):
        return cast
    if copy is False:
        raise ValueError(NO_COPY.format(f"another memory order ({order!r})"))
    return copy_in(cast, order)


def _at_least(x: NArray, ndmin: int) -> NArray:
    """``x`` with size-1 axes in front up to ``ndmin`` dimensions (a view)."""
    if ndmin > MAX_DIMS:
        raise ValueError(f"ndmin bigger than allowable number of dimensions NPY_MAXDIMS "
                         f"({MAX_DIMS})")
    return x if x.ndim >= ndmin else reshape(x, (1,) * (ndmin - x.ndim) + x.shape)


@placed
def asarray(a, dtype=None, order=None, *, copy=None, like=None) -> NArray:
    """``a`` as an NArray: an NArray itself when no cast and no other memory order is
    needed, else a new array; ``copy=False`` never copies (NumPy's ValueError instead),
    ``copy=True`` always does."""
    return array(a, dtype, copy=copy, order=check_order(order))


from_numpy = array


NOT_NARRAYS = frozenset({int, float, complex, bool, str, bytes, np.float64, np.float32,
                         np.int64, np.int32, np.bool_, np.complex128, type(None)})
"""Types of list items that are neither NArrays nor lists to look into."""


def _holds_narrays(obj) -> bool:
    """Whether ``obj`` (a list or tuple) holds an NArray, in it or in lists in it."""
    todo = [obj]
    while todo:
        for x in todo.pop():
            if type(x) in NOT_NARRAYS:
                continue
            if isinstance(x, NArray):
                return True
            if isinstance(x, (list, tuple)):
                todo.append(x)
    return False


def _stack_nested(obj, dtype) -> NArray:
    parts = [array(x, dtype) for x in obj]
    return build(registry.get("stack"), parts, {"axis": 0})


@placed
def ascontiguousarray(a, dtype=None) -> NArray:
    """``a`` with its elements contiguous in C order, at least 1-D: ``a`` itself when it is
    (a view of a 0-d array), else a copy."""
    return _at_least_1d(asarray(a, dtype, order="C"))


@placed
def asfortranarray(a, dtype=None) -> NArray:
    """``a`` with its elements contiguous in Fortran (column-major) order, at least 1-D:
    ``a`` itself when it is (a view of a 0-d array), else a copy."""
    return _at_least_1d(asarray(a, dtype, order="F"))


def _at_least_1d(x: NArray) -> NArray:
    return reshape(x, (1,)) if x.ndim == 0 else x


@placed
def copy(a, order="K", subok=False) -> NArray:
    """A copy of ``a`` (a new storage) in memory order ``order``, as ``numpy.copy``
    (``'K'``: the order of ``a``'s strides)."""
    order = check_order(order)
    if isinstance(a, NArray):
        return copy_in(a, order)
    return upload_in(host_array(a, "copy"), order)


@placed
def arange(start, stop=None, step=1, dtype=None) -> NArray:
    """Evenly spaced values in ``[start, stop)``; dtype and length follow NumPy's arange."""
    if _beyond_numbers(start, stop, step, dtype):  # days, hours: NumPy's own, uploaded
        dtype = None if dtype is None else supported_dtype(dtype)
        given = (start,) if stop is None else (start, stop, step)
        return to_narray(np.arange(*given, dtype=dtype), "arange")
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ShapeError("arange: step must not be zero (Maximum allowed size exceeded)")
    dtype = check_dtype(dtype, np.array([start, stop, step]).dtype)
    return build(_ARANGE, [], {"start": start, "stop": stop, "step": step, "dtype": dtype})


def _beyond_numbers(start, stop, step, dtype) -> bool:
    """Whether ``arange`` counts datetimes or timedeltas (or is asked for a dtype that is
    no number: NumPy's error)."""
    times = (np.datetime64, np.timedelta64)
    return any(isinstance(v, times) for v in (start, stop, step)) or (
        dtype is not None and supported_dtype(dtype).kind not in NUMERIC_KINDS)


__all__ = ["arange", "array", "asarray", "ascontiguousarray", "asfortranarray", "copy",
           "empty", "empty_like", "from_numpy", "full", "full_like", "ones", "ones_like",
           "zeros", "zeros_like"]
