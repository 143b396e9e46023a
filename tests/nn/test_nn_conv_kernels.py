"""The CPU convolution kernels (``minerva.ops.nn.conv_cpu``: padded-width im2col, one GEMM
per block of images) against the nested-loop reference and against the generic kernels
(the ones CuPy runs), on the shapes where they differ: odd and non-square sizes, every pad
up to the kernel, 1x1 to 5x5 kernels, batch 1, blocks with a shorter last block, mixed
dtypes, non-contiguous inputs, and the layers they decline (stride 2, many junk columns).
"""
from __future__ import annotations

import numpy as np
import pytest

from minerva.ops.nn import conv as nn_conv, conv_cpu as nn_conv_cpu
from tests.support.nn_fixtures import run_op
from tests.nn.test_nn_ops import ref_conv2d

RNG = np.random.default_rng(7)

# (x shape (N, C, H, W), filters (O, kh, kw), pad)
CASES = [
    ((1, 1, 5, 7), (2, 3, 3), (1, 1)),       # batch 1, one channel
    ((3, 2, 7, 9), (4, 3, 3), (0, 0)),       # odd, non-square, no pad
    ((2, 3, 6, 11), (5, 3, 2), (2, 1)),      # non-square kernel, uneven pads
    ((2, 4, 5, 8), (4, 1, 1), (0, 0)),       # 1x1 (no junk columns at all)
    ((2, 2, 9, 12), (3, 5, 3), (2, 2)),      # 5x3 kernel, pad as large as allowed
    ((5, 3, 8, 8), (6, 3, 3), (1, 1)),       # the MNIST geometry, several images
    ((2, 2, 4, 12), (3, 2, 2), (1, 0)),      # even kernel, pad in H only
]


def _inputs(x_shape, w_shape, dtype=np.float64):
    n, c = x_shape[:2]
    o, kh, kw = w_shape
    x = RNG.standard_normal(x_shape).astype(dtype)
    w = RNG.standard_normal((o, c, kh, kw)).astype(dtype)
    return x, w, RNG.standard_normal(o).astype(dtype)


def _spy(monkeypatch, name: str) -> list:
    """Count calls of ``nn_conv_cpu.<name>`` (to know the CPU kernel ran)."""
    calls, real = [], getattr(nn_conv_cpu, name)

    def counted(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)
    monkeypatch.setattr(nn_conv_cpu, name, counted)
    return calls


def _generic(monkeypatch):
    """Make the next op calls take the generic (CuPy's) kernels on NumPy."""
    monkeypatch.setattr(nn_conv, "CPU_KERNELS", False)


@pytest.fixture(params=["one-block", "many-blocks"])
def blocks(request, monkeypatch):
    """Whole batch in one block, or one or two images per block (a shorter last block)."""
    if request.param == "many-blocks":
        monkeypatch.setattr(nn_conv_cpu, "SMALL_GEMM", 0)
        monkeypatch.setattr(nn_conv, "BLOCK_BYTES", 1)
    return request.param


# ---------------------------------------------------------------- which layers
def test_fits_takes_stride_one_with_few_junk_columns_and_enough_rows():
    fits = nn_conv_cpu.fits
    assert fits(14, (3, 3), (1, 1), (1, 1), 32, 64)       # MNIST conv2: 2/16 junk
    assert fits(14, (3, 3), (1, 1), (1, 1), 64, 32)       # its backward data
    assert fits(5, (1, 1), (1, 1), (0, 0), 4, 4)          # 1x1: no junk
    assert not fits(14, (3, 3), (2, 2), (1, 1), 32, 64)   # stride 2: generic kernels
    assert not fits(5, (5, 5), (1, 1), (0, 0), 8, 8)      # 4 junk of 5 columns
    assert not fits(28, (3, 3), (1, 1), (1, 1), 1, 32)    # MNIST conv1: 9 rows, 32 out


def test_block_size_rule():
    # a tiny per-image GEMM: as many images as stay under SMALL_GEMM
    assert nn_conv_cpu._block_size(128, 10_000, 250_000, 1 << 20) == 4
    # a large one: as many as fit in the bytes, at least one, at most the batch
    assert nn_conv_cpu._block_size(128, 300_000, 10**7, 2 << 20) == 6   # 2 MiB of columns
    assert nn_conv_cpu._block_size(128, 10**8, 10**7, 2 << 20) == 1
    assert nn_conv_cpu._block_size(3, 1, 10**7, 2 << 20) == 3


# ---------------------------------------------------------------- against the references
@pytest.mark.parametrize("x_shape,w_shape,pad", CASES)
@pytest.mark.parametrize("with_bias", [False, True])
def test_forward_matches_reference(x_shape, w_shape, pad, with_bias, blocks,
                                    monkeypatch):
    x, w, b = _inputs(x_shape, w_shape)
    calls = _spy(monkeypatch, "forward")
    inputs = (x, w, b) if with_bias else (x, w)
    got = run_op(np, "conv2d", *inputs, pad=pad)
    assert calls == ["forward"]
    want = ref_conv2d(x, w, b if with_bias else None, (1, 1), pad)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("x_shape,w_shape,pad", CASES)
def test_backward_data_matches_generic(x_shape, w_shape, pad, blocks, monkeypatch):
    x, w, _ = _inputs(x_shape, w_shape)
    dy = RNG.standard_normal(run_op(np, "conv2d", x, w, pad=pad).shape)
    calls = _spy(monkeypatch, "forward")
    got = run_op(np, "conv2d_backward_data", dy, w, x_shape=x.shape, pad=pad)
    assert calls == ["forward"]   # as a convolution of dy, by the CPU kernel
    _generic(monkeypatch)
    want = run_op(np, "conv2d_backward_data", dy, w, x_shape=x.shape, pad=pad)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("x_shape,w_shape,pad", CASES)
def test_backward_filter_matches_generic(x_shape, w_shape, pad, blocks, monkeypatch):
    x, w, _ = _inputs(x_shape, w_shape)
    dy = RNG.standard_normal(run_op(np, "conv2d", x, w, pad=pad).shape)
    calls = _spy(monkeypatch, "backward_filter")
    got = run_op(np, "conv2d_backward_filter", dy, x, w_shape=w.shape, pad=pad)
    assert calls == ["backward_filter"]
    _generic(monkeypatch)
    want = run_op(np, "conv2d_backward_filter", dy, x, w_shape=w.shape, pad=pad)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_backward_bias_matches_generic(dtype, monkeypatch):
    dy = RNG.standard_normal((3, 5, 7, 9)).astype(dtype)
    strided = RNG.standard_normal((5, 3, 7, 9)).astype(dtype).transpose(1, 0, 2, 3)
    calls = _spy(monkeypatch, "backward_bias")
    got = [run_op(np, "conv2d_backward_bias", a) for a in (dy, strided)]
    assert calls == ["backward_bias"] * 2
    _generic(monkeypatch)
    for g, a in zip(got, (dy, strided)):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, run_op(np, "conv2d_backward_bias", a),
                                   rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_backward_ops_are_the_gradients_of_the_forward():
    """Directed derivative: <dx, v> = d/dt <conv(x + t v), dy>, and the same for w."""
    x, w, _ = _inputs((2, 3, 6, 7), (4, 3, 3), np.float64)
    dy = RNG.standard_normal((2, 4, 6, 7))
    vx, vw = RNG.standard_normal(x.shape), RNG.standard_normal(w.shape)
    dx = run_op(np, "conv2d_backward_data", dy, w, x_shape=x.shape, pad=1)
    dw = run_op(np, "conv2d_backward_filter", dy, x, w_shape=w.shape, pad=1)
    # conv2d is linear in x and in w: the directional derivative is exact
    assert np.isclose(np.sum(dx * vx), np.sum(run_op(np, "conv2d", vx, w, pad=1) * dy))
    assert np.isclose(np.sum(dw * vw), np.sum(run_op(np, "conv2d", x, vw, pad=1) * dy))


# ---------------------------------------------------------------- dtypes and layouts
def test_float32_and_mixed_dtypes(blocks):
    x, w, b = _inputs((3, 2, 8, 8), (4, 3, 3), np.float32)
    got = run_op(np, "conv2d", x, w, b, pad=1)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref_conv2d(x, w, b, (1, 1), (1, 1)), rtol=1e-4,
                               atol=1e-4)
    mixed = run_op(np, "conv2d", x, w.astype(np.float64), pad=1)   # float64 result
    assert mixed.dtype == np.float64
    np.testing.assert_allclose(mixed, ref_conv2d(x, w, None, (1, 1), (1, 1)), atol=1e-10)
    dy = RNG.standard_normal(got.shape).astype(np.float32)
    dw = run_op(np, "conv2d_backward_filter", dy, x.astype(np.float64), w_shape=w.shape,
                pad=1)
    assert dw.dtype == np.float64


def test_noncontiguous_inputs(monkeypatch):
    x = RNG.standard_normal((7, 9, 2, 3)).transpose(2, 3, 0, 1)   # (2, 3, 7, 9) strided
    w = RNG.standard_normal((4, 3, 4, 5))[:, :, :3, 1:4]             # (4, 3, 3, 3) strided
    dy = RNG.standard_normal((4, 7, 9, 2)).transpose(3, 0, 1, 2)  # (2, 4, 7, 9)
    got = [run_op(np, "conv2d", x, w, pad=1),
           run_op(np, "conv2d_backward_data", dy, w, x_shape=x.shape, pad=1),
           run_op(np, "conv2d_backward_filter", dy, x, w_shape=w.shape, pad=1)]
    np.testing.assert_allclose(got[0], ref_conv2d(x, w, None, (1, 1), (1, 1)), atol=1e-10)
    _generic(monkeypatch)
    np.testing.assert_allclose(
        got[1], run_op(np, "conv2d_backward_data", dy, w, x_shape=x.shape, pad=1),
        atol=1e-10)
    np.testing.assert_allclose(
        got[2], run_op(np, "conv2d_backward_filter", dy, x, w_shape=w.shape, pad=1),
        atol=1e-10)


@pytest.mark.parametrize("stride,pad", [((2, 2), (1, 1)), ((1, 2), (0, 1)),
                                        ((1, 1), (0, 0))])
def test_declined_layers_use_the_generic_kernels(stride, pad):
    """Stride 2 and a 5x5 kernel on a 6-wide image (most columns junk) are declined; the
    ops still match the reference there."""
    x, w, b = _inputs((2, 3, 7, 6), (4, 5, 5))
    assert not nn_conv_cpu.fits(x.shape[3], w.shape[2:], stride, pad, 3, 4)
    got = run_op(np, "conv2d", x, w, b, stride=stride, pad=pad)
    np.testing.assert_allclose(got, ref_conv2d(x, w, b, stride, pad), atol=1e-10)


def test_mnist_layer_sizes_match_generic(monkeypatch):
    """The apps' second layer at batch 9 (blocks of 2 images with a remainder) in float32."""
    monkeypatch.setattr(nn_conv, "BLOCK_BYTES", 600_000)
    x, w, b = _inputs((9, 32, 14, 14), (64, 3, 3), np.float32)
    dy = RNG.standard_normal((9, 64, 14, 14)).astype(np.float32)
    got = [run_op(np, "conv2d", x, w, b, pad=1),
           run_op(np, "conv2d_backward_data", dy, w, x_shape=x.shape, pad=1),
           run_op(np, "conv2d_backward_filter", dy, x, w_shape=w.shape, pad=1)]
    _generic(monkeypatch)
    want = [run_op(np, "conv2d", x, w, b, pad=1),
            run_op(np, "conv2d_backward_data", dy, w, x_shape=x.shape, pad=1),
            run_op(np, "conv2d_backward_filter", dy, x, w_shape=w.shape, pad=1)]
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=1e-4, atol=1e-3)
