"""Boolean-mask indexing at once: ``x[mask]`` and ``x[mask] = values`` where the index is
one boolean array of ``x``'s leading shape, nothing records at the seam and the op runs at
once on a CPU device (``minerva.api.core.at_once`` runs the plans made here). The kernel indexes by the mask itself, as
NumPy does, not by the integer arrays of its ``nonzero()``: those cost several times the
gather itself (``np.nonzero`` of a 50x60 mask takes longer than ``Z[I]`` on it). The result
is the same elements in the same order; where these decline, ``minerva.api.core.indexing``
does it the general way, with the mask's host values already read."""
from __future__ import annotations

import numpy as np

from minerva.narray import NArray
from minerva.ops.dtypes import NUMERIC_KINDS
from minerva.ops.elementwise import fits
from minerva.ops.indexing import PUT, TAKE, fill_by_mask, put_by_mask, take_by_mask
from minerva.ops.registry import ArraySpec


def mask_of(x: NArray, items: tuple):
    """The one boolean array (an NArray, or a NumPy one) of ``x``'s leading shape that
    index ``items`` is; None for any other index."""
    if len(items) != 1:
        return None
    item = items[0]
    kind = type(item)
    if kind is NArray:
        spec = item._spec
    elif kind is np.ndarray:
        spec = item
    else:
        return None
    shape = spec.shape
    if spec.dtype != np.bool_ or not shape or x._spec.shape[:len(shape)] != shape:
        return None
    return item


MASK_TAKE = TAKE.twin(take_by_mask)
MASK_PUT = PUT.twin(put_by_mask)
MASK_FILL = PUT.twin(fill_by_mask)
"""``take_index`` and ``put_index`` run by one mask (their kernels index by it; attribute
``mask``, a host array, or input 0, an NArray, for a scalar written)."""


def take_plan(x: NArray, mask: np.ndarray):
    """``(twin, attrs, inputs, spec)`` gathering ``x[mask]`` (host ``mask``), or None
    where the general way must do it."""
    spec = x._spec
    if spec.dtype.kind not in NUMERIC_KINDS:
        return None
    picked = ArraySpec((int(np.count_nonzero(mask)),) + spec.shape[mask.ndim:], spec.dtype)
    return MASK_TAKE, {"mask": mask}, [x], picked


def put_plan(x: NArray, mask: np.ndarray, values: NArray):
    """``(twin, attrs, operands)`` writing ``x[mask] = values``, or None (the general way
    writes it, or raises for values that do not fit)."""
    if values._storage is x._storage:   # the general way copies it first
        return None
    if not fits(values.shape, (int(np.count_nonzero(mask)),) + x._spec.shape[mask.ndim:]):
        return None
    return MASK_PUT, {"mask": mask}, [values]


def fill_plan(x: NArray, mask: NArray, value):
    """``(twin, attrs, operands)`` writing ``x[mask] = value``, a scalar already converted
    to ``x``'s dtype, through NArray ``mask`` of ``x``'s leading shape (not waited for:
    the general way takes it while the mask is pending), or None."""
    if mask._storage is x._storage or mask_of(x, (mask,)) is None:
        return None
    return MASK_FILL, {"value": value}, [mask]
