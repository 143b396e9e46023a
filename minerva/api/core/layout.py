"""Memory orders of new arrays, as NumPy lays them out.

``order='C'`` is row-major, ``'F'`` column-major, ``'A'`` F when the source is F- and not
C-contiguous (else C), ``'K'`` the order of the source's strides (C for a C-contiguous
source, F for an F-contiguous one). A copy in another order than C is a fresh buffer
holding the source's axes permuted into memory order, seen through the inverse
permutation: its strides and flags are NumPy's for that order, it owns its data, and every
later op reads it as any array.
"""
from __future__ import annotations

import numpy as np

from minerva.api.core.manipulation import in_memory_order, transpose
from minerva.builder import ACCELERATOR, COPY, EMPTY, SEAM, build, upload
from minerva.current import Runtime, get_system
from minerva.narray import NArray
from minerva.ops import registry, views
from minerva.ops.dtypes import NUMERIC_KINDS

_RESHAPE = registry.get("reshape")
ORDERS = ("C", "F", "A", "K")


def check_order(order, default: str = "K") -> str:
    """``order`` (None: ``default``), ValueError unless it is one of NumPy's orders."""
    if order is None:
        return default
    if order not in ORDERS:
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    return order


def memory_order(order: str, shape: tuple, strides: tuple, c_contiguous: bool,
                 f_contiguous: bool):
    """The axes of a copy in ``order`` of an array with these strides and flags, from the
    outermost in memory to the innermost, as NumPy lays it out; None for C order."""
    ndim = len(shape)
    if ndim <= 1 or 0 in shape or order == "C":
        return None
    if order == "F" or (order in "AK" and f_contiguous and not c_contiguous):
        return tuple(range(ndim))[::-1]
    if order == "A" or c_contiguous:
        return None
    axes = tuple(sorted(range(ndim), key=lambda axis: -abs(strides[axis])))
    return None if axes == tuple(range(ndim)) else axes


def fill_axes(shape: tuple, order, like=None):
    """The memory order (as ``memory_order`` gives it) of a new array of ``shape`` made by
    ``zeros``, ``ones``, ``empty`` or ``full`` with ``order`` (``'C'`` or ``'F'``) and
    ``like`` (None, or an array whose kind of result is an NArray's: minerva makes
    NArrays); NumPy's errors for others."""
    if like is not None and not hasattr(like, "__array_function__"):
        raise TypeError("The `like` argument must be an array-like that implements the "
                        "`__array_function__` protocol.")
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    return memory_order(order, shape, (), order == "C", order == "F")


def laid_out_as(x: NArray, order: str) -> bool:
    """Whether ``x`` is in memory order ``order`` already (``asarray`` gives it as it is)."""
    if order == "K":
        return True
    c, f = _contiguity(x)
    return {"C": c, "F": f, "A": c or f}[order]


def fresh_now(op_def, attrs: dict, inputs, spec) -> NArray | None:
    """The result of ``spec`` of an op with no floating-point error and no failure to
    meet (a fill of its dtype's values, a copy of a whole value, ``empty``) over whole
    NArrays ``inputs``, made at once on the current device (the C lean path, else the
    engine's ``run_new``) where nothing records at the seam; None where it takes
    ``build``'s way (nothing done)."""
    if SEAM.hooks or spec.dtype.kind not in NUMERIC_KINDS:
        return None
    result = ACCELERATOR.run_op(op_def, attrs, inputs, spec)   # the lean path in C
    if result is not None:
        return result
    system = Runtime.system or get_system()
    storage = system.engine.run_new(op_def, attrs, [x._storage for x in inputs], spec,
                                    system.current_device())
    return None if storage is None else NArray(storage, None, spec)


def copy_in(x: NArray, order: str) -> NArray:
    """A copy of ``x`` (a new storage) laid out in memory order ``order``."""
    if x._view is None and order != "F":  # C-ordered already: so is its copy
        return _whole_copy(x)
    axes = memory_order(order, x.shape, x.strides, *_contiguity(x))
    if axes is None:
        return c_ordered_copy(x)
    return in_memory_order(c_ordered_copy(transpose(x, axes)), axes)


def _whole_copy(x: NArray) -> NArray:
    """A copy of ``x``, a whole value (no view): C-ordered as it is."""
    result = fresh_now(COPY, EMPTY, (x,), x._spec)
    return build(COPY, [x]) if result is None else result


def _contiguity(x: NArray) -> tuple:
    """Whether ``x`` is C-contiguous, and whether it is F-contiguous (NumPy's flags)."""
    shape, strides, offset = views.of(x._spec, x._view)
    itemsize = x.itemsize
    return (x._view is None or views.is_contiguous((shape, strides, offset), itemsize),
            views.is_contiguous((shape[::-1], strides[::-1], offset), itemsize))


def c_ordered_copy(x: NArray) -> NArray:
    """A copy of ``x`` in C order (the copy op keeps a view's memory order, as an
    element-wise op does; a reshape to its own shape makes a C-ordered buffer)."""
    if x._view is None:
        return _whole_copy(x)
    return build(_RESHAPE, [x], {"shape": x.shape})


def upload_in(data: np.ndarray, order: str) -> NArray:
    """A copy of host array ``data`` on the current device, in memory order ``order``."""
    if data.ndim <= 1 or (order != "F" and data.flags.c_contiguous):   # C order
        return upload(data)
    axes = memory_order(order, data.shape, data.strides, data.flags.c_contiguous,
                        data.flags.f_contiguous)
    if axes is None:
        return upload(data)
    return in_memory_order(upload(data.transpose(axes)), axes)


__all__: list = []
