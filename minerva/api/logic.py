"""NumPy's logic functions beyond the ufuncs (``isfinite``, ``logical_and`` ... are
``minerva.api.core.ufuncs``; ``all`` and ``any`` are reductions): ``isclose`` (an op,
returns at once), and ``allclose``, ``array_equal`` and ``array_equiv``, which build the
comparison as ops and wait for its one value (a Python bool).
"""
from __future__ import annotations

import numpy as np

from minerva.api.core.reductions import all as _all
from minerva.api.core.ufuncs import FUNCTIONS
from minerva.builder import build, to_narray
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.dtypes import is_scalar
from minerva.ops.elementwise import ARRAY

_ISCLOSE = registry.get("isclose")
_EQUAL, _ISNAN = FUNCTIONS["equal"], FUNCTIONS["isnan"]
_LOGICAL_AND, _LOGICAL_OR = FUNCTIONS["logical_and"], FUNCTIONS["logical_or"]


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> NArray:
    """Element-wise ``|a - b| <= atol + rtol * |b|`` (NaNs equal when ``equal_nan``);
    ``rtol`` and ``atol`` are scalars."""
    layout, arrays = [], []
    for value in (a, b):
        if type(value) is not NArray and is_scalar(value) and not isinstance(value, NArray):
            layout.append(value[()] if isinstance(value, np.ndarray) else value)
        else:
            layout.append(ARRAY)
            arrays.append(to_narray(value, "isclose"))
    if not arrays:
        layout[0], arrays = ARRAY, [to_narray(a, "isclose")]
    for name, tolerance in (("rtol", rtol), ("atol", atol)):
        if not is_scalar(tolerance) or isinstance(tolerance, NArray):
            raise TypeError(f"isclose: {name} must be a scalar in minerva")
    attrs = {"layout": tuple(layout), "rtol": rtol, "atol": atol,
             "equal_nan": bool(equal_nan)}
    return build(_ISCLOSE, arrays, attrs)

def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether every pair of elements is close (see ``isclose``). Waits for one value."""
    return bool(_all(isclose(a, b, rtol, atol, equal_nan)))

def array_equal(a1, a2, equal_nan=False) -> bool:
    """Whether both arrays have one shape and equal elements (NaNs equal when
    ``equal_nan``). Waits for one value (not at all when the shapes differ)."""
    x, y = to_narray(a1, "array_equal"), to_narray(a2, "array_equal")
    if x.shape != y.shape:
        return False
    same = _EQUAL(x, y)
    if equal_nan and (x.dtype.kind in "fc" or y.dtype.kind in "fc"):
        both_nan = _LOGICAL_AND(_ISNAN(x), _ISNAN(y))
        same = _LOGICAL_OR(same, both_nan)
    return bool(_all(same))

def array_equiv(a1, a2) -> bool:
    """Whether both arrays broadcast to one shape and are equal there. Waits for one
    value (not at all when the shapes do not broadcast)."""
    x, y = to_narray(a1, "array_equiv"), to_narray(a2, "array_equiv")
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return False
    return bool(_all(_EQUAL(x, y)))


__all__ = ["allclose", "array_equal", "array_equiv", "isclose"]
