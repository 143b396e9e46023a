"""2-D convolution: ``conv2d`` and its backward ops, by im2col and matmul.

Layout is ``(N, C, H, W)`` for images and ``(O, C, kh, kw)`` for filters. The output size
follows the floor rule ``Ho = (H + 2*ph - kh) // sh + 1`` (and the same for ``W``); input
rows or columns that no window reaches get a zero gradient. Padding is with zeros.

On the CPU (``xp`` is NumPy), stride-1 layers run the kernels of :mod:`conv_cpu`
(im2col on the padded width, one GEMM per block of images) where they pay
(:func:`conv_cpu.fits`); the generic kernels below serve the other layers and CuPy.

im2col is an ``as_strided`` view of the (padded) input, copied once into a ``(n, C*kh*kw,
Ho*Wo)`` matrix, and one batched matmul consumes it. On the CPU the generic kernels
walk the batch in blocks of images whose columns take about :data:`BLOCK_BYTES`: the columns
are still in cache when the matmul reads them, and malloc reuses such blocks, where one
batch-sized temporary is a fresh ``mmap`` whose page faults cost as much as the copy. On a
GPU the block is the whole batch. The loop is over blocks, never over output pixels.

Backward-data is ``w^T @ dy`` then a col2im scatter-add with a Python loop over the
``kh*kw`` kernel taps only (each step one vectorised add over the block); at stride 1 with
``O <= 2*C`` it is instead the stride-1 convolution of ``dy`` with the flipped filters,
which needs no scatter (on the CPU, by the CPU kernels where they fit).

The checks and window helpers convolution shares with pooling are in
:mod:`minerva.ops.nn.shared`.
"""
from __future__ import annotations

import numpy as np

from minerva.ops.nn import conv_cpu
from minerva.ops.nn.shared import (crop_into, grad_buffer, pad_hw, pair, require_float,
                                    require_rank, shape4, tap, window_out_hw)
from minerva.ops.registry import ArraySpec, register, shape_error, spec

#: On the CPU, the im2col columns of one block of images take about this many bytes.
BLOCK_BYTES = 2 << 20

#: Whether NumPy runs the kernels of :mod:`conv_cpu` where they fit (False: the
#: generic kernels everywhere, as on a GPU; for comparisons and tests).
CPU_KERNELS = True


# ---------------------------------------------------------------- im2col / col2im
def im2col(xp, x, kernel, stride, pad, out_hw):
    """Columns of ``x``: ``(N, C*kh*kw, Ho*Wo)``, a copy (a view only when none is needed)."""
    xpad = pad_hw(xp, x, pad)
    (kh, kw), (sh, sw), (ho, wo) = kernel, stride, out_hw
    sn, sc, s_h, s_w = xpad.strides
    view = xp.lib.stride_tricks.as_strided(
        xpad, (x.shape[0], x.shape[1], kh, kw, ho, wo),
        (sn, sc, s_h, s_w, s_h * sh, s_w * sw))
    return view.reshape(x.shape[0], x.shape[1] * kh * kw, ho * wo)


def col2im_into(xp, out, cols, kernel, stride, pad, out_hw):
    """Sum columns ``cols`` ``(N, C, kh, kw, Ho, Wo)`` back into image ``out`` (overwritten)."""
    dxpad = grad_buffer(xp, out, pad)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            tap(dxpad, i, j, stride, out_hw)[...] += cols[:, :, i, j]
    crop_into(out, dxpad, pad)


def batch_blocks(xp, n: int, item_bytes: int) -> list[slice]:
    """Slices that cover the batch ``range(n)``: on NumPy, blocks of images whose
    temporaries (``item_bytes`` per image) take about :data:`BLOCK_BYTES`; else one block."""
    size = n if xp is not np else BLOCK_BYTES // max(1, item_bytes)
    size = max(1, min(n, size))
    return [slice(lo, min(n, lo + size)) for lo in range(0, n, size)]


def _col_bytes(c: int, kernel, out_hw, dtype) -> int:
    """Bytes of one image's im2col columns."""
    return c * kernel[0] * kernel[1] * out_hw[0] * out_hw[1] * np.dtype(dtype).itemsize


def _cpu_kernels(xp, width: int, kernel, stride, pad, c_in: int, c_out: int) -> bool:
    """Whether a layer runs the CPU kernels of :mod:`conv_cpu` (NumPy only)."""
    return xp is np and CPU_KERNELS and conv_cpu.fits(width, kernel, stride, pad, c_in,
                                                         c_out)


def _geometry(op: str, stride, pad):
    return pair(stride, "stride", op, 1), pair(pad, "pad", op, 0)


# ---------------------------------------------------------------- conv2d
def _conv2d_infer(x: ArraySpec, w: ArraySpec, *bias: ArraySpec, stride=1, pad=0):
    op = "conv2d"
    require_rank(op, "x", x, 4)
    require_rank(op, "w", w, 4)
    require_float(op, x, w, *bias)
    if x.shape[1] != w.shape[1]:
        raise shape_error(op, "input channels of x and w differ", x, w)
    if bias and bias[0].shape != (w.shape[0],):
        raise shape_error(op, "bias must have shape (O,)", w, bias[0])
    stride, pad = _geometry(op, stride, pad)
    ho, wo = window_out_hw(op, x, w.shape[2:], stride, pad)
    dtype = np.result_type(x.dtype, w.dtype, *(b.dtype for b in bias))
    return (spec((x.shape[0], w.shape[0], ho, wo), dtype),)


def _conv2d_impl(xp, x, w, *bias, out, stride=1, pad=0):
    stride, pad = _geometry("conv2d", stride, pad)
    if _cpu_kernels(xp, x.shape[3], w.shape[2:], stride, pad, w.shape[1], w.shape[0]):
        return conv_cpu.forward(x, w, bias[0] if bias else None, out, pad, BLOCK_BYTES)
    n, o, ho, wo = out.shape
    kernel = w.shape[2:]
    wmat, out3 = w.reshape(o, -1), out.reshape(n, o, ho * wo)
    for rows in batch_blocks(xp, n, _col_bytes(x.shape[1], kernel, (ho, wo), x.dtype)):
        cols = im2col(xp, x[rows], kernel, stride, pad, (ho, wo))
        xp.matmul(wmat, cols, out=out3[rows])
        if bias:
            out3[rows] += bias[0].reshape(o, 1)


# ---------------------------------------------------------------- backward data
def _bwd_data_infer(dy: ArraySpec, w: ArraySpec, *, x_shape, stride=1, pad=0):
    op = "conv2d_backward_data"
    require_rank(op, "dy", dy, 4)
    require_rank(op, "w", w, 4)
    require_float(op, dy, w)
    x = spec(shape4(op, "x_shape", x_shape), dy.dtype)
    _check_dy(op, dy, x, w, stride, pad)
    return (spec(x.shape, np.result_type(dy.dtype, w.dtype)),)


def _bwd_data_impl(xp, dy, w, *, out, x_shape, stride=1, pad=0):
    stride, pad = _geometry("conv2d_backward_data", stride, pad)
    n, o, ho, wo = dy.shape
    c, kh, kw = w.shape[1:]
    if stride == (1, 1) and pad[0] < kh and pad[1] < kw and o <= 2 * c:
        return _bwd_data_by_conv(xp, dy, w, out, pad)
    wt, dy3 = w.reshape(o, -1).T, dy.reshape(n, o, ho * wo)
    for rows in batch_blocks(xp, n, _col_bytes(c, (kh, kw), (ho, wo), out.dtype)):
        cols = xp.matmul(wt, dy3[rows]).reshape(-1, c, kh, kw, ho, wo)
        col2im_into(xp, out[rows], cols, (kh, kw), stride, pad, (ho, wo))


def _bwd_data_by_conv(xp, dy, w, out, pad) -> None:
    """Stride-1 backward data as a forward conv: ``dy`` padded by ``k - 1 - pad`` with the
    filters flipped and in/out channels swapped. Same flops, no scatter-add; the columns
    have ``O`` channels instead of ``C`` (hence the ``O <= 2*C`` rule of the caller)."""
    kh, kw = w.shape[2:]
    flipped = xp.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
    _conv2d_impl(xp, dy, flipped, out=out, pad=(kh - 1 - pad[0], kw - 1 - pad[1]))


# ---------------------------------------------------------------- backward filter
def _bwd_filter_infer(dy: ArraySpec, x: ArraySpec, *, w_shape, stride=1, pad=0):
    op = "conv2d_backward_filter"
    require_rank(op, "dy", dy, 4)
    require_rank(op, "x", x, 4)
    require_float(op, dy, x)
    w = spec(shape4(op, "w_shape", w_shape), dy.dtype)
    _check_dy(op, dy, x, w, stride, pad)
    return (spec(w.shape, np.result_type(dy.dtype, x.dtype)),)


def _bwd_filter_impl(xp, dy, x, *, out, w_shape, stride=1, pad=0):
    stride, pad = _geometry("conv2d_backward_filter", stride, pad)
    kernel = out.shape[2:]
    if _cpu_kernels(xp, x.shape[3], kernel, stride, pad, x.shape[1], out.shape[0]):
        return conv_cpu.backward_filter(dy, x, out, pad, BLOCK_BYTES)
    n, o, ho, wo = dy.shape
    dy3, flat_out = dy.reshape(n, o, ho * wo), out.reshape(o, -1)
    flat_out[...] = 0
    for rows in batch_blocks(xp, n, _col_bytes(x.shape[1], kernel, (ho, wo), x.dtype)):
        cols = im2col(xp, x[rows], kernel, stride, pad, (ho, wo))
        flat_out += _filter_grad_t(xp, dy3[rows], cols).T


def _filter_grad_t(xp, dy3, cols):
    """``sum_n cols[n] @ dy3[n].T``: the filter gradient transposed, ``(C*kh*kw, O)``.
    (This operand order runs faster in BLAS than ``dy3[n] @ cols[n].T``.)"""
    o, length = dy3.shape[1:]
    if o <= length:
        # The (n, CK, O) temporary is no bigger than cols: batched matmul, sum the batch.
        return xp.matmul(cols, dy3.transpose(0, 2, 1)).sum(axis=0)
    # One long gemm over n*L; transposed copies keep the temporary small.
    cols2 = cols.transpose(1, 0, 2).reshape(cols.shape[1], -1)
    return xp.matmul(cols2, dy3.transpose(1, 0, 2).reshape(o, -1).T)


# ---------------------------------------------------------------- backward bias
def _bwd_bias_infer(dy: ArraySpec):
    op = "conv2d_backward_bias"
    require_rank(op, "dy", dy, 4)
    require_float(op, dy)
    return (spec((dy.shape[1],), dy.dtype),)


def _bwd_bias_impl(xp, dy, *, out):
    if xp is np and CPU_KERNELS:
        return conv_cpu.backward_bias(dy, out)
    xp.sum(dy, axis=(0, 2, 3), out=out)


# ---------------------------------------------------------------- checks


def _check_dy(op: str, dy: ArraySpec, x: ArraySpec, w: ArraySpec, stride, pad) -> None:
    """Raise unless ``dy`` is the output shape of conv2d(x, w) at this stride and pad."""
    if x.shape[1] != w.shape[1]:
        raise shape_error(op, "input channels of x and w differ", x, w)
    stride, pad = _geometry(op, stride, pad)
    ho, wo = window_out_hw(op, x, w.shape[2:], stride, pad)
    expected = (x.shape[0], w.shape[0], ho, wo)
    if dy.shape != expected:
        raise shape_error(op, f"dy must have shape {expected}", dy, x, w)


def _row_sum(op_def, inputs) -> None:
    """Mark a gradient that sums over the images of ``inputs`` (see ``OpDef.row_sum``)."""
    op_def.row_split, op_def.row_sum = inputs, True


register("conv2d", _conv2d_infer, _conv2d_impl).row_split = (0,)
register("conv2d_backward_data", _bwd_data_infer, _bwd_data_impl).row_split = (0,)
_row_sum(register("conv2d_backward_filter", _bwd_filter_infer, _bwd_filter_impl), (0, 1))
_row_sum(register("conv2d_backward_bias", _bwd_bias_infer, _bwd_bias_impl), (0,))
