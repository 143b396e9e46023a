"""An advanced index read into what the index ops take (``minerva.ops.indexing``): a
``layout`` of ints, slices, None, Ellipsis, 0-d booleans and ``ARRAY`` slots, and the index
arrays for those slots. Masks become the integer arrays of their ``nonzero()`` (an NArray
mask is kept as it is when a scalar is written); host index arrays (NumPy arrays, lists,
ranges) are checked against the array's bounds here, as NumPy checks them, and left NumPy
arrays (``minerva.api.core.indexing`` uploads them where the op needs it)."""
from __future__ import annotations

import math

import numpy as np

from minerva.builder import to_narray
from minerva.common.errors import ShapeIndexError
from minerva.narray import NArray
from minerva.ops import scalar_masks
from minerva.ops.elementwise import ARRAY
from minerva.ops.indexing import (SMALL_INDEX, check_index_array, range_values,
                                  range_within, small_within)


def advanced(x: NArray, items: tuple, keep_masks: bool = False):
    """``(layout, index arrays)`` of an advanced index: masks become the integer arrays of
    their ``nonzero()`` (an NArray mask is kept as is when writing a scalar). Host index
    arrays are checked against ``x``'s bounds and left NumPy arrays (``_uploaded``
    uploads them)."""
    layout, arrays, host = [], [], []
    for item in items:
        if item is None or item is Ellipsis or isinstance(item, slice):
            layout.append(item)
        elif _is_scalar_mask(item):
            layout.append(_scalar_mask_value(item))
        elif isinstance(item, (int, np.integer)):
            layout.append(int(item))
        elif isinstance(item, NArray) and (item.dtype != np.bool_ or keep_masks):
            _check_index_dtype(item.dtype)
            layout.append(ARRAY)
            arrays.append(item)
        else:
            parts, from_mask = _index_arrays(x, item, layout)
            for part in parts:
                layout.append(ARRAY)
                host.append((len(arrays), part, from_mask))
                arrays.append(None)
    layout = tuple(layout)
    checked = _picks_any(layout, arrays, host)
    for slot, values, from_mask in host:
        if checked and not from_mask and not _within(values, x.shape):
            check_index_array(values, x.shape, layout, slot)
        arrays[slot] = values
    return layout, arrays


def _within(values: np.ndarray, shape: tuple) -> bool:
    """Whether a small host index array is within every axis of ``shape`` (then within
    the one it indexes); False tells nothing (``check_index_array`` decides)."""
    if not shape or values.size > SMALL_INDEX or not values.size:
        return False
    return small_within(values, min(shape))


def _picks_any(layout: tuple, arrays: list, host: list) -> bool:
    """Whether the index arrays broadcast to a non-empty shape: NumPy checks the bounds
    of the indices it uses, so none when they pick no element (``x[[5], []]``) or do not
    broadcast (the shape error comes first)."""
    if host and len(host) == len(arrays) and bool not in map(type, layout):   # host alone
        shape = host[0][1].shape
        for _, values, _ in host:
            if values.shape != shape:
                break
        else:   # of one shape: whether it is empty
            return math.prod(shape) > 0
    if any(a is not None and a.dtype == np.bool_ for a in arrays):
        return True  # an NArray mask: how many it picks is not known here
    shapes = [a.shape for a in arrays if a is not None] + [v.shape for _, v, _ in host]
    shapes += [(int(item),) for item in layout if scalar_masks.is_scalar_mask(item)]
    try:
        return math.prod(np.broadcast_shapes(*shapes)) > 0
    except ValueError:
        return False


def _is_scalar_mask(item) -> bool:
    """Whether an index item is a 0-d boolean (a Python or NumPy bool, a 0-d bool array)."""
    if isinstance(item, (bool, np.bool_)):
        return True
    return isinstance(item, (NArray, np.ndarray)) and item.ndim == 0 and (
        item.dtype == np.bool_)


def _scalar_mask_value(item) -> bool:
    """A 0-d boolean index as the Python bool a layout holds (an NArray is read: waits)."""
    if isinstance(item, NArray):
        item = item.to_numpy()
    return bool(item)


def _index_arrays(x: NArray, item, layout: list) -> tuple:
    """``(host integer index arrays, whether they need no bounds check)`` for one index
    item: itself, or a mask's ``nonzero()`` (within the axes it matches), or a range's
    values (checked here)."""
    if type(item) is range:
        return _range_index(x, item, layout)
    if isinstance(item, NArray):  # a mask: the result's shape depends on its values
        item = to_narray(item, "index").to_numpy()
    values = np.asarray(item)
    if values.size == 0 and values.dtype.kind == "f":
        values = values.astype(np.intp)
    _check_index_dtype(values.dtype)
    if values.dtype != np.bool_:
        return (values.astype(np.intp, copy=False),), False
    axis = sum(1 for it in layout if scalar_masks.consumes_axis(it))
    if Ellipsis in layout or x.shape[axis:axis + values.ndim] != values.shape:
        _check_mask_shape(x, values, layout)
    return tuple(p.astype(np.intp, copy=False) for p in np.nonzero(values)), True


def _range_index(x: NArray, item: range, layout: list) -> tuple:
    """``_index_arrays`` of a ``range``: its values as ``intp`` (what NumPy reads it as),
    marked checked when its first and last values are within the axis it indexes (else
    ``check_index_array`` raises NumPy's error)."""
    values = range_values(item)
    if not item or Ellipsis in layout:
        return (values,), not item
    axis = sum(1 for it in layout if scalar_masks.consumes_axis(it))
    if axis >= len(x.shape):
        return (values,), False
    return (values,), range_within(item, x.shape[axis])


def _check_mask_shape(x: NArray, mask: np.ndarray, layout: list) -> None:
    if Ellipsis in layout:
        raise ShapeIndexError("a boolean mask after an Ellipsis is not supported; index "
                              "without the Ellipsis")
    axis = sum(1 for it in layout if scalar_masks.consumes_axis(it))
    for i, n in enumerate(mask.shape):
        size = x.shape[axis + i] if axis + i < x.ndim else None
        if size != n:
            raise ShapeIndexError(f"boolean index did not match indexed array along axis "
                                  f"{axis + i}; size of axis is {size} but size of "
                                  f"corresponding boolean axis is {n}")


def _check_index_dtype(dtype) -> None:
    if dtype.kind not in "iub":
        raise ShapeIndexError("arrays used as indices must be of integer (or boolean) type")
