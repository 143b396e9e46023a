"""``x ** y`` and ``x **= y`` as NumPy's ndarray computes them, to the bit.

NumPy's ``ndarray.__pow__`` and ``__ipow__`` (``fast_scalar_power``) do not call
``numpy.power`` for three exponents: an exact Python ``int`` 2 is ``numpy.square`` (for an
array of any dtype but object: ``bool_array ** 2`` is ``int8``), an exact ``int`` -1 is
``numpy.reciprocal`` and an exact ``float`` 0.5 is ``numpy.sqrt`` (for float and complex
arrays only). For complex arrays these give other last bits than ``numpy.power``, so
minerva takes the same ufuncs. ``x ** 2.0``, ``x ** np.int64(2)``, ``x ** True``,
``2 ** x`` and ``numpy.power(x, 2)`` are ``numpy.power``, as in NumPy; so is ``s ** y`` of
a NumPy scalar (``s`` a minerva scalar: NumPy's scalars have no such fast path).
NArray's ``__pow__`` and ``__ipow__`` (``ufuncs.power_method``) ask ``fast_power``.
"""
from __future__ import annotations

import numpy as np


def fast_power(dtype: np.dtype, exponent) -> str | None:
    """The ufunc NumPy's ndarray ``**`` takes in place of ``power`` for an array of
    ``dtype`` and ``exponent``, or None."""
    kind = type(exponent)
    if kind is int:
        if exponent == 2:
            return "square"
        if exponent == -1 and dtype.kind in "fc":
            return "reciprocal"
    elif kind is float and exponent == 0.5 and dtype.kind in "fc":
        return "sqrt"
    return None
