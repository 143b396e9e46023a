"""Diagonals and triangles: ``diagonal``, ``diag``, ``diagflat``, ``trace``, ``tril``,
``triu``, and the matrices ``eye``, ``identity`` and ``tri``.

``diagonal`` (and ``diag`` of a 2-D array) return a *copy* of the diagonal: NumPy returns
a read-only view, which minerva cannot mark read-only; a copy keeps a write into the result
from silently changing the base. ``trace`` and ``diag`` read and write through the diagonal
view without copying.
"""
from __future__ import annotations

from minerva import functions, indexing
from minerva.builder import COPY, build, to_narray
from minerva.creation import check_dtype, zeros
from minerva.functions import explicit_view, view_of
from minerva.narray import NArray
from minerva._manipulation.common import as_int, axis_index
from minerva.ops import registry

_EYE, _TRI, _TRIANGLE = registry.get("eye"), registry.get("tri"), registry.get("triangle")


def diagonal_view(x: NArray, offset: int = 0, axis1: int = 0, axis2: int = 1) -> NArray:
    """The diagonal of ``x`` in the plane of ``axis1``/``axis2``, as a view (writable:
    internal use; the public ``diagonal`` copies it). The diagonal is the last axis."""
    if x.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    a1, a2 = axis_index("diagonal", axis1, x.ndim), axis_index("diagonal", axis2, x.ndim)
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")
    offset = as_int("diagonal", offset)
    shape, strides, start = explicit_view(x)
    skip1, skip2 = max(0, -offset), max(0, offset)
    length = max(0, min(shape[a1] - skip1, shape[a2] - skip2))
    if length:
        start += skip1 * strides[a1] + skip2 * strides[a2]
    rest = [d for d in range(x.ndim) if d not in (a1, a2)]
    new_shape = tuple(shape[d] for d in rest) + (length,)
    new_strides = tuple(strides[d] for d in rest) + (strides[a1] + strides[a2],)
    return view_of(x, (new_shape, new_strides, start))


def diagonal(a, offset=0, axis1=0, axis2=1) -> NArray:
    """The diagonal ``offset`` above the main one in the plane of ``axis1``/``axis2`` (the
    diagonal becomes the last axis). A copy: NumPy's read-only view cannot be expressed."""
    return build(COPY, [diagonal_view(to_narray(a, "diagonal"), offset, axis1, axis2)])


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None) -> NArray:
    """Sum along the diagonal (``diagonal``'s arguments), with ``sum``'s dtype rule."""
    view = diagonal_view(to_narray(a, "trace"), offset, axis1, axis2)
    return functions.sum(view, axis=-1, dtype=dtype, out=out)


def diag(v, k=0) -> NArray:
    """The ``k``-th diagonal of a 2-D array (a copy), or a 2-D array with the 1-D ``v`` on
    its ``k``-th diagonal and zeros elsewhere."""
    x = to_narray(v, "diag")
    k = as_int("diag", k)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = x.shape[0] + abs(k)
    result = zeros((n, n), x.dtype)
    indexing.assign(diagonal_view(result, k), x)
    return result


def diagflat(v, k=0) -> NArray:
    """A 2-D array with the flattened ``v`` on its ``k``-th diagonal."""
    return diag(functions.ravel(to_narray(v, "diagflat")), k)


def _triangle(name: str, m, k, lower: bool) -> NArray:
    x = to_narray(m, name)
    if x.ndim == 0:
        raise TypeError(f"{name}: the input must have at least one dimension")
    return build(_TRIANGLE, [x], {"k": as_int(name, k), "lower": lower})


def tril(m, k=0) -> NArray:
    """``m`` with the elements above the ``k``-th diagonal zeroed (over the last two
    axes; a 1-D ``m`` is taken as every row of a square matrix)."""
    return _triangle("tril", m, k, True)


def triu(m, k=0) -> NArray:
    """``m`` with the elements below the ``k``-th diagonal zeroed (over the last two
    axes; a 1-D ``m`` is taken as every row of a square matrix)."""
    return _triangle("triu", m, k, False)


# ---- matrices ---------------------------------------------------------------------------

def _matrix_attrs(name: str, N, M, k, dtype) -> dict:
    n = as_int(name, N)
    m = n if M is None else as_int(name, M)
    if n < 0 or m < 0:
        raise ValueError("negative dimensions are not allowed")
    return {"n": n, "m": m, "k": as_int(name, k), "dtype": check_dtype(dtype)}


def eye(N, M=None, k=0, dtype=None, order="C", *, device=None, like=None) -> NArray:
    """An ``N`` x ``M`` array with ones on the ``k``-th diagonal and zeros elsewhere
    (``float64`` unless ``dtype`` is given)."""
    _check_layout("eye", order, device, like)
    return build(_EYE, [], _matrix_attrs("eye", N, M, k, dtype))


def identity(n, dtype=None, *, like=None) -> NArray:
    """The ``n`` x ``n`` identity matrix."""
    return eye(n, dtype=dtype, like=like)


def tri(N, M=None, k=0, dtype=None, *, like=None) -> NArray:
    """An ``N`` x ``M`` array with ones at and below the ``k``-th diagonal."""
    _check_layout("tri", "C", None, like)
    return build(_TRI, [], _matrix_attrs("tri", N, M, k, dtype))


def _check_layout(name: str, order, device, like) -> None:
    if order != "C":
        raise ValueError(f"{name}: only order='C' is supported, got {order!r}")
    if device not in (None, "cpu") or like is not None:
        raise ValueError(f"{name}: device= and like= are not supported; use mv.device()")
