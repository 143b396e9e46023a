"""Ops of NumPy's set routines: ``isin`` (``unique`` and its family compute on the host:
their shapes depend on the values)."""
from __future__ import annotations

import numpy as np

from minerva.ops import dtypes
from minerva.ops.dtypes import numpy_dtype
from minerva.ops.kernels import call
from minerva.ops.registry import ArraySpec, register


def _isin_infer(element, test, *, assume_unique, invert, kind):
    dtypes.check_supported("isin", element)
    dtypes.check_supported("isin", test)
    if kind is not None:
        numpy_dtype("isin", np.isin, element, test, kind=kind)
    return (ArraySpec(element.shape, np.dtype(np.bool_)),)

def _isin_impl(xp, element, test, *, out, assume_unique, invert, kind):
    extra = {} if kind is None else {"kind": kind}
    out[...] = call(xp, "isin", element, test, assume_unique=assume_unique, invert=invert,
                    **extra)


register("isin", _isin_infer, _isin_impl)
