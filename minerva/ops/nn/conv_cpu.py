"""Stride-1 convolution kernels for NumPy (CPU): im2col on the padded width, one GEMM per
block of images.

**Padded-width im2col.** Each image is zero-padded and flattened per channel, with one
spare row below, so the rows are ``Wp = W + 2*pw`` long. Computing the output on that
width, kernel tap ``(i, j)`` of every output pixel of a channel is one contiguous run,
``flat[i*Wp + j : i*Wp + j + Ho*Wp]``. The im2col copy then moves runs of ``Ho*Wp``
elements instead of rows of ``Wo`` (5x faster at MNIST sizes, where ``Wo`` is 14). The
price is ``kw - 1`` junk columns per output row, computed and dropped when the result is
copied out: ``(kw-1)/Wp`` more GEMM work (12 % at 3x3 on 14x14); :func:`fits` declines
layers where that share is larger than :data:`MAX_JUNK`.

**One GEMM per block.** The columns of a block of ``m`` images are laid out
``(C*kh*kw, m, L)`` with ``L = Ho*Wp``: the whole block is one ``(O, CK) @ (CK, m*L)``
GEMM, big enough for several BLAS threads to share (per-image GEMMs of 64 x 288 x 224
barely speed up on two). The result ``(O, m, L)`` is copied into ``(m, O, Ho, Wo)``, with
the bias added on the way. Blocks are sized so their temporaries take about
``block_bytes`` (cache-sized; see conv.BLOCK_BYTES); the buffers are allocated once per
call and reused by every block, so their zero borders are written once.

Backward filter uses the same columns: ``dW = dy_pw (O, m*L) @ cols (CK, m*L)^T`` summed
over blocks, where ``dy_pw`` is ``dy`` laid out on the padded width with zeros in the junk
columns (so they add nothing). Backward data is the forward kernel applied to ``dy`` with
flipped filters (see ops.nn.conv). The bias gradient is a matrix-vector product with ones.
Only NumPy calls these; CuPy keeps the generic kernels.
"""
from __future__ import annotations

import numpy as np

#: The largest share of junk columns ``(kw - 1) / Wp`` for which the padded width pays.
MAX_JUNK = 0.25

#: OpenBLAS (x86-64) runs products with ``M*N*K`` up to ``100**3`` through its "small
#: matrix" kernels, which skip packing; just above that, a tiny ``M x N`` product with a
#: long ``K`` (the 1-channel first layer: 32 x 9 x K) runs 3-4x slower. Blocks of such
#: layers stay under it.
SMALL_GEMM = 100 ** 3


def fits(w_in: int, kernel, stride, pad, c_in: int, c_out: int) -> bool:
    """Whether the padded-width kernels pay for a layer of ``c_in`` to ``c_out`` channels
    on images ``w_in`` wide: stride 1, few junk columns, and no fewer im2col rows
    (``c_in*kh*kw``) than output channels. (Copying the result out of the padded width
    moves ``Wo``-long rows, as the generic im2col does: where the output has more rows
    than the columns, as in a first layer on 1-channel images, the generic kernels,
    which multiply straight into the output, copy less.)"""
    wp = w_in + 2 * pad[1]
    return (stride == (1, 1) and (kernel[1] - 1) <= MAX_JUNK * wp
            and c_in * kernel[0] * kernel[1] >= c_out)


class _Workspace:
    """Buffers of one kernel call, per block size ``m`` (at most two sizes: the full
    block and the last, shorter one), allocated zeroed on first use."""

    def __init__(self, dtype):
        self.dtype = dtype
        self._buffers: dict = {}

    def get(self, name: str, shape: tuple) -> np.ndarray:
        """The zero-initialised buffer ``name`` of ``shape`` (the same one each time)."""
        key = (name, shape)
        buf = self._buffers.get(key)
        if buf is None:
            buf = self._buffers[key] = np.zeros(shape, self.dtype)
        return buf


def _geometry(x_shape, kernel, pad):
    """``(Hp, Wp, Ho, Wo, L)``: padded size, output size, output length on the padded
    width."""
    hp, wp = x_shape[2] + 2 * pad[0], x_shape[3] + 2 * pad[1]
    ho, wo = hp - kernel[0] + 1, wp - kernel[1] + 1
    return hp, wp, ho, wo, ho * wp


def _block_size(n: int, per_image_bytes: int, per_image_gemm: int, block_bytes: int) -> int:
    """Images per block: about ``block_bytes`` of columns (``per_image_bytes`` each), or
    as many as keep a GEMM of ``per_image_gemm`` (``M*N*K``) per image under
    :data:`SMALL_GEMM`."""
    if 2 * per_image_gemm <= SMALL_GEMM:
        return max(1, min(n, SMALL_GEMM // per_image_gemm))
    return max(1, min(n, block_bytes // max(1, per_image_bytes)))


def _columns(ws: _Workspace, x, kernel, pad, geo) -> np.ndarray:
    """The padded-width im2col columns of images ``x`` (m, C, H, W): ``(C*kh*kw, m*L)``."""
    m, c, h, w = x.shape
    (kh, kw), (ph, pw) = kernel, pad
    hp, wp, _, _, length = geo
    flat = ws.get("flat", (m, c, hp + 1, wp))
    flat[:, :, ph:ph + h, pw:pw + w] = x
    sn, sc, _, item = flat.strides
    taps = np.lib.stride_tricks.as_strided(
        flat, (c, kh, kw, m, length), (sc, wp * item, item, sn, item), writeable=False)
    cols = ws.get("cols", (c, kh, kw, m, length))
    cols[...] = taps
    return cols.reshape(c * kh * kw, m * length)


def forward(x, w, bias, out, pad, block_bytes: int) -> None:
    """``out = conv2d(x, w) + bias`` at stride 1 (``bias`` may be None)."""
    n, o = x.shape[0], w.shape[0]
    kernel = w.shape[2:]
    geo = _geometry(x.shape, kernel, pad)
    _, wp, ho, wo, length = geo
    ck = w.shape[1] * kernel[0] * kernel[1]
    ws = _Workspace(out.dtype)
    wmat = w.reshape(o, ck).astype(out.dtype, copy=False)
    bias4 = None if bias is None else bias.reshape(1, o, 1, 1)
    size = _block_size(n, ck * length * out.itemsize, ck * o * length, block_bytes)
    for lo in range(0, n, size):
        rows = slice(lo, min(n, lo + size))
        cols = _columns(ws, x[rows], kernel, pad, geo)
        m = rows.stop - lo
        prod = ws.get("prod", (o, m * length))
        np.matmul(wmat, cols, out=prod)
        out[rows] = prod.reshape(o, m, ho, wp)[:, :, :, :wo].transpose(1, 0, 2, 3)
        if bias4 is not None:   # apart from the copy: NumPy adds over whole images
            out[rows] += bias4


def backward_filter(dy, x, out, pad, block_bytes: int) -> None:
    """``out`` (O, C, kh, kw) = the filter gradient of a stride-1 conv2d."""
    n, o = dy.shape[:2]
    kernel = out.shape[2:]
    geo = _geometry(x.shape, kernel, pad)
    _, wp, ho, wo, length = geo
    ck = x.shape[1] * kernel[0] * kernel[1]
    ws = _Workspace(out.dtype)
    grad_t = ws.get("grad_t", (ck, o))   # the gradient transposed: BLAS runs this faster
    size = _block_size(n, ck * length * out.itemsize, ck * o * length, block_bytes)
    for lo in range(0, n, size):
        rows = slice(lo, min(n, lo + size))
        cols = _columns(ws, x[rows], kernel, pad, geo)
        m = rows.stop - lo
        dy_pw = ws.get("dy", (o, m, ho, wp))   # junk columns stay zero
        dy_pw[:, :, :, :wo] = dy[rows].transpose(1, 0, 2, 3)
        dy2 = dy_pw.reshape(o, m * length)
        if lo == 0:
            np.matmul(cols, dy2.T, out=grad_t)
        else:
            grad_t += cols @ dy2.T
    out[...] = grad_t.T.reshape(out.shape)


def backward_bias(dy, out) -> None:
    """``out`` (O,) = the bias gradient, ``dy`` summed over images and pixels: a BLAS
    matrix-vector product per image (3-4x faster than NumPy's sum over axes 0, 2, 3)."""
    n, o = dy.shape[:2]
    pixels = dy.reshape(n, o, -1)
    np.sum(pixels @ np.ones(pixels.shape[2], dy.dtype), axis=0, out=out)
