"""``minerva.linalg``: ``numpy.linalg`` on NArrays, and NumPy's top-level products.

``import minerva as np`` then ``np.linalg.norm(x)``, ``np.linalg.solve(a, b)``,
``np.linalg.svd(a)`` ... run as ops through the DAG, over stacks of matrices
``(..., M, N)`` where NumPy takes them. ``__all__`` holds only the names NumPy has at top
level (``np.einsum``, ``np.tensordot``, ``np.cross`` ...): ``minerva/__init__.py``
re-exports them. See doc/numpy/linalg.md for the differences from NumPy.
"""
from __future__ import annotations

import operator

import numpy as np

from minerva._linalg.products import (  # noqa: F401  (top-level names)
    cross, einsum, einsum_path, inner, kron, matrix_transpose, outer, tensordot, vdot,
    vecdot)
from minerva._linalg.solvers import (  # noqa: F401  (numpy.linalg's names)
    EigResult, EighResult, QRResult, SlogdetResult, SVDResult, cholesky, det, eig, eigh,
    eigvals, eigvalsh, inv, lstsq, pinv, qr, slogdet, solve, svd, svdvals, tensorinv,
    tensorsolve)
from minerva.builder import build, to_narray
from minerva.common.errors import ShapeError
from minerva.functions import (  # noqa: F401  (matmul: numpy.linalg.matmul)
    dot, explicit_view, matmul, ravel, reshape, view_of)
from minerva.functions import sum as _sum
from minerva.missing import missing_attribute
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.linalg.shared import LinAlgShapeError

LinAlgError = np.linalg.LinAlgError
_OPS = registry.get


# ---- norms ----------------------------------------------------------------------------------

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


# ---- matrix functions ---------------------------------------------------------------------------

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


def multi_dot(arrays, *, out=None) -> NArray:
    """``dot`` of several arrays in the cheapest order (NumPy's choice); the first may be
    1-D (a row), the last 1-D (a column), the others must be 2-D."""
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    if len(arrays) == 2:
        return dot(arrays[0], arrays[1], out=out)
    arrays = [to_narray(a, "multi_dot") for a in arrays]
    first, last = arrays[0].ndim, arrays[-1].ndim
    if first == 1:
        arrays[0] = reshape(arrays[0], (1, -1))
    if last == 1:
        arrays[-1] = reshape(arrays[-1], (-1, 1))
    for a in arrays:
        if a.ndim != 2:
            raise LinAlgShapeError(f"multi_dot: {a.ndim}-dimensional array given. Array "
                                   "must be two-dimensional")
    result = _chain(arrays, _chain_order([a.shape for a in arrays]), 0, len(arrays) - 1,
                    out)
    if first == 1 and last == 1:
        return result[0, 0]
    return ravel(result) if 1 in (first, last) else result


def _chain_order(shapes) -> dict:
    """NumPy's matrix-chain order: ``split[i, j]`` where to split the product of arrays
    i..j (the cost of a product counted as NumPy counts it)."""
    n = len(shapes)
    dims = [s[0] for s in shapes] + [shapes[-1][1]]
    cost, split = {(i, i): 0 for i in range(n)}, {}
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i, j] = float("inf")
            for k in range(i, j):
                q = cost[i, k] + cost[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1]
                if q < cost[i, j]:
                    cost[i, j], split[i, j] = q, k
    return split


def _chain(arrays, split, i, j, out=None):
    if i == j:
        return arrays[i]
    k = split[i, j]
    return dot(_chain(arrays, split, i, k), _chain(arrays, split, k + 1, j), out=out)


# ---- diagonal, trace ------------------------------------------------------------------------

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


def __getattr__(name):
    raise missing_attribute(name, "linalg")


METHODS: dict = {}
"""NArray methods this module adds (name -> function taking the array first): none; NumPy's
``ndarray.dot`` is installed by ``minerva.methods``."""

__all__: list = ["cross", "einsum", "einsum_path", "inner", "kron", "matrix_transpose",
                 "outer", "tensordot", "vdot", "vecdot"]
"""The names NumPy has at top level; the others are ``minerva.linalg.<name>`` only."""
