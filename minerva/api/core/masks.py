"""Boolean-mask indexing at once: ``x[mask]`` and ``x[mask] = values`` where the index is
one boolean array of ``x``'s leading shape, nothing records at the seam and the op runs at
once on a CPU device (``Engine.run_host``). The kernel indexes by the mask itself, as
NumPy does, not by the integer arrays of its ``nonzero()``: those cost several times the
gather itself (``np.nonzero`` of a 50x60 mask takes longer than ``Z[I]`` on it). The result
is the same elements in the same order; where these decline, ``minerva.api.core.indexing``
does it the general way, with the mask's host values already read."""
from __future__ import annotations

import numpy as np

from minerva.builder import ACCELERATOR, SEAM, to_narray
from minerva.current import Runtime, get_system
from minerva.narray import NArray
from minerva.ops.dtypes import NUMERIC_KINDS
from minerva.ops.elementwise import ARRAY, fits
from minerva.ops.indexing import PUT, TAKE
from minerva.ops.registry import ArraySpec
from minerva.scheduler.direct import host_variant

MASK_LAYOUT = (ARRAY,)
"""The layout of ``x[mask]``: the mask is the one index array."""


def host_mask(x: NArray, items: tuple):
    """The host values of index ``items`` when they are one boolean array (an NArray, read
    now: the result's shape depends on them, or a NumPy one) of ``x``'s leading shape;
    None for any other index."""
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
    return to_narray(item, "index").to_numpy() if kind is NArray else item


def take_masked(x: NArray, mask: np.ndarray):
    """``x[mask]`` gathered at once (a new NArray), or None where the general way must do
    it (nothing done then)."""
    spec = x._spec
    if SEAM.hooks or spec.dtype.kind not in NUMERIC_KINDS:
        return None
    picked = ArraySpec((int(np.count_nonzero(mask)),) + spec.shape[mask.ndim:], spec.dtype)
    system = Runtime.system or get_system()
    engine, host = system.engine, ((1, mask),)
    if not engine.hooks.active:   # a trace shows the mask's upload: ``run_host`` declines
        result = ACCELERATOR.run_op(host_variant(TAKE), {"layout": MASK_LAYOUT,
                                                         "host": host}, [x], picked)
        if result is not None:
            return result
    storage = engine.run_host(TAKE, {"layout": MASK_LAYOUT}, [x._storage], host, picked,
                              system.current_device(),
                              None if x._view is None else [x._view])
    return None if storage is None else NArray(storage, None, picked)


def put_masked(x: NArray, mask: np.ndarray, values: NArray) -> bool:
    """``x[mask] = values`` written at once; whether it was (else nothing done: the
    general way writes it, or raises for values that do not fit)."""
    written = x._storage
    if SEAM.hooks or values._storage is written:   # the general way copies it first
        return False
    shape = x._spec.shape
    if not fits(values.shape, (int(np.count_nonzero(mask)),) + shape[mask.ndim:]):
        return False
    attrs = {"layout": MASK_LAYOUT, "shape": shape, "dtype": x._spec.dtype, "value": ARRAY}
    host = ((1, mask),)
    engine = (Runtime.system or get_system()).engine
    if not engine.hooks.active and ACCELERATOR.run_write(
            host_variant(PUT), dict(attrs, host=host), [values], x) is not None:
        return True
    current = written.current
    return engine.run_host(PUT, attrs, [values._storage], host, current.spec,
                           current.device_id, None if values._view is None
                           else [values._view], written, x._view) is not None


def fill_masked(x: NArray, mask: NArray, value) -> bool:
    """``x[mask] = value``, a scalar already converted to ``x``'s dtype, through NArray
    ``mask`` of ``x``'s leading shape, written at once in C (the accelerator) when the
    mask is computed; whether it was (else nothing done: the general way writes it,
    without waiting for the mask)."""
    spec, shape = x._spec, mask._spec.shape
    if SEAM.hooks or mask._storage is x._storage or mask._spec.dtype != np.bool_ \
            or not shape or spec.shape[:len(shape)] != shape:
        return False
    attrs = {"layout": MASK_LAYOUT, "shape": spec.shape, "dtype": spec.dtype,
             "value": value}
    return ACCELERATOR.run_write(PUT, attrs, [mask], x) is not None
