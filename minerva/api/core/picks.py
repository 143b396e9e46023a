"""Integer-array indexing at once: ``x[rows, cols]``, ``x[idx]``, ``x[range(n), y] -= 1``,
``x[:, order]``, ``x[:, mask]`` where every index item is an integer array (a ``range``, a
list of ints, a NumPy array, an NArray) of one shape or a 1-D mask (its ``nonzero()``), on
consecutive axes of ``x`` after full slices alone (full slices after them are dropped),
picking at least one element. Host index arrays are read as they are, bounds-checked
here (a range by its ends); NArray ones are the op's inputs, checked by the kernel. The
twins of ``take_index`` and ``put_index`` index with the arrays in one NumPy call
(``minerva.api.core.at_once`` runs the plans made here); anything else — other items, shapes that differ, an
index out of bounds (NumPy's error, raised by the general way), a value that does not
fit or reads ``x`` — goes the general way of ``minerva.api.core.indexing``."""
from __future__ import annotations

import math

import numpy as np

from minerva.narray import HOST_READS, NArray
from minerva.ops.dtypes import NUMERIC_KINDS
from minerva.ops.elementwise import ARRAY, fits
from minerva.ops.indexing import (PUT, SCATTER_ADD, SMALL_INDEX, TAKE, add_by_indices,
                                  put_by_indices, range_values,
                                  range_within, small_within, take_by_indices)
from minerva.ops.registry import ArraySpec

PICK_TAKE = TAKE.twin(take_by_indices)
PICK_PUT = PUT.twin(put_by_indices)
PICK_ADD = SCATTER_ADD.twin(add_by_indices)

FULL = slice(None)
PICKED_KINDS = NUMERIC_KINDS + "SU"
"""The dtype kinds picked at once: numbers, bytes and strings (a CPU device's, gathered by
the Python lean path where the C one declines)."""


def host_picks(x: NArray, items: tuple):
    """``(NArray indices, host ones as (position, array or full slice), the shape
    picked)`` of index ``items`` when it is integer arrays of one non-empty shape (or
    1-D masks, as the integers of their ``nonzero()``) on consecutive axes of ``x`` after
    full slices alone; None for any other index (or one out of bounds: the general way
    raises)."""
    shape = x._spec.shape
    k = len(items)
    while k and type(items[k - 1]) is slice and items[k - 1] == FULL:
        k -= 1
    lead = 0
    while lead < k and type(items[lead]) is slice and items[lead] == FULL:
        lead += 1
    if lead == k or k > len(shape):
        return None
    device, host, picked = [], [(axis, FULL) for axis in range(lead)], None
    for axis in range(lead, k):
        item = items[axis]
        if type(item) is NArray and item._spec.dtype.kind in "iu":
            spec = item._spec
            if not spec.shape:
                return None
            device.append(item)
            item_shape = spec.shape
        else:
            values = _host_values(item, shape[axis], x._storage.engine)
            if values is None:
                return None
            host.append((axis, values))
            item_shape = values.shape
        if picked is None:
            picked = item_shape
        elif item_shape != picked:
            return None
    if not math.prod(picked):
        return None
    return device, tuple(host), shape[:lead] + picked + shape[k:]


def _host_values(item, n: int, engine):
    """A host index item as an integer NumPy array within ``-n .. n-1`` (a 1-D mask of
    ``n``, a NumPy one or a computed NArray of ``engine``: its ``nonzero()``); None for
    any other item."""
    kind = type(item)
    if kind is range:
        return range_values(item) if item and range_within(item, n) else None
    if kind is list:
        listed = _listed_ints(item)
        if listed is None or not (-n <= min(listed) and max(listed) < n):
            return None
        return np.array(listed, dtype=np.intp)
    if kind is NArray:
        return _mask_positions(item, n, engine)
    if kind is not np.ndarray or not item.ndim:
        return None
    if item.dtype == np.bool_:
        return np.flatnonzero(item) if item.shape == (n,) else None
    if item.dtype.kind not in "iu":
        return None
    if item.size <= SMALL_INDEX:
        return item if small_within(item, n) else None
    return item if -n <= item.min() and item.max() < n else None


def _mask_positions(mask: NArray, n: int, engine):
    """The positions of a computed 1-D boolean NArray of ``n`` elements of ``engine``
    (read now, with no wait, where host reads are not refused), or None (the general
    way refuses another runtime's)."""
    data = mask._storage.current
    if mask._spec.dtype != np.bool_ or mask._spec.shape != (n,) or not data.done or \
            mask._storage.engine is not engine or HOST_READS.refuse is not None:
        return None   # (a jit capture refuses host reads: the general way records it)
    return np.flatnonzero(mask.to_numpy())


def _listed_ints(item: list):
    """A short list of integers as Python ints: ints, NumPy integers and 0-d integer
    NArrays (``[k, p]`` with ``p = k + np.argmax(...)``: read now, as NumPy reads its
    scalar); None for any other list (a bool makes it a mask)."""
    if not item or len(item) > SMALL_INDEX:
        return None
    listed = []
    for v in item:
        kind = type(v)
        if kind is int:
            listed.append(v)
        elif kind is NArray and not v._spec.shape and v._spec.dtype.kind in "iu":
            listed.append(int(v))
        elif isinstance(v, np.integer):
            listed.append(int(v))
        else:
            return None
    return listed


def take_plan(x: NArray, picks):
    """``(twin, attrs, inputs, spec)`` gathering ``x[picks]``, or None."""
    device, host, shape = picks
    dtype = x._spec.dtype
    if dtype.kind not in PICKED_KINDS:
        return None
    return PICK_TAKE, {"host": host}, [x] + device, ArraySpec(shape, dtype)


def put_plan(x: NArray, picks, value, scalar: bool, twin=PICK_PUT):
    """``(twin, attrs, operands)`` writing ``x[picks] = value`` (a scalar already
    converted to ``x``'s dtype, or an NArray; with ``twin`` ``PICK_ADD``, adding it as
    ``numpy.add.at``), or None."""
    device, host, shape = picks
    written = x._storage
    for index in device:
        if index._storage is written:
            return None
    if scalar:
        return twin, {"host": host, "value": value}, device
    if value._storage is written or not fits(value.shape, shape):
        return None
    return twin, {"host": host, "value": ARRAY}, [value] + device
