"""What the linear-algebra ops share: NumPy's shape checks, result dtypes and the SVD
kernel.

``numpy.linalg`` raises ``LinAlgError`` (a ValueError) for an operand that is not a stack
of (square) matrices; minerva raises :class:`LinAlgShapeError`, which is both a
:class:`ShapeError` and a ``numpy.linalg.LinAlgError``, at once on the user's line.

Result dtypes are NumPy's own: :func:`probe_dtypes` calls the NumPy function once on tiny
arrays of the operands' dtypes (1x1 identity matrices, vectors of ones) and caches the
dtypes of what it returns.
"""
from __future__ import annotations

import numpy as np

from minerva.common.errors import DTypeError, ShapeError, ShapeIndexError
from minerva.ops.registry import ArraySpec

_CACHE: dict = {}


class LinAlgShapeError(ShapeError, np.linalg.LinAlgError):
    """An operand is not a (stack of) matrix, or not square, where ``numpy.linalg``
    requires one: both a ShapeError and a ``numpy.linalg.LinAlgError``."""


def stacked_2d(name: str, spec: ArraySpec) -> None:
    """LinAlgShapeError unless ``spec`` has at least two dimensions."""
    if len(spec.shape) < 2:
        raise LinAlgShapeError(f"{name}: {len(spec.shape)}-dimensional array given. Array "
                               "must be at least two-dimensional")


def stacked_square(name: str, spec: ArraySpec) -> int:
    """``M`` of a ``(..., M, M)`` operand; LinAlgShapeError for any other shape."""
    stacked_2d(name, spec)
    m, n = spec.shape[-2:]
    if m != n:
        raise LinAlgShapeError(f"{name}: Last 2 dimensions of the array must be square "
                               f"(got shape {spec.shape})")
    return m


def probe_dtypes(key, function, shapes, *specs) -> tuple:
    """Dtypes of what NumPy's ``function`` returns for arrays of ``shapes`` (tiny ones)
    holding ones, with the dtypes of ``specs``; cached under ``key`` and the dtypes.

    A TypeError from NumPy becomes a DTypeError, a ValueError a ShapeError (an IndexError
    too for an axis out of range)."""
    full_key = (key,) + tuple(s.dtype for s in specs)
    found = _CACHE.get(full_key)
    if found is None:
        arrays = [np.ones(shape, spec.dtype) for shape, spec in zip(shapes, specs)]
        found = _CACHE[full_key] = _call(key, function, arrays)
    return found


def _call(key, function, arrays) -> tuple:
    name = key[0] if isinstance(key, tuple) else key
    try:
        with np.errstate(all="ignore"):
            result = function(*arrays)
    except TypeError as exc:
        raise DTypeError(f"{name}: {exc}") from None
    except np.exceptions.AxisError as exc:
        raise ShapeIndexError(f"{name}: {exc}") from None
    except ValueError as exc:
        raise ShapeError(f"{name}: {exc}") from None
    results = result if isinstance(result, tuple) else (result,)
    return tuple(np.asarray(r).dtype for r in results)


def is_numpy(xp) -> bool:
    """Whether the array module ``xp`` is NumPy (a kernel may then call NumPy's own function
    where CuPy has no equivalent with the same options)."""
    return xp is np


def svd_kernel(xp, a, full_matrices: bool, compute_uv: bool, hermitian: bool):
    """NumPy's ``svd`` with the same operations (a Hermitian ``a`` by ``eigh``, as NumPy
    does it), for any array module."""
    if not hermitian:
        return xp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    if not compute_uv:
        s = xp.abs(xp.linalg.eigvalsh(a))
        return xp.sort(s, axis=-1)[..., ::-1]
    s, u = xp.linalg.eigh(a)
    sgn = xp.copysign(1.0, s)
    s = xp.abs(s)
    order = xp.argsort(s, axis=-1)[..., ::-1]
    sgn = xp.take_along_axis(sgn, order, axis=-1)
    s = xp.take_along_axis(s, order, axis=-1)
    u = xp.take_along_axis(u, order[..., None, :], axis=-1)
    vh = xp.conj((u * sgn[..., None, :]).swapaxes(-1, -2))
    return u, s, vh
