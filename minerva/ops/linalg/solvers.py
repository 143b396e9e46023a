"""``numpy.linalg``'s solvers and decompositions over ``(..., M, N)`` stacks: inv, solve,
det, slogdet, cholesky, eigh, eigvalsh, svd, qr and pinv (norms, cond, matrix_power and
matrix_rank are in ``norms``; einsum in ``einsum``; the products in ``products``).

Shape rules raise NumPy's errors at once: :class:`LinAlgShapeError` (also a
``numpy.linalg.LinAlgError``) for operands that are not stacks of (square) matrices.
Value-dependent failures (a singular matrix, a matrix that is not positive definite) are
raised by the kernel: NumPy's ``LinAlgError``, seen by the user as the ``__cause__`` of an
``OpError`` at the next wait. CuPy does not check by default: on a GPU such inputs give
NaN or Inf instead.
"""
from __future__ import annotations

import numpy as np

from minerva.ops.elementwise import broadcast_shape
from minerva.ops.linalg.shared import (
    is_numpy, probe_dtypes, stacked_2d, stacked_square, svd_kernel)
from minerva.ops.registry import ArraySpec, register, shape_error

_MATRIX = (1, 1)


def _spec(shape, dtype) -> ArraySpec:
    return ArraySpec(tuple(shape), dtype)


def _square_infer(name, function):
    """The shape rule of a function of square matrices that keeps their shape."""
    def infer(a):
        stacked_square(name, a)
        (dtype,) = probe_dtypes(name, function, [_MATRIX], a)
        return (_spec(a.shape, dtype),)
    return infer


# ---- inv, det, slogdet ---------------------------------------------------------------------

def _inv_impl(xp, a, *, out):
    out[...] = xp.linalg.inv(a)


register("inv", _square_infer("inv", np.linalg.inv), _inv_impl)


def _det_infer(a):
    stacked_square("det", a)
    (dtype,) = probe_dtypes("det", np.linalg.det, [_MATRIX], a)
    return (_spec(a.shape[:-2], dtype),)


def _det_impl(xp, a, *, out):
    out[...] = xp.linalg.det(a)


register("det", _det_infer, _det_impl)


def _slogdet_infer(a):
    stacked_square("slogdet", a)
    sign, logdet = probe_dtypes("slogdet", lambda x: tuple(np.linalg.slogdet(x)),
                                [_MATRIX], a)
    return (_spec(a.shape[:-2], sign), _spec(a.shape[:-2], logdet))


def _slogdet_impl(xp, a, *, out):
    sign, logdet = xp.linalg.slogdet(a)
    out[0][...] = sign
    out[1][...] = logdet


register("slogdet", _slogdet_infer, _slogdet_impl, n_outputs=2)


# ---- solve ----------------------------------------------------------------------------------

def _solve_infer(a, b):
    m = stacked_square("solve", a)
    if not b.shape:
        raise shape_error("solve", "b must have at least one dimension", a, b)
    if len(b.shape) == 1:
        batch, tail = a.shape[:-2], (m,)
    else:
        batch = broadcast_shape("solve", _spec(a.shape[:-2], a.dtype),
                                _spec(b.shape[:-2], b.dtype))
        tail = (m, b.shape[-1])
    if b.shape[-len(tail)] != m:
        raise shape_error("solve", f"b has {b.shape[-len(tail)]} rows, a has {m}", a, b)
    (dtype,) = probe_dtypes("solve", np.linalg.solve,
                            [_MATRIX, (1,)], a, b)
    return (_spec(batch + tail, dtype),)


def solve_kernel(xp, a, b, out) -> None:
    """``solve(a, b)`` into ``out`` with CuPy's rules too: b as ``(..., M, K)`` stacks with
    the batch dimensions broadcast explicitly (a 1-D ``b`` is one column)."""
    vector = b.ndim == 1
    if vector:
        b = b[:, None]
    batch = out.shape[:-1] if vector else out.shape[:-2]
    a = _broadcast(xp, a, batch + a.shape[-2:])
    b = _broadcast(xp, b, batch + b.shape[-2:])
    x = xp.linalg.solve(a, b)
    out[...] = x[..., 0] if vector else x


def _broadcast(xp, x, shape):
    if x.shape == shape:
        return x
    return xp.ascontiguousarray(xp.broadcast_to(x, shape))


def _solve_impl(xp, a, b, *, out):
    if is_numpy(xp):
        out[...] = xp.linalg.solve(a, b)
    else:
        solve_kernel(xp, a, b, out)


register("solve", _solve_infer, _solve_impl)


# ---- cholesky, eigh, eigvalsh ------------------------------------------------------------

_SQUARE_CHOLESKY = _square_infer("cholesky", np.linalg.cholesky)


def _cholesky_infer(a, *, upper):
    return _SQUARE_CHOLESKY(a)


def _cholesky_impl(xp, a, *, out, upper):
    if not upper:
        out[...] = xp.linalg.cholesky(a)
    elif is_numpy(xp):
        out[...] = xp.linalg.cholesky(a, upper=True)
    else:
        out[...] = xp.conj(xp.linalg.cholesky(a).swapaxes(-1, -2))


register("cholesky", _cholesky_infer, _cholesky_impl)


def _eigh_infer(a, *, UPLO):
    stacked_square("eigh", a)
    w, v = probe_dtypes("eigh", lambda x: tuple(np.linalg.eigh(x)), [_MATRIX], a)
    return (_spec(a.shape[:-1], w), _spec(a.shape, v))


def _eigh_impl(xp, a, *, out, UPLO):
    w, v = xp.linalg.eigh(a, UPLO=UPLO)
    out[0][...] = w
    out[1][...] = v


register("eigh", _eigh_infer, _eigh_impl, n_outputs=2)


def _eigvalsh_infer(a, *, UPLO):
    stacked_square("eigvalsh", a)
    (w,) = probe_dtypes("eigvalsh", np.linalg.eigvalsh, [_MATRIX], a)
    return (_spec(a.shape[:-1], w),)


def _eigvalsh_impl(xp, a, *, out, UPLO):
    out[...] = xp.linalg.eigvalsh(a, UPLO=UPLO)


register("eigvalsh", _eigvalsh_infer, _eigvalsh_impl)


# ---- svd, qr, pinv ---------------------------------------------------------------------------

def _svd_infer(a, *, full_matrices, compute_uv, hermitian):
    (stacked_square if hermitian else stacked_2d)("svd", a)
    u, s, vh = probe_dtypes("svd", lambda x: tuple(np.linalg.svd(x)), [_MATRIX], a)
    *batch, m, n = a.shape
    k = min(m, n)
    s_spec = _spec((*batch, k), s)
    if not compute_uv:
        return (s_spec,)
    rows, cols = (m, n) if full_matrices else (k, k)
    return (_spec((*batch, m, rows), u), s_spec, _spec((*batch, cols, n), vh))


def _svd_impl(xp, a, *, out, full_matrices, compute_uv, hermitian):
    result = svd_kernel(xp, a, full_matrices, compute_uv, hermitian)
    if not compute_uv:
        out[...] = result
        return
    for target, value in zip(out, result):
        target[...] = value


register("svd", _svd_infer, _svd_impl, n_outputs=3)


def _qr_infer(a, *, mode):
    stacked_2d("qr", a)
    q, r = probe_dtypes("qr", lambda x: tuple(np.linalg.qr(x)), [_MATRIX], a)
    *batch, m, n = a.shape
    k = min(m, n)
    if mode == "r":
        return (_spec((*batch, k, n), r),)
    if mode == "raw":
        return (_spec((*batch, n, m), q), _spec((*batch, k), q))
    q_cols, r_rows = (m, m) if mode == "complete" else (k, k)
    return (_spec((*batch, m, q_cols), q), _spec((*batch, r_rows, n), r))


def _qr_impl(xp, a, *, out, mode):
    result = xp.linalg.qr(a, mode=mode)
    if mode == "r":
        out[...] = result
        return
    for target, value in zip(out, result):
        target[...] = value


register("qr", _qr_infer, _qr_impl, n_outputs=2)


def _pinv_infer(a, *tolerance, rcond, hermitian):
    """``tolerance``: an array of relative tolerances (in place of the scalar ``rcond``),
    one per matrix, broadcast to the batch (NumPy's ValueError when it would widen it)."""
    (stacked_square if hermitian else stacked_2d)("pinv", a)
    *batch, m, n = a.shape
    (dtype,) = probe_dtypes("pinv", lambda x: np.linalg.pinv(x), [_MATRIX], a)
    if m == 0 or n == 0:
        dtype = a.dtype  # NumPy returns an empty array of a's own dtype
    elif tolerance:
        _check_tolerance(tuple(batch), tolerance[0])
    return (_spec((*batch, n, m), dtype),)


def _check_tolerance(batch: tuple, tolerance: ArraySpec) -> None:
    wide = broadcast_shape("pinv", ArraySpec(batch, tolerance.dtype), tolerance)
    if wide != batch:
        raise shape_error("pinv", f"non-broadcastable output operand: the tolerances "
                          f"broadcast the batch of matrices {batch} to {wide}", tolerance)


def _pinv_impl(xp, a, *tolerance, out, rcond, hermitian):
    if 0 in a.shape[-2:]:
        return
    u, s, vt = svd_kernel(xp, a.conj(), False, True, hermitian)
    rcond = tolerance[0][..., None] if tolerance else xp.asarray(np.asarray(rcond))
    cutoff = rcond * xp.amax(s, axis=-1, keepdims=True)
    large = s > cutoff
    s = xp.where(large, 1 / xp.where(large, s, 1), 0).astype(s.dtype, copy=False)
    out[...] = xp.matmul(vt.swapaxes(-1, -2), xp.multiply(s[..., None], u.swapaxes(-1, -2)))


register("pinv", _pinv_infer, _pinv_impl)
