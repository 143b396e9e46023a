"""NArray's settable attributes and the views that read memory another way, by NumPy's
rules: ``x.shape = s`` and ``x.strides = s`` (this handle sees the same memory another
way, or NumPy's error), ``x.view(dtype)``, ``x.getfield``/``x.setfield`` (the buffer read
as another dtype: a view through the storage, costing no op), ``x.resize`` (in place) and
``x.byteswap``.

A view reading the buffer as another dtype carries it in its strides
(``ops.views.ReadAs``); devices read the buffer through it. On a GPU device the dtype must
keep the itemsize. Autograd sees such a view as an op without a gradient.
"""
from __future__ import annotations

import builtins
import math
import operator
import warnings

import numpy as np

from minerva.api.core import exports
from minerva.api.core.creation import check_shape, copy, zeros
from minerva.api.core.indexing import setitem
from minerva.api.core.manipulation import (concatenate, explicit_view, ravel, reshape,
                                           view_of)
from minerva.builder import build
from minerva.narray import NArray
from minerva.ops import registry, views
from minerva.ops.dtypes import supported_dtype
from minerva.ops.manipulation import resolve_shape
from minerva.ops.registry import ArraySpec

_BYTESWAP = registry.get("byteswap")
_STRIDES_DEPRECATED = ("Setting the strides on a NumPy array has been deprecated in NumPy "
                       "2.4.\nAs an alternative, you can create a new view using "
                       "np.lib.stride_tricks.as_strided.")


# ---- the shape and strides of this handle ---------------------------------------------------

def set_shape(x: NArray, shape) -> None:
    """``x.shape = shape``: ``x`` sees its elements in ``shape`` without a copy, as NumPy's;
    AttributeError with NumPy's words when that would need a copy, ValueError for a shape
    of another size."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    shape = resolve_shape("reshape", x._spec, shape)
    view = views.reshape(explicit_view(x), x.dtype, shape)
    if view is None:
        raise AttributeError("Incompatible shape for in-place modification. Use "
                             "`.reshape()` to make a copy with the desired shape.")
    _rebind(x, view)


def set_strides(x: NArray, strides) -> None:
    """``x.strides = strides`` (deprecated in NumPy 2.4, which warns so): ``x`` sees the
    memory of its buffer with these byte strides; NumPy's ValueError when an element would
    lie outside the buffer."""
    warnings.warn(_STRIDES_DEPRECATED, DeprecationWarning, stacklevel=2)
    strides = tuple(operator.index(s) for s in strides)
    if len(strides) != x.ndim:
        raise ValueError(f"strides must be  same length as shape ({x.ndim})")
    view = (x.shape, strides, explicit_view(x)[2])
    if not views.within(view, x.itemsize, x._storage.current.spec.nbytes):
        raise ValueError("strides is not compatible with available memory")
    _rebind(x, view)


def _rebind(x: NArray, view: tuple) -> None:
    """This handle now sees ``view`` of its storage (same dtype, same base)."""
    if x._grad_info is not None:
        raise ValueError("an array with an attached gradient cannot change its shape or "
                         "strides in place; use reshape() or a view instead")
    buffer = x._storage.current.spec
    plain = (tuple(view[0]), tuple(view[1]), view[2])
    x._spec = ArraySpec(plain[0], x.dtype)
    x._view = (views.normalized(buffer, plain) if x.dtype == buffer.dtype
               else views.typed(plain, x.dtype))


# ---- the buffer read as another dtype -------------------------------------------------------

def view(x: NArray, dtype=None, type=None):
    """NumPy's ``x.view``: a new handle on the same memory, read as ``dtype`` (NumPy's rules
    on itemsize changes); ``type`` NArray (or no type) gives an NArray, a NumPy array type
    gives NumPy's view of the values on the host (``exports.host_values``: read-only, and
    aliasing the buffer on a CPU device)."""
    if type is None and isinstance(dtype, builtins.type) and issubclass(
            dtype, (NArray, np.ndarray)):
        dtype, type = None, dtype
    result = view_of(x, explicit_view(x)) if dtype is None else _read_as(x, dtype)
    if type is None or issubclass(type, NArray):
        return result
    if issubclass(type, np.ndarray):
        return exports.host_values(result).view(type)
    raise TypeError(f"Cannot make an NArray view of type {type.__name__}: give NArray or a "
                    "subclass of numpy.ndarray")


def _read_as(x: NArray, dtype) -> NArray:
    dtype = supported_dtype(dtype)
    if dtype == x.dtype:
        return view_of(x, explicit_view(x))
    return typed_view(x, views.reinterpret(explicit_view(x), x.dtype, dtype), dtype)


def typed_view(x: NArray, view: tuple, dtype) -> NArray:
    """A view of ``x``'s buffer through ``view`` (shape, byte strides, byte offset) read
    as ``dtype`` (a GPU device reads only dtypes of the buffer's itemsize)."""
    if not exports.on_host(x) and dtype.itemsize != x._storage.current.spec.dtype.itemsize:
        raise TypeError("on a GPU device a view may read the buffer only as a dtype of the "
                        "same itemsize; copy the array to a CPU device first")
    return view_of(x, view, views.VIEW_DTYPE, {"dtype": dtype, "view": view}, dtype=dtype)


def getfield(x: NArray, dtype, offset: int = 0) -> NArray:
    """NumPy's ``getfield``: a view of ``x``'s elements, each read as ``dtype`` from
    ``offset`` bytes into it."""
    dtype = supported_dtype(dtype)
    offset = operator.index(offset)
    if offset < 0:
        raise ValueError(f"Need 0 <= offset <= {x.itemsize - dtype.itemsize} for requested "
                         f"type but received offset = {offset}")
    if offset + dtype.itemsize > x.itemsize:
        raise ValueError("new type plus offset is larger than original type")
    return typed_view(x, views.field(explicit_view(x), x.dtype, dtype, offset), dtype)


def setfield(x: NArray, val, dtype, offset: int = 0) -> None:
    """NumPy's ``setfield``: ``val`` written into the field ``getfield(dtype, offset)``."""
    setitem(getfield(x, dtype, offset), Ellipsis, val)


# ---- resize and byteswap --------------------------------------------------------------------

def resize(x: NArray, *new_shape, refcheck: bool = True) -> None:
    """NumPy's ``x.resize(new_shape)``: ``x`` in place takes ``new_shape``, its elements in
    memory order kept (the new ones zero). As in NumPy a view cannot be resized. minerva
    cannot check NumPy's ``refcheck`` (Python's reference counts of the handle): it gives
    ``x`` a new buffer, so views made from ``x`` before keep seeing the old values."""
    if x._base is not None or not x._owndata:
        raise ValueError("cannot resize this array: it does not own its data")
    if x._grad_info is not None:
        raise ValueError("an array with an attached gradient cannot be resized in place")
    shape = check_shape(new_shape[0] if len(new_shape) == 1 else new_shape)
    order = "F" if x.flags.f_contiguous and not x.flags.c_contiguous else "C"
    flat = ravel(x, order)
    size = math.prod(shape)
    if size <= x.size:
        flat = flat[:size]
    else:
        flat = concatenate([flat, zeros(size - x.size, x.dtype)])
    result = copy(reshape(flat, shape, order), order)
    x._storage, x._view, x._spec = result._storage, result._view, result._spec


def byteswap(x: NArray, inplace: bool = False) -> NArray:
    """NumPy's ``byteswap``: the bytes of every element reversed (of each part of a
    complex value); into ``x`` itself when ``inplace``."""
    return build(_BYTESWAP, [x], out=x if inplace else None)


__all__: list = []
