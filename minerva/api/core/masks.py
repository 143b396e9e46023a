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
from minerva.ops.elementwise import fits
from minerva.ops.indexing import PUT, TAKE, fill_by_mask, put_by_mask, take_by_mask
from minerva.ops.registry import ArraySpec

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


MASK_TAKE = TAKE.twin(take_by_mask)
MASK_PUT = PUT.twin(put_by_mask)
MASK_FILL = PUT.twin(fill_by_mask)
"""``take_index`` and ``put_index`` run by one mask (their kernels index by it; attribute
``mask``, a host array, or input 0, an NArray, for a scalar written)."""


def take_masked(x: NArray, mask: np.ndarray):
    """``x[mask]`` gathered at once (a new NArray), or None where the general way must do
    it (nothing done then)."""
    spec = x._spec
    if SEAM.hooks or spec.dtype.kind not in NUMERIC_KINDS:
        return None
    picked = ArraySpec((int(np.count_nonzero(mask)),) + spec.shape[mask.ndim:], spec.dtype)
    system = Runtime.system or get_system()
    engine, attrs = system.engine, {"mask": mask}
    if engine.hooks.active:   # a trace shows the mask's upload, as the general way makes it
        return None
    result = ACCELERATOR.run_op(MASK_TAKE, attrs, [x], picked)
    if result is not None:
        return result
    storage = _on_host(engine, MASK_TAKE, attrs, [x], picked, system.current_device())
    return None if storage is None else NArray(storage, None, picked)


def put_masked(x: NArray, mask: np.ndarray, values: NArray) -> bool:
    """``x[mask] = values`` written at once; whether it was (else nothing done: the
    general way writes it, or raises for values that do not fit)."""
    written = x._storage
    if SEAM.hooks or values._storage is written:   # the general way copies it first
        return False
    if not fits(values.shape, (int(np.count_nonzero(mask)),) + x._spec.shape[mask.ndim:]):
        return False
    return _written(x, MASK_PUT, {"mask": mask}, values)


def fill_masked(x: NArray, mask: NArray, value) -> bool:
    """``x[mask] = value``, a scalar already converted to ``x``'s dtype, through NArray
    ``mask`` of ``x``'s leading shape, written at once when the mask is computed; whether
    it was (else nothing done: the general way writes it, without waiting for the
    mask)."""
    spec, shape = x._spec, mask._spec.shape
    if SEAM.hooks or mask._storage is x._storage or mask._spec.dtype != np.bool_ \
            or not shape or spec.shape[:len(shape)] != shape:
        return False
    return _written(x, MASK_FILL, {"value": value}, mask)


def _written(x: NArray, twin, attrs: dict, operand: NArray) -> bool:
    """``twin`` over ``operand`` written into ``x`` at once, in C or else on the Python
    lean path, while no trace records; whether it was."""
    engine = (Runtime.system or get_system()).engine
    if engine.hooks.active:
        return False
    if ACCELERATOR.run_write(twin, attrs, [operand], x) is not None:
        return True
    current = x._storage.current
    return _on_host(engine, twin, attrs, [operand], current.spec, current.device_id,
                    x._storage, x._view) is not None


def _on_host(engine, twin, attrs, inputs, spec, device_id: int, written=None,
             out_view=None):
    """``Engine.run_lean`` of ``twin`` over NArrays ``inputs`` on CPU device
    ``device_id`` (NumPy's arrays: the kernel reads a host mask as it is); the output's
    storage, or None (nothing done)."""
    if engine.devices.table[device_id].xp is not np:
        return None
    views = None
    if any(x._view is not None for x in inputs):
        views = [x._view for x in inputs]
    return engine.run_lean(twin, attrs, [x._storage for x in inputs], spec, device_id,
                           views, None, written, out_view)
