"""``mv.lib.stride_tricks``: ``as_strided`` and ``sliding_window_view`` as native views.

Both make a handle on the array's storage with new strides (no op, no copy, no wait), as
NumPy's make a view: writes through a writeable view reach the array, and later writes to
the array are seen through the view. ``as_strided`` refuses (ValueError) a view reaching
outside the array's memory, where NumPy's would read or write arbitrary memory.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from minerva.api.core.manipulation import explicit_view, view_of
from minerva.builder import to_narray
from minerva.narray import NArray, storage_of
from minerva.ops.views import c_strides


def as_strided(x, shape=None, strides=None, subok=False, writeable=True) -> NArray:
    """A view of ``x`` with the given ``shape`` and byte ``strides`` (``x``'s own by
    default; a C-contiguous ``x`` reshaped gets C strides), starting at ``x``'s first
    element, as ``numpy.lib.stride_tricks.as_strided``; read-only unless ``writeable``."""
    x = to_narray(x, "as_strided")
    _, own_strides, offset = explicit_view(x)
    shape = x.shape if shape is None else tuple(int(n) for n in shape)
    if strides is None:
        strides = c_strides(shape, x.itemsize) if x.flags.c_contiguous else own_strides
    strides = tuple(int(s) for s in strides)
    if len(strides) != len(shape):
        raise ValueError("mismatch in length of strides and shape")
    _check_inside(x, shape, strides, offset)
    return view_of(x, (shape, strides, offset), readonly=not writeable)


def _check_inside(x: NArray, shape: tuple, strides: tuple, offset: int) -> None:
    if any(n < 0 for n in shape):
        raise ValueError("negative dimensions are not allowed")
    if 0 in shape:
        return
    low = offset + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    high = offset + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + x.itemsize
    if low < 0 or high > storage_of(x).current.spec.nbytes:
        raise ValueError(f"as_strided: shape {shape} with strides {strides} reaches "
                         "outside the array's memory")


def sliding_window_view(x, window_shape, axis=None, *, subok=False,
                        writeable=False) -> NArray:
    """A read-only view (writeable if asked) of every window of ``window_shape`` over
    ``x`` (along ``axis``, every axis by default), as
    ``numpy.lib.stride_tricks.sliding_window_view``: the window axes come last."""
    x = to_narray(x, "sliding_window_view")
    stand_in = np.broadcast_to(np.empty((), x.dtype), x.shape)  # NumPy's checks, no memory
    shape = np.lib.stride_tricks.sliding_window_view(stand_in, window_shape, axis).shape
    axes = tuple(range(x.ndim)) if axis is None else normalize_axis_tuple(
        axis, x.ndim, allow_duplicate=True)
    _, strides, offset = explicit_view(x)
    window_strides = strides + tuple(strides[ax] for ax in axes)
    return view_of(x, (shape, window_strides, offset), readonly=not writeable)
