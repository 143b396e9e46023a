"""Activation backward ops, local response normalisation and dropout.

- ``relu_backward(dy, x) = where(x > 0, dy, 0)``; ``sigmoid_backward(dy, y) = dy * y * (1 - y)``;
  ``tanh_backward(dy, y) = dy * (1 - y**2)`` (``y`` is the forward output).
- ``lrn`` is Caffe's/AlexNet's cross-channel normalisation of ``(N, C, H, W)`` images:
  ``scale[c] = k + alpha/size * sum(x[c']**2 for c' in window(c))``, ``y = x * scale**-beta``,
  where ``window(c) = [c - (size-1)//2, c + size//2]`` (centred for odd ``size``), zero-padded
  at the channel edges. ``lrn_backward(dy, x, y)`` recomputes ``scale`` from ``x``.
- ``dropout(x, p, seed)`` is ``x * mask / (1 - p)`` with ``mask ~ Bernoulli(1 - p)``. The
  mask is drawn on the host by ``numpy.random.default_rng(seed)`` (one float32 uniform
  draw per element in C order, kept where ``u >= p``), so CPU and GPU give identical masks.
  ``dropout_backward(dy, p, seed)`` applies the same mask to ``dy`` (same seed, same mask).
"""
from __future__ import annotations

import numpy as np

from minerva.ops.nn.shared import require_float, require_rank
from minerva.ops.registry import ArraySpec, register, shape_error, spec


def _same_shape_infer(op: str):
    def infer(dy: ArraySpec, other: ArraySpec):
        require_float(op, dy, other)
        if dy.shape != other.shape:
            raise shape_error(op, "dy and its partner must have the same shape", dy, other)
        return (spec(dy.shape, np.result_type(dy.dtype, other.dtype)),)
    return infer


def _relu_bwd_impl(xp, dy, x, *, out):
    """``where(x > 0, dy, 0)``: a NaN or inf ``dy`` where ``x <= 0`` gives 0. When ``dy``
    has the output's float type, its bits are and-ed with a mask of all ones where
    ``x > 0``: branch-free, 5-7x faster than a masked copy on a random mask."""
    if dy.dtype == out.dtype and out.dtype.kind == "f":
        bits = np.dtype(f"i{out.dtype.itemsize}")
        mask = xp.greater(x, 0).view(np.uint8).astype(bits)
        xp.negative(mask, out=mask)   # 1 -> all bits set
        xp.bitwise_and(dy.view(bits), mask, out=out.view(bits))
        return
    out.fill(0)
    xp.copyto(out, dy, where=x > 0)


def _sigmoid_bwd_impl(xp, dy, y, *, out):
    xp.subtract(1, y, out=out)
    out *= y
    out *= dy


def _tanh_bwd_impl(xp, dy, y, *, out):
    xp.multiply(y, y, out=out)
    xp.subtract(1, out, out=out)
    out *= dy


# ---------------------------------------------------------------- LRN
def _check_lrn_attrs(op: str, size, alpha, beta, k) -> None:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise shape_error(op, "size must be a positive int", size)
    if not all(isinstance(v, (int, float, np.number)) for v in (alpha, beta, k)):
        raise shape_error(op, "alpha, beta and k must be numbers", alpha, beta, k)


def _lrn_infer(x: ArraySpec, *, size=5, alpha=1e-4, beta=0.75, k=2.0):
    require_rank("lrn", "x", x, 4)
    require_float("lrn", x)
    _check_lrn_attrs("lrn", size, alpha, beta, k)
    return (spec(x.shape, x.dtype),)


def _channel_window_sum(xp, a, before: int, after: int):
    """``s[:, c] = sum(a[:, c-before : c+after+1])`` with zeros beyond the channel edges."""
    total = a.copy()
    c = a.shape[1]
    for d in range(1, min(before, c - 1) + 1):
        total[:, d:] += a[:, :c - d]
    for d in range(1, min(after, c - 1) + 1):
        total[:, :c - d] += a[:, d:]
    return total


def _lrn_scale(xp, x, size, alpha, k):
    """``k + alpha/size * window_sum(x**2)`` over the forward channel window."""
    lo = (size - 1) // 2
    scale = _channel_window_sum(xp, x * x, lo, size - 1 - lo)
    scale *= x.dtype.type(alpha / size)
    scale += x.dtype.type(k)
    return scale


def _lrn_impl(xp, x, *, out, size=5, alpha=1e-4, beta=0.75, k=2.0):
    scale = _lrn_scale(xp, x, size, alpha, k)
    xp.power(scale, x.dtype.type(-beta), out=out)
    out *= x


def _lrn_bwd_infer(dy: ArraySpec, x: ArraySpec, y: ArraySpec, *, size=5, alpha=1e-4,
                   beta=0.75, k=2.0):
    op = "lrn_backward"
    for name, s in (("dy", dy), ("x", x), ("y", y)):
        require_rank(op, name, s, 4)
    require_float(op, dy, x, y)
    if not dy.shape == x.shape == y.shape:
        raise shape_error(op, "dy, x and y must have the same shape", dy, x, y)
    _check_lrn_attrs(op, size, alpha, beta, k)
    return (spec(x.shape, np.result_type(dy.dtype, x.dtype, y.dtype)),)


def _lrn_bwd_impl(xp, dy, x, y, *, out, size=5, alpha=1e-4, beta=0.75, k=2.0):
    """``dx[c] = dy[c]*scale[c]**-beta - 2*alpha*beta/size * x[c] *
    sum(dy[c']*y[c']/scale[c'] for c' whose window holds c)``."""
    scale = _lrn_scale(xp, x, size, alpha, k)
    ratio = dy * y
    ratio /= scale
    lo = (size - 1) // 2
    back = _channel_window_sum(xp, ratio, size - 1 - lo, lo)
    back *= x
    back *= out.dtype.type(2.0 * alpha * beta / size)
    xp.power(scale, out.dtype.type(-beta), out=out)
    out *= dy
    out -= back


# ---------------------------------------------------------------- dropout
def _dropout_infer_for(op: str):
    def infer(x: ArraySpec, *, p, seed):
        require_float(op, x)
        _check_dropout_attrs(op, p, seed)
        return (spec(x.shape, x.dtype),)
    return infer


def _check_dropout_attrs(op: str, p, seed) -> None:
    if not isinstance(p, (int, float, np.number)) or not 0.0 <= p < 1.0:
        raise shape_error(op, "p must be a number in [0, 1)", p)
    if not isinstance(seed, tuple) or not seed \
            or not all(isinstance(s, (int, np.integer)) and s >= 0 for s in seed):
        raise shape_error(op, "seed must be a non-empty tuple of non-negative ints", seed)


def dropout_mask(shape, dtype, p: float, seed: tuple) -> np.ndarray:
    """The host (NumPy) mask ``keep / (1 - p)`` of ``dropout`` for this seed."""
    keep = np.random.default_rng(seed).random(shape, dtype=np.float32) >= p
    kind = np.dtype(dtype).type
    return np.where(keep, kind(1.0 / (1.0 - p)), kind(0.0))


def _dropout_impl(xp, x, *, out, p, seed):
    xp.multiply(x, xp.asarray(dropout_mask(x.shape, x.dtype, p, seed)), out=out)


register("relu_backward", _same_shape_infer("relu_backward"), _relu_bwd_impl).row_split = (0, 1)
register("sigmoid_backward", _same_shape_infer("sigmoid_backward"),
         _sigmoid_bwd_impl).row_split = (0, 1)
register("tanh_backward", _same_shape_infer("tanh_backward"), _tanh_bwd_impl).row_split = (0, 1)
register("lrn", _lrn_infer, _lrn_impl).row_split = (0,)
register("lrn_backward", _lrn_bwd_infer, _lrn_bwd_impl).row_split = (0, 1, 2)
register("dropout", _dropout_infer_for("dropout"), _dropout_impl)
register("dropout_backward", _dropout_infer_for("dropout_backward"), _dropout_impl)
