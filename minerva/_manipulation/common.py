"""Argument handling shared by the manipulation functions: axes, index arrays held on
the host, and gathering along one axis."""
from __future__ import annotations

import operator

import numpy as np

from minerva.builder import build, to_narray, upload
from minerva.common.errors import DTypeError, ShapeIndexError
from minerva.narray import NArray
from minerva.ops.elementwise import ARRAY
from minerva.ops.indexing import TAKE


def axis_index(name: str, axis, ndim: int) -> int:
    """``axis`` as a non-negative int below ``ndim``; an error of NumPy's AxisError family
    (both ValueError and IndexError) when out of range, TypeError when not an int."""
    try:
        value = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: '{type(axis).__name__}' object cannot be interpreted "
                        "as an integer") from None
    if not -ndim <= value < ndim:
        raise ShapeIndexError(f"{name}: axis {value} is out of bounds for array of "
                              f"dimension {ndim}")
    return value % ndim


def axis_tuple(name: str, axis, ndim: int) -> tuple:
    """``axis`` (an int or a sequence of ints) as a tuple of distinct normalized axes."""
    items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    result = tuple(axis_index(name, a, ndim) for a in items)
    if len(set(result)) != len(result):
        raise ValueError(f"{name}: repeated axis")
    return result


def as_int(name: str, value) -> int:
    """``value`` as a Python int (TypeError, as NumPy's, for floats and other objects)."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: '{type(value).__name__}' object cannot be interpreted as "
                        "an integer") from None


def host_indices(name: str, indices) -> np.ndarray:
    """Host index values as ``intp``: lists convert as NumPy converts them (floats
    truncate), arrays must cast to ``intp`` under 'same_kind' (TypeError otherwise)."""
    if isinstance(indices, np.ndarray) or isinstance(indices, np.generic):
        values = np.asarray(indices)
        if not np.can_cast(values.dtype, np.intp, "same_kind"):
            raise DTypeError(f"{name}: Cannot cast array data from {values.dtype!r} to "
                             f"{np.dtype(np.intp)!r} according to the rule 'same_kind'")
        return values.astype(np.intp)
    try:
        return np.asarray(indices, dtype=np.intp)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: indices must be integers: {exc}") from None


def device_indices(name: str, indices: NArray) -> NArray:
    """NArray index values, cast to ``intp`` when they are bool or narrower integers;
    TypeError for other dtypes."""
    if indices.dtype.kind not in "biu" or not np.can_cast(indices.dtype, np.intp,
                                                          "same_kind"):
        raise DTypeError(f"{name}: Cannot cast array data from {indices.dtype!r} to "
                         f"{np.dtype(np.intp)!r} according to the rule 'same_kind'")
    return to_narray(indices, name, np.intp)


def check_bounds(values: np.ndarray, n: int, axis: int) -> None:
    """IndexError now when a host index is outside ``[-n, n)``."""
    if values.size and (values.min() < -n or values.max() >= n):
        bad = values[(values < -n) | (values >= n)].flat[0]
        raise ShapeIndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")


def take_axis(x: NArray, positions, axis: int, out=None) -> NArray:
    """``x`` gathered at ``positions`` (host ``intp`` values already in bounds, or an
    NArray) along ``axis``: a new array, as ``numpy.take``."""
    if not isinstance(positions, NArray):
        positions = upload(np.asarray(positions, dtype=np.intp))
    layout = (slice(None),) * axis + (ARRAY,)
    return build(TAKE, [x, positions], {"layout": layout}, out)
