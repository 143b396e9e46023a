"""The fields of structured arrays, by NumPy's rules: ``x["name"]`` is a view of one field
(its elements read at the field's offset in each record, as ``getfield`` reads them; a
field of a subarray dtype such as ``('pos', 'f8', (2,))`` adds its axes), ``x[["a", "b"]]``
a view of several (a dtype with their offsets and the record's itemsize, as NumPy 2's);
``x["name"] = v`` writes through that view, and a tuple written into records is one
record. Every other key goes to ``indexing``. Records
live on CPU devices only (``ops.dtypes``), so these views are too."""
from __future__ import annotations

import numpy as np

from minerva.api.core import indexing
from minerva.api.core.manipulation import explicit_view, view_of
from minerva.narray import NArray
from minerva.ops import views


def getitem(x: NArray, key):
    """``x[key]``: a field (or fields) of a structured array for a field name (or a list
    of names), else ``indexing.getitem``."""
    kind = type(key)
    if kind is not int and (kind is str or _names(key)):
        return field_view(x, key)
    return indexing.getitem(x, key)


def setitem(x: NArray, key, value) -> None:
    """``x[key] = value``: into a field (or fields) by name, else ``indexing.setitem``."""
    if type(key) is str or _names(key):
        indexing.setitem(field_view(x, key), Ellipsis, value)
        return
    if x._spec.dtype.names is not None and not isinstance(value, NArray):
        value = np.asarray(value, dtype=x.dtype)  # a tuple is one record, as NumPy reads it
    indexing.setitem(x, key, value)


def field_view(x: NArray, key) -> NArray:
    """The view ``x[key]`` of field ``key`` (a name, or a list of names) with NumPy's
    errors: ValueError for an unknown name, IndexError for an array without fields."""
    dtype = x.dtype
    if dtype.names is None:
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                         "(`None`) and integer or boolean arrays are valid indices")
    if type(key) is not str:
        return typed_view(x, explicit_view(x), np.zeros(0, dtype)[list(key)].dtype)
    if key not in dtype.fields:
        raise ValueError(f"no field of name {key}")
    field_dtype, offset = dtype.fields[key][:2]
    shape, strides, start = explicit_view(x)
    base, sub_shape = (field_dtype.base, field_dtype.shape) if field_dtype.subdtype else (
        field_dtype, ())
    sub_strides = tuple(int(s) for s in np.empty(sub_shape, base).strides)
    view = (tuple(shape) + sub_shape, tuple(strides) + sub_strides, start + offset)
    return typed_view(x, view, base)


def typed_view(x: NArray, view: tuple, dtype: np.dtype) -> NArray:
    """A view of ``x``'s buffer through ``view`` (shape, byte strides, byte offset) read as
    ``dtype`` (as ``attributes.getfield`` makes one; records live on CPU devices)."""
    return view_of(x, view, views.VIEW_DTYPE, {"dtype": dtype, "view": view}, dtype=dtype)


def _names(key) -> bool:
    """Whether ``key`` is a list of field names (NumPy's multi-field index)."""
    return type(key) is list and bool(key) and type(key[0]) is str and all(
        type(k) is str for k in key)
