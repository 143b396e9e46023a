"""2-D max and average pooling, forward and backward.

Output size: the floor rule ``Ho = (H + 2*ph - kh) // sh + 1`` (no ceil mode); ``stride=None``
means stride = kernel. Padding may be at most half the kernel (``2*ph <= kh``), so every
window holds at least one real input element.

- Max pooling pads with ``-inf``: padding never wins. Its backward routes each output
  gradient to the position of the window's maximum; on ties the first maximum in row-major
  window order (top row first, then left to right) takes it all. A window whose maximum is
  NaN passes no gradient.
- Average pooling pads with zeros and always divides by the full kernel area ``kh*kw``
  (padding counts, PyTorch's ``count_include_pad=True``); its backward spreads
  ``dy / (kh*kw)`` over every tap, padding taps dropped.

Kernels loop over the ``kh*kw`` kernel taps only; each step is one vectorised op over the
whole batch.
"""
from __future__ import annotations

from minerva.ops.nn.shared import (crop_into, grad_buffer, pad_hw, pair, require_float,
                                    require_rank, shape4, tap, window_out_hw)
from minerva.ops.registry import ArraySpec, register, shape_error, spec


def _geometry(op: str, kernel, stride, pad):
    """``(kernel, stride, pad)`` as pairs; ``stride=None`` means stride = kernel."""
    kernel = pair(kernel, "kernel", op, 1)
    stride = kernel if stride is None else pair(stride, "stride", op, 1)
    pad = pair(pad, "pad", op, 0)
    if 2 * pad[0] > kernel[0] or 2 * pad[1] > kernel[1]:
        raise shape_error(op, f"pad {pad} must be at most half of kernel {kernel}")
    return kernel, stride, pad


def _pool_out(op: str, x: ArraySpec, kernel, stride, pad) -> ArraySpec:
    require_rank(op, "x", x, 4)
    require_float(op, x)
    kernel, stride, pad = _geometry(op, kernel, stride, pad)
    ho, wo = window_out_hw(op, x, kernel, stride, pad)
    return spec(x.shape[:2] + (ho, wo), x.dtype)


def _require_same(op: str, name: str, a: ArraySpec, b: ArraySpec) -> None:
    if a.shape != b.shape:
        raise shape_error(op, f"{name} shapes differ", a, b)


def _taps(kernel):
    """Kernel offsets ``(i, j)`` in row-major order."""
    return [(i, j) for i in range(kernel[0]) for j in range(kernel[1])]


# ---------------------------------------------------------------- max pooling
def _max_infer(x: ArraySpec, *, kernel, stride=None, pad=0):
    return (_pool_out("max_pool2d", x, kernel, stride, pad),)


def _max_impl(xp, x, *, out, kernel, stride=None, pad=0):
    kernel, stride, pad = _geometry("max_pool2d", kernel, stride, pad)
    xpad = pad_hw(xp, x, pad, float("-inf"))
    out_hw = out.shape[2:]
    taps = _taps(kernel)
    out[...] = tap(xpad, *taps[0], stride, out_hw)
    for i, j in taps[1:]:
        xp.maximum(out, tap(xpad, i, j, stride, out_hw), out=out)


def _max_bwd_infer(dy: ArraySpec, x: ArraySpec, y: ArraySpec, *, kernel, stride=None,
                   pad=0):
    op = "max_pool2d_backward"
    y_expected = _pool_out(op, x, kernel, stride, pad)
    require_float(op, dy, y)
    _require_same(op, "y and max_pool2d(x)", y, y_expected)
    _require_same(op, "dy and y", dy, y)
    return (spec(x.shape, x.dtype),)


def _max_bwd_impl(xp, dy, x, y, *, out, kernel, stride=None, pad=0):
    kernel, stride, pad = _geometry("max_pool2d_backward", kernel, stride, pad)
    xpad = pad_hw(xp, x, pad, float("-inf"))
    dxpad = grad_buffer(xp, out, pad)
    out_hw = y.shape[2:]
    disjoint = stride[0] >= kernel[0] and stride[1] >= kernel[1]
    taps = _taps(kernel)
    hit, taken = xp.empty(y.shape, dtype=bool), xp.zeros(y.shape, dtype=bool)
    for k, (i, j) in enumerate(taps):
        xp.equal(tap(xpad, i, j, stride, out_hw), y, out=hit)
        if k:
            xp.greater(hit, taken, out=hit)   # a hit not taken by an earlier tap
        if k < len(taps) - 1:
            xp.logical_or(taken, hit, out=taken)
        target = tap(dxpad, i, j, stride, out_hw)
        if disjoint:   # each element of dx is in one tap of one window: written once
            xp.multiply(dy, hit, out=target)
        else:
            target += dy * hit
    crop_into(out, dxpad, pad)


# ---------------------------------------------------------------- average pooling
def _avg_infer(x: ArraySpec, *, kernel, stride=None, pad=0):
    return (_pool_out("avg_pool2d", x, kernel, stride, pad),)


def _avg_impl(xp, x, *, out, kernel, stride=None, pad=0):
    kernel, stride, pad = _geometry("avg_pool2d", kernel, stride, pad)
    xpad = pad_hw(xp, x, pad)
    out_hw = out.shape[2:]
    taps = _taps(kernel)
    out[...] = tap(xpad, *taps[0], stride, out_hw)
    for i, j in taps[1:]:
        out += tap(xpad, i, j, stride, out_hw)
    out *= out.dtype.type(1.0 / (kernel[0] * kernel[1]))


def _avg_bwd_infer(dy: ArraySpec, *, x_shape, kernel, stride=None, pad=0):
    op = "avg_pool2d_backward"
    x = spec(shape4(op, "x_shape", x_shape), dy.dtype)
    require_rank(op, "dy", dy, 4)
    _require_same(op, "dy and avg_pool2d(x)", dy, _pool_out(op, x, kernel, stride, pad))
    return (x,)


def _avg_bwd_impl(xp, dy, *, out, x_shape, kernel, stride=None, pad=0):
    kernel, stride, pad = _geometry("avg_pool2d_backward", kernel, stride, pad)
    dxpad = grad_buffer(xp, out, pad)
    share = dy * out.dtype.type(1.0 / (kernel[0] * kernel[1]))
    for i, j in _taps(kernel):
        tap(dxpad, i, j, stride, dy.shape[2:])[...] += share
    crop_into(out, dxpad, pad)


register("max_pool2d", _max_infer, _max_impl).row_split = (0,)
register("max_pool2d_backward", _max_bwd_infer, _max_bwd_impl).row_split = (0, 1, 2)
register("avg_pool2d", _avg_infer, _avg_impl).row_split = (0,)
register("avg_pool2d_backward", _avg_bwd_infer, _avg_bwd_impl).row_split = (0,)
