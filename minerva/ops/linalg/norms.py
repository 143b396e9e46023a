"""Norms and functions of whole matrices: ``norm``, ``vector_norm``, ``cond``,
``matrix_power`` and ``matrix_rank``, by ``numpy.linalg``'s rules.

``norm`` and ``vector_norm`` check their arguments (``ord``, ``axis``) and find their
dtype by calling NumPy's own function on an array of the operand's dtype whose every
dimension is cut to at most 1 (zero-size dimensions stay zero, so NumPy's errors for empty
reductions are raised too): the errors are NumPy's, raised at once.
"""
from __future__ import annotations

import numpy as np

from minerva.common.errors import ShapeIndexError
from minerva.ops.linalg.shared import (
    LinAlgShapeError, probe_dtypes, stacked_2d, stacked_square, svd_kernel)
from minerva.ops.reductions import reduced_shape
from minerva.ops.registry import ArraySpec, register


def _tiny(shape: tuple) -> tuple:
    return tuple(min(n, 1) for n in shape)


def _axes(axis, ndim: int):
    """``axis`` (None, an int or a tuple) as a tuple of non-negative axes."""
    if axis is None:
        return None
    items = axis if isinstance(axis, tuple) else (axis,)
    for a in items:
        if not -ndim <= a < ndim:
            raise ShapeIndexError(f"axis {a} is out of bounds for array of dimension {ndim}")
    return tuple(a % ndim for a in items)


# ---- norm, vector_norm ------------------------------------------------------------------

def _norm_infer(x, *, ord, axis, keepdims):
    tiny = _tiny(x.shape)
    key = ("norm", tiny, ord, axis, keepdims)
    (dtype,) = probe_dtypes(key, lambda v: np.linalg.norm(v, ord, axis, keepdims),
                            [tiny], x)
    return (ArraySpec(reduced_shape(x.shape, _axes(axis, len(x.shape)), keepdims), dtype),)


def _norm_impl(xp, x, *, out, ord, axis, keepdims):
    if ord is None and axis is None and x.dtype.kind == "f" and xp is np:
        flat = x.ravel(order="K")   # NumPy's own steps for this norm, less its checks
        out[...] = np.sqrt(flat.dot(flat))
        return
    out[...] = xp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


register("norm", _norm_infer, _norm_impl)


def _vector_norm_infer(x, *, ord, axis, keepdims):
    tiny = _tiny(x.shape)
    key = ("vector_norm", tiny, ord, axis, keepdims)
    (dtype,) = probe_dtypes(key, lambda v: _vector_norm_probe(v, ord, axis), [tiny], x)
    return (ArraySpec(reduced_shape(x.shape, _axes(axis, len(x.shape)), keepdims), dtype),)


def _vector_norm_probe(v, ord, axis):
    return vector_norm_kernel(np, v, ord, None if axis is None else _axes(axis, v.ndim))


def vector_norm_kernel(xp, x, ord, axes):
    """The vector norm of ``x`` over ``axes`` (all when None) as NumPy computes it: those
    axes moved to the front and flattened into one, then ``norm`` over it (without the
    reduced axes)."""
    if axes is None:
        return xp.linalg.norm(x.reshape(-1), ord=ord, axis=0)
    if len(axes) != len(set(axes)):
        raise ValueError("repeated axis")
    x = xp.moveaxis(x, axes, tuple(range(len(axes))))
    x = x.reshape((-1,) + x.shape[len(axes):])
    return xp.linalg.norm(x, ord=ord, axis=0)


def _vector_norm_impl(xp, x, *, out, ord, axis, keepdims):
    function = getattr(xp.linalg, "vector_norm", None)
    if function is not None:
        out[...] = function(x, axis=axis, keepdims=keepdims, ord=ord)
        return
    axes = None if axis is None else _axes(axis, x.ndim)
    out[...] = vector_norm_kernel(xp, x, ord, axes).reshape(out.shape)


register("vector_norm", _vector_norm_infer, _vector_norm_impl)


# ---- cond -------------------------------------------------------------------------------

def _cond_infer(x, *, p):
    (stacked_2d if p in (None, 2, -2) else stacked_square)("cond", x)
    if 0 in x.shape:
        raise LinAlgShapeError("cond: cond is not defined on empty arrays")
    (dtype,) = probe_dtypes(("cond", p), lambda v: np.linalg.cond(v, p), [(1, 1)], x)
    return (ArraySpec(x.shape[:-2], dtype),)


def _cond_impl(xp, x, *, out, p):
    out[...] = xp.linalg.cond(x, p)


register("cond", _cond_infer, _cond_impl)


# ---- matrix_power, matrix_rank ------------------------------------------------------------

def _matrix_power_infer(a, *, n):
    stacked_square("matrix_power", a)
    probe_n = max(min(n, 2), -1)
    (dtype,) = probe_dtypes(("matrix_power", probe_n),
                            lambda v: np.linalg.matrix_power(v, probe_n), [(1, 1)], a)
    return (ArraySpec(a.shape, dtype),)


def matrix_power_kernel(xp, a, n: int):
    """``a`` to the integer power ``n`` by NumPy's algorithm (repeated squaring with
    ``matmul``; the inverse first for negative ``n``)."""
    if n < 0:
        a, n = xp.linalg.inv(a), -n
    if n == 1:
        return a
    if n == 2:
        return xp.matmul(a, a)
    if n == 3:
        return xp.matmul(xp.matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else xp.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else xp.matmul(result, z)
    return result


def _matrix_power_impl(xp, a, *, out, n):
    if n == 0:
        out[...] = xp.eye(a.shape[-1], dtype=out.dtype)
    else:
        out[...] = matrix_power_kernel(xp, a, n)


register("matrix_power", _matrix_power_infer, _matrix_power_impl)


def _matrix_rank_infer(a, *, tol, rtol, hermitian):
    if len(a.shape) < 2:
        return (ArraySpec((), np.dtype(np.intp)),)
    (stacked_square if hermitian else stacked_2d)("matrix_rank", a)
    probe_dtypes("svd", lambda v: tuple(np.linalg.svd(v)), [(1, 1)], a)
    return (ArraySpec(a.shape[:-2], np.dtype(np.intp)),)


def _matrix_rank_impl(xp, a, *, out, tol, rtol, hermitian):
    if a.ndim < 2:
        out[...] = xp.any(a != 0)
        return
    s = svd_kernel(xp, a, False, False, hermitian)
    if s.shape[-1] == 0:
        out[...] = 0
        return
    if tol is None:  # NumPy's thresholds, with NumPy's dtypes
        scale = max(a.shape[-2:]) * np.finfo(s.dtype).eps if rtol is None \
            else xp.asarray(np.asarray(rtol))
        limit = s.max(axis=-1, keepdims=True) * scale
    else:
        limit = xp.asarray(np.asarray(tol))
    out[...] = xp.count_nonzero(s > limit, axis=-1)


register("matrix_rank", _matrix_rank_infer, _matrix_rank_impl)
