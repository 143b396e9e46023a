"""``numpy.linalg``'s solvers and decompositions, over stacks of matrices ``(..., M, N)``.

Results with several arrays are NumPy 2's named tuples (``SVDResult(U, S, Vh)``, ...).
A singular or non-positive-definite matrix is found by the kernel: the user sees an
``OpError`` at the next wait whose ``__cause__`` is NumPy's ``LinAlgError`` (NumPy raises
the ``LinAlgError`` itself, at the call). ``eig``, ``eigvals`` and ``lstsq`` give results
whose dtype or shape depends on the values (NumPy returns real eigenvalues when all are
real): they wait for their operands and compute on the host with NumPy itself.
"""
from __future__ import annotations

import math
import operator
import warnings
from typing import NamedTuple

import numpy as np

from minerva.api.core.manipulation import ravel, reshape, transpose
from minerva.builder import build, to_narray, upload
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.linalg.shared import LinAlgShapeError

_OPS = registry.get
_NO_VALUE = object()


class EigResult(NamedTuple):
    """``eig``'s result."""
    eigenvalues: NArray
    eigenvectors: NArray


class EighResult(NamedTuple):
    """``eigh``'s result."""
    eigenvalues: NArray
    eigenvectors: NArray


class QRResult(NamedTuple):
    """``qr``'s result in modes 'reduced' and 'complete'."""
    Q: NArray
    R: NArray


class SlogdetResult(NamedTuple):
    """``slogdet``'s result."""
    sign: NArray
    logabsdet: NArray


class SVDResult(NamedTuple):
    """``svd``'s result with ``compute_uv=True``."""
    U: NArray
    S: NArray
    Vh: NArray


def _unary(name: str, a, attrs=None):
    return build(_OPS(name), [to_narray(a, name)], attrs or {})


def inv(a) -> NArray:
    """The inverse of each square matrix in ``a`` (``(..., M, M)``)."""
    return _unary("inv", a)


def solve(a, b) -> NArray:
    """``x`` with ``a @ x == b``: ``b`` of shape ``(M,)`` is one vector, any other ``b`` a
    stack ``(..., M, K)`` whose batch dimensions broadcast with ``a``'s (NumPy 2)."""
    return build(_OPS("solve"), [to_narray(a, "solve"), to_narray(b, "solve")])


def det(a) -> NArray:
    """The determinant of each square matrix in ``a``."""
    return _unary("det", a)


def slogdet(a) -> SlogdetResult:
    """``(sign, logabsdet)`` of the determinant of each square matrix in ``a``."""
    return SlogdetResult(*_unary("slogdet", a))


def cholesky(a, /, *, upper: bool = False) -> NArray:
    """The lower (``upper=True``: upper) Cholesky factor of each Hermitian positive-definite
    matrix in ``a``."""
    return _unary("cholesky", a, {"upper": bool(upper)})


def _uplo(UPLO) -> str:
    UPLO = UPLO.upper()
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return UPLO


def eigh(a, UPLO: str = "L") -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of each Hermitian matrix in ``a``, from its
    lower (``'L'``) or upper (``'U'``) triangle."""
    return EighResult(*_unary("eigh", a, {"UPLO": _uplo(UPLO)}))


def eigvalsh(a, UPLO: str = "L") -> NArray:
    """Eigenvalues (ascending) of each Hermitian matrix in ``a``."""
    return _unary("eigvalsh", a, {"UPLO": _uplo(UPLO)})


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """Singular value decomposition ``SVDResult(U, S, Vh)`` of each matrix in ``a`` (only
    ``S``, descending, when ``compute_uv`` is false)."""
    attrs = {"full_matrices": bool(full_matrices), "compute_uv": bool(compute_uv),
             "hermitian": bool(hermitian)}
    result = _unary("svd", a, attrs)
    return SVDResult(*result) if compute_uv else result


def svdvals(x, /) -> NArray:
    """The singular values of each matrix in ``x``, descending."""
    return svd(x, compute_uv=False)


def qr(a, mode: str = "reduced"):
    """QR factorization of each matrix in ``a``: ``QRResult(Q, R)`` in modes 'reduced' and
    'complete', ``R`` alone in mode 'r', ``(h, tau)`` in mode 'raw'."""
    if mode in ("f", "full"):
        warnings.warn("The 'full' option is deprecated in favor of 'reduced'.\nFor backward "
                      "compatibility let mode default.", DeprecationWarning, stacklevel=2)
        mode = "reduced"
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    result = _unary("qr", a, {"mode": mode})
    return QRResult(*result) if mode in ("reduced", "complete") else result


def pinv(a, rcond=None, hermitian: bool = False, *, rtol=_NO_VALUE) -> NArray:
    """The Moore-Penrose pseudo-inverse of each matrix in ``a``: singular values at most
    ``rcond`` (or the array API's ``rtol``) times the largest are dropped; a tolerance is a
    scalar or an array of one per matrix, broadcast against the batch."""
    x = to_narray(a, "pinv")
    if rcond is None:
        if rtol is _NO_VALUE:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(x.shape[-2:]) * np.finfo(x.dtype).eps
        else:
            rcond = rtol
    elif rtol is not _NO_VALUE:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    attrs = {"rcond": None, "hermitian": bool(hermitian)}
    if isinstance(rcond, NArray) or np.ndim(rcond) != 0:
        return build(_OPS("pinv"), [x, to_narray(rcond, "pinv")], attrs)
    return build(_OPS("pinv"), [x], dict(attrs, rcond=_scalar("pinv", rcond)))


def _scalar(name: str, value):
    """``value`` as an immutable scalar; TypeError for arrays (minerva takes scalars)."""
    if isinstance(value, NArray) or np.ndim(value) != 0:
        raise TypeError(f"{name}: minerva takes a scalar tolerance, got "
                        f"{type(value).__name__}")
    return value[()] if isinstance(value, np.ndarray) else value


# ---- on the host: value-dependent results ---------------------------------------------------

def _host(a, name: str) -> np.ndarray:
    return to_narray(a, name).to_numpy()


def eig(a) -> EigResult:
    """Eigenvalues and right eigenvectors of each square matrix in ``a``. Waits for ``a``
    and computes on the host: NumPy's result dtype depends on the values."""
    w, v = np.linalg.eig(_host(a, "eig"))
    return EigResult(upload(w), upload(v))


def eigvals(a) -> NArray:
    """Eigenvalues of each square matrix in ``a`` (waits for ``a``; computed on the
    host)."""
    return upload(np.linalg.eigvals(_host(a, "eigvals")))


def lstsq(a, b, rcond=None) -> tuple:
    """Least-squares solution ``(x, residuals, rank, s)`` of ``a @ x = b`` (waits for its
    operands; computed on the host: the residuals' shape depends on the rank)."""
    x, residuals, rank, s = np.linalg.lstsq(_host(a, "lstsq"), _host(b, "lstsq"), rcond)
    return upload(x), upload(residuals), rank, upload(s)


# ---- tensor forms --------------------------------------------------------------------------

def tensorinv(a, ind: int = 2) -> NArray:
    """The inverse of ``a`` for ``tensordot`` over its first ``ind`` axes."""
    x = to_narray(a, "tensorinv")
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    size = math.prod(x.shape[ind:])
    result = inv(reshape(x, (size, -1)))
    return reshape(result, x.shape[ind:] + x.shape[:ind])


def tensorsolve(a, b, axes=None) -> NArray:
    """``x`` with ``tensordot(a, x, axes=x.ndim) == b`` (``axes`` of ``a`` moved to the
    end first)."""
    x, y = to_narray(a, "tensorsolve"), to_narray(b, "tensorsolve")
    n = x.ndim
    if axes is not None:
        order = list(range(n))
        for k in axes:
            order.remove(k)
            order.insert(n, k)
        x = transpose(x, order)
    shape = x.shape[-(n - y.ndim):]
    size = math.prod(shape)
    if x.size != size ** 2:
        raise LinAlgShapeError("tensorsolve: Input arrays must satisfy the requirement "
                               "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    return reshape(solve(reshape(x, (size, size)), ravel(y)), shape)


__all__ = ["EigResult", "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky",
           "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq", "pinv", "qr",
           "slogdet", "solve", "svd", "svdvals", "tensorinv", "tensorsolve"]
