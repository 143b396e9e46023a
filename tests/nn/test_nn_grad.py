"""Every NN backward op against central finite differences in float64.

Each check builds a scalar ``L = sum(forward(...) * dy)`` with a random ``dy`` and compares
the backward op's result with the numeric gradient of ``L``. The forward ops run on NumPy
(they are checked against references in test_nn_ops.py); the backward op runs on ``xp``.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.support.nn_fixtures import numeric_grad, run_op, xp  # noqa: F401  (xp is a fixture)
from tests.nn.test_nn_ops import CONV_GEOMETRY, POOL_GEOMETRY

RNG = np.random.default_rng(99)
TOL = dict(rtol=1e-6, atol=1e-7)


def fwd(name, *arrays, **attrs):
    """Forward op on NumPy."""
    return run_op(np, name, *arrays, **attrs)


def loss_grad(forward, a, dy):
    """Numeric gradient of ``sum(forward(a) * dy)`` with respect to ``a``."""
    return numeric_grad(lambda v: float(np.sum(forward(v) * dy)), a)


# ---------------------------------------------------------------- conv2d
@pytest.mark.parametrize("kernel,stride,pad", CONV_GEOMETRY)
def test_conv2d_backward_data(xp, kernel, stride, pad):
    x = RNG.standard_normal((2, 3, 7, 6))
    w = RNG.standard_normal((4, 3) + kernel)
    dy = RNG.standard_normal(fwd("conv2d", x, w, stride=stride, pad=pad).shape)
    got = run_op(xp, "conv2d_backward_data", dy, w, x_shape=x.shape, stride=stride, pad=pad)
    want = loss_grad(lambda v: fwd("conv2d", v, w, stride=stride, pad=pad), x, dy)
    np.testing.assert_allclose(got, want, **TOL)


@pytest.mark.parametrize("kernel,stride,pad", CONV_GEOMETRY)
@pytest.mark.parametrize("n_out", [2, 40])  # both matmul paths: O <= Ho*Wo and O > Ho*Wo
def test_conv2d_backward_filter(xp, kernel, stride, pad, n_out):
    x = RNG.standard_normal((2, 3, 7, 6))
    w = RNG.standard_normal((n_out, 3) + kernel)
    dy = RNG.standard_normal(fwd("conv2d", x, w, stride=stride, pad=pad).shape)
    got = run_op(xp, "conv2d_backward_filter", dy, x, w_shape=w.shape, stride=stride,
                 pad=pad)
    want = loss_grad(lambda v: fwd("conv2d", x, v, stride=stride, pad=pad), w, dy)
    np.testing.assert_allclose(got, want, **TOL)


def test_conv2d_backward_bias(xp):
    x, w, b = (RNG.standard_normal(s) for s in [(2, 3, 5, 6), (4, 3, 2, 3), (4,)])
    dy = RNG.standard_normal(fwd("conv2d", x, w, b, stride=(2, 1)).shape)
    got = run_op(xp, "conv2d_backward_bias", dy)
    want = loss_grad(lambda v: fwd("conv2d", x, w, v, stride=(2, 1)), b, dy)
    np.testing.assert_allclose(got, want, **TOL)


def test_conv2d_backward_float32(xp):
    x = RNG.standard_normal((3, 2, 8, 8)).astype(np.float32)
    w = RNG.standard_normal((4, 2, 3, 3)).astype(np.float32)
    dy = RNG.standard_normal((3, 4, 4, 4)).astype(np.float32)
    attrs = dict(stride=2, pad=1)
    dx = run_op(xp, "conv2d_backward_data", dy, w, x_shape=x.shape, **attrs)
    dw = run_op(xp, "conv2d_backward_filter", dy, x, w_shape=w.shape, **attrs)
    assert dx.dtype == dw.dtype == np.float32
    f64 = [a.astype(np.float64) for a in (x, w, dy)]
    np.testing.assert_allclose(
        dx, run_op(np, "conv2d_backward_data", f64[2], f64[1], x_shape=x.shape, **attrs),
        rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        dw, run_op(np, "conv2d_backward_filter", f64[2], f64[0], w_shape=w.shape, **attrs),
        rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- pooling
@pytest.mark.parametrize("kernel,stride,pad", POOL_GEOMETRY)
def test_max_pool2d_backward(xp, kernel, stride, pad):
    # distinct, well-separated values: no ties, and +-eps never changes the argmax
    x = RNG.permutation(2 * 3 * 7 * 8).reshape(2, 3, 7, 8) * 0.01
    attrs = dict(kernel=kernel, stride=stride, pad=pad)
    y = fwd("max_pool2d", x, **attrs)
    dy = RNG.standard_normal(y.shape)
    got = run_op(xp, "max_pool2d_backward", dy, x, y, **attrs)
    want = loss_grad(lambda v: fwd("max_pool2d", v, **attrs), x, dy)
    np.testing.assert_allclose(got, want, **TOL)


def test_max_pool2d_backward_ties_go_to_first_in_row_major_order(xp):
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = 5.0  # window (0,0): two maxima; (0,1) before (1,0)
    attrs = dict(kernel=2, stride=2, pad=0)
    y = fwd("max_pool2d", x, **attrs)
    dy = np.array([[[[1.0, 2.0], [3.0, 4.0]]]])
    got = run_op(xp, "max_pool2d_backward", dy, x, y, **attrs)
    want = np.zeros((1, 1, 4, 4))
    want[0, 0, 0, 1] = 1.0  # not (1, 0)
    want[0, 0, 0, 2] = 2.0  # all-zero windows: the top-left element
    want[0, 0, 2, 0] = 3.0
    want[0, 0, 2, 2] = 4.0
    np.testing.assert_array_equal(got, want)


def test_max_pool2d_backward_overlapping_windows_accumulate(xp):
    x = np.zeros((1, 1, 3, 3))
    x[0, 0, 1, 1] = 1.0  # the centre is the max of all four 2x2 windows
    y = fwd("max_pool2d", x, kernel=2, stride=1)
    got = run_op(xp, "max_pool2d_backward", np.ones_like(y), x, y, kernel=2, stride=1)
    assert got[0, 0, 1, 1] == 4.0 and got.sum() == 4.0


@pytest.mark.parametrize("kernel,stride,pad", POOL_GEOMETRY)
def test_avg_pool2d_backward(xp, kernel, stride, pad):
    x = RNG.standard_normal((2, 3, 7, 8))
    attrs = dict(kernel=kernel, stride=stride, pad=pad)
    dy = RNG.standard_normal(fwd("avg_pool2d", x, **attrs).shape)
    got = run_op(xp, "avg_pool2d_backward", dy, x_shape=x.shape, **attrs)
    want = loss_grad(lambda v: fwd("avg_pool2d", v, **attrs), x, dy)
    np.testing.assert_allclose(got, want, **TOL)


# ---------------------------------------------------------------- cross-entropy
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_backward(xp, reduction):
    logits = RNG.standard_normal((5, 4)) * 2
    labels = RNG.integers(0, 4, size=5)
    got = run_op(xp, "cross_entropy_backward", logits, labels, reduction=reduction)
    want = loss_grad(lambda v: fwd("cross_entropy", v, labels, reduction=reduction),
                     logits, 1.0)
    np.testing.assert_allclose(got, want, **TOL)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_backward_with_upstream_gradient(xp, reduction):
    logits = RNG.standard_normal((5, 3))
    labels = RNG.integers(0, 3, size=5).astype(np.int32)
    dy = RNG.standard_normal((5,) if reduction == "none" else ())
    got = run_op(xp, "cross_entropy_backward", logits, labels, dy, reduction=reduction)
    want = loss_grad(lambda v: fwd("cross_entropy", v, labels, reduction=reduction),
                     logits, dy)
    np.testing.assert_allclose(got, want, **TOL)


# ---------------------------------------------------------------- activations
def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


@pytest.mark.parametrize("name,forward,use_output", [
    ("relu_backward", lambda v: np.maximum(v, 0.0), False),
    ("sigmoid_backward", _sigmoid, True),
    ("tanh_backward", np.tanh, True),
])
def test_activation_backward(xp, name, forward, use_output):
    x = RNG.standard_normal((3, 4, 5))
    x[np.abs(x) < 1e-3] = 0.5  # keep relu's kink out of the finite-difference step
    dy = RNG.standard_normal(x.shape)
    partner = forward(x) if use_output else x
    got = run_op(xp, name, dy, partner)
    np.testing.assert_allclose(got, loss_grad(forward, x, dy), **TOL)


@pytest.mark.parametrize("size,alpha,beta,k", [(5, 1e-2, 0.75, 2.0), (3, 0.5, 0.6, 1.0),
                                               (4, 0.3, 0.9, 1.5), (2, 1.0, 1.0, 1.0),
                                               (8, 0.2, 0.75, 1.0)])  # window > channels
def test_lrn_backward(xp, size, alpha, beta, k):
    x = RNG.standard_normal((2, 6, 3, 2)) * 2
    attrs = dict(size=size, alpha=alpha, beta=beta, k=k)
    y = fwd("lrn", x, **attrs)
    dy = RNG.standard_normal(x.shape)
    got = run_op(xp, "lrn_backward", dy, x, y, **attrs)
    np.testing.assert_allclose(got, loss_grad(lambda v: fwd("lrn", v, **attrs), x, dy),
                               **TOL)


@pytest.mark.parametrize("p", [0.0, 0.3, 0.8])
def test_dropout_backward(xp, p):
    x = RNG.standard_normal((4, 6))
    dy = RNG.standard_normal(x.shape)
    got = run_op(xp, "dropout_backward", dy, p=p, seed=(5, 11))
    want = loss_grad(lambda v: fwd("dropout", v, p=p, seed=(5, 11)), x, dy)
    np.testing.assert_allclose(got, want, **TOL)
