"""The copy op: moves a value between devices (or duplicates it on one).

It runs on the destination device. Host arrays are NumPy arrays; device arrays are
anything with ``.get()`` (CuPy). Devices may run copies their own faster way.
"""
from __future__ import annotations

import numpy as np

from minerva.ops.registry import ArraySpec, register

COPY_PRIORITY = -1
"""Copies go ahead of other ready ops so transfers start early and overlap compute."""


def _copy_infer(x):
    return (ArraySpec(x.shape, x.dtype),)


def _copy_impl(xp, x, *, out):
    if isinstance(out, np.ndarray):
        out[...] = x if isinstance(x, np.ndarray) else x.get()
    else:
        out[...] = xp.asarray(x)


def _assign_infer(x, *, dtype):
    return (ArraySpec(x.shape, dtype),)


def _assign_impl(xp, x, *, out, dtype):
    xp.copyto(out, x, casting="unsafe")


def _byteswap_infer(x):
    return (ArraySpec(x.shape, x.dtype),)


def _byteswap_impl(xp, x, *, out):
    """Each element's bytes reversed (each half of a complex value's), over any ``xp``."""
    parts = 2 if x.dtype.kind == "c" else 1
    size = x.dtype.itemsize // parts
    flat = xp.ascontiguousarray(x.reshape(-1))
    swapped = flat.view(xp.uint8).reshape(-1, parts, size)[..., ::-1]
    out[...] = xp.ascontiguousarray(swapped).reshape(-1).view(x.dtype).reshape(x.shape)


COPY = register("copy", _copy_infer, _copy_impl, priority=COPY_PRIORITY, elementwise=True)
ASSIGN = register("assign", _assign_infer, _assign_impl, elementwise=True)
"""``assign(x, dtype=...)`` into ``out=``: NumPy's item assignment, ``x`` broadcast to the
written view and cast to its ``dtype`` (unsafe casting, as ``a[...] = x``)."""
BYTESWAP = register("byteswap", _byteswap_infer, _byteswap_impl, elementwise=True)
"""``x.byteswap()`` (NumPy's method): the bytes of each element reversed (no gradient)."""
