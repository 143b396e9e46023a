"""``numpy.linalg``'s norms and other numbers of matrices: ``norm``, ``vector_norm``,
``matrix_norm``, ``cond``, ``matrix_power``, ``matrix_rank``, and the array API's
``diagonal`` and ``trace`` (over the last two axes), over stacks ``(..., M, N)``.
"""
from __future__ import annotations

import operator

import numpy as np

from minerva.api.core.reductions import sum as _sum
from minerva.api.core.manipulation import explicit_view, view_of
from minerva.builder import build, to_narray
from minerva.common.errors import ShapeError
from minerva.narray import NArray
from minerva.ops import registry

_OPS = registry.get


def norm(x, ord=None, axis=None, keepdims: bool = False) -> NArray:
    """Matrix or vector norm (``numpy.linalg.norm``): ``ord`` None, 'fro', 'nuc', inf,
    -inf, 0, ±1, ±2 or any p for vectors; ``axis`` None, an int or a pair."""
    x = to_narray(x, "norm")
    if axis is not None and not isinstance(axis, tuple):
        try:
            axis = (operator.index(axis),)
        except TypeError:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") \
                from None
    attrs = {"ord": ord, "axis": axis, "keepdims": bool(keepdims)}
    return build(_OPS("norm"), [x], attrs)

def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2) -> NArray:
    """The vector norm over ``axis`` (None: all elements; an int; a tuple of axes)."""
    x = to_narray(x, "vector_norm")
    if isinstance(axis, list):
        axis = tuple(axis)
    attrs = {"ord": ord, "axis": axis, "keepdims": bool(keepdims)}
    return build(_OPS("vector_norm"), [x], attrs)

def matrix_norm(x, /, *, keepdims: bool = False, ord="fro") -> NArray:
    """The matrix norm of each matrix in ``x`` (its last two axes)."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)

def cond(x, p=None) -> NArray:
    """The condition number of each matrix in ``x`` in the norm ``p`` (None: 2-norm by
    SVD)."""
    return build(_OPS("cond"), [to_narray(x, "cond")], {"p": p})

# ---- matrix functions ------------------------------------------------------------------

def matrix_power(a, n) -> NArray:
    """Each square matrix of ``a`` to the integer power ``n`` (negative: of its
    inverse)."""
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError("exponent must be an integer") from None
    return build(_OPS("matrix_power"), [to_narray(a, "matrix_power")], {"n": n})

def matrix_rank(A, tol=None, hermitian: bool = False, *, rtol=None) -> NArray:
    """The number of singular values of each matrix in ``A`` above ``tol`` (default:
    ``S.max() * max(M, N) * eps``, or ``rtol`` times the largest); for ``A`` of fewer
    than 2 dimensions, 1 unless all are zero. Tolerances are scalars."""
    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    attrs = {"tol": None if tol is None else _tolerance(tol),
             "rtol": None if rtol is None else _tolerance(rtol), "hermitian": bool(hermitian)}
    return build(_OPS("matrix_rank"), [to_narray(A, "matrix_rank")], attrs)

def _tolerance(value):
    if isinstance(value, NArray) or np.ndim(value) != 0:
        raise TypeError("matrix_rank: minerva takes scalar tolerances")
    return value[()] if isinstance(value, np.ndarray) else value

# ---- diagonal, trace -------------------------------------------------------------------

def diagonal(x, /, *, offset: int = 0) -> NArray:
    """A view of the ``offset`` diagonal of each matrix in ``x`` (its last two axes)."""
    x = to_narray(x, "diagonal")
    if x.ndim < 2:
        raise ShapeError("diagonal: diag requires an array of at least two dimensions")
    shape, strides, start = explicit_view(x)
    m, n = shape[-2:]
    row, col = strides[-2:]
    offset = operator.index(offset)
    length = max(0, min(m, n - offset) if offset >= 0 else min(m + offset, n))
    if length:
        start += offset * col if offset >= 0 else -offset * row
    return view_of(x, (shape[:-2] + (length,), strides[:-2] + (row + col,), start))

def trace(x, /, *, offset: int = 0, dtype=None) -> NArray:
    """The sum of the ``offset`` diagonal of each matrix in ``x``."""
    return _sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


__all__ = ["cond", "diagonal", "matrix_norm", "matrix_power", "matrix_rank", "norm", "trace",
           "vector_norm"]
