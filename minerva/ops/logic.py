"""Ops of NumPy's logic functions beyond the ufuncs: ``isclose`` (``allclose``,
``array_equal`` and ``array_equiv`` are built of ops in the face)."""
from __future__ import annotations

import numpy as np

from minerva.ops.dtypes import numpy_dtype
from minerva.ops.elementwise import broadcast_shape, mixed_args
from minerva.ops.kernels import call
from minerva.ops.registry import ArraySpec, register


def _isclose_infer(*specs, layout, rtol, atol, equal_nan):
    operands = mixed_args(layout, specs)
    numpy_dtype("isclose", np.isclose, *operands)
    return (ArraySpec(broadcast_shape("isclose", *specs), np.dtype(np.bool_)),)

def _isclose_impl(xp, *arrays, out, layout, rtol, atol, equal_nan):
    a, b = mixed_args(layout, arrays)
    out[...] = call(xp, "isclose", a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


register("isclose", _isclose_infer, _isclose_impl, elementwise=True)
