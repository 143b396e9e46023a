"""Checks of the arguments the chapters share, with NumPy's errors: axes (one, several, in
the caller's order), ints, and index arrays held on the host. Pure functions: they build
nothing."""
from __future__ import annotations

import operator

import numpy as np

from minerva.common.errors import DTypeError, ShapeIndexError
from minerva.ops.reductions import normalize_axis


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


def ordered_axes(name: str, axis, ndim: int):
    """``axis`` (None, an int or a tuple) as a tuple of non-negative ints in the caller's
    order (NumPy pairs weights with axes in that order); None stays None."""
    normalize_axis(name, axis, ndim)
    if axis is None:
        return None
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    return tuple(operator.index(a) % ndim if ndim else 0 for a in items)

def int_axis(name: str, axis, ndim: int):
    """``axis`` as one non-negative int (None stays None); TypeError for a tuple, as
    NumPy's functions that take a single axis."""
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        raise TypeError(f"{name}: 'tuple' object cannot be interpreted as an integer")
    return normalize_axis(name, axis, ndim)[0]


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


def check_bounds(values: np.ndarray, n: int, axis: int) -> None:
    """IndexError now when a host index is outside ``[-n, n)``."""
    if values.size and (values.min() < -n or values.max() >= n):
        bad = values[(values < -n) | (values >= n)].flat[0]
        raise ShapeIndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
