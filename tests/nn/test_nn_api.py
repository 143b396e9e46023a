"""Every ``mv.nn`` op of API.md through the public API, on every kind of device.

Each test takes the ``device_kind`` fixture (conftest.py): the runtime runs on a CPU device,
then on a GPU (skipped without one). Forward results are checked against the plain
references of test_nn_ops.py; backward results against central finite differences of those
references (float64, tiny shapes). Shape errors must raise ``mv.ShapeError`` at the call.
"""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from minerva.ops.nn import conv as nn_conv
from tests.support.nn_fixtures import numeric_grad
from tests.nn.test_nn_ops import (ref_conv2d, ref_cross_entropy, ref_lrn, ref_pool,
                         ref_softmax)

RNG = np.random.default_rng(7)
TOL = dict(rtol=1e-6, atol=1e-7)


def put(*arrays):
    """Host arrays as NArrays on the current device."""
    return [mv.array(a) for a in arrays]


def check(got, want, **tol):
    """``got`` (an NArray) lives on the current device and matches ``want`` (tolerances
    ``tol`` override :data:`TOL`)."""
    assert got.device == mv.current_device()
    np.testing.assert_allclose(got.to_numpy(), want, **{**TOL, **tol})


def grad_of(forward, a, dy):
    """Numeric gradient of ``sum(forward(a) * dy)`` with respect to ``a``."""
    return numeric_grad(lambda v: float(np.sum(forward(v) * dy)), a)


# ---------------------------------------------------------------- convolution
def test_conv2d_with_bias_int_stride_and_pair_pad(device_kind):
    x, w, b = (RNG.standard_normal(s) for s in [(2, 3, 7, 6), (4, 3, 3, 2), (4,)])
    y = mv.nn.conv2d(*put(x, w, b), stride=2, pad=(1, 0))
    check(y, ref_conv2d(x, w, b, (2, 2), (1, 0)), atol=1e-10)


def test_conv2d_float32_stays_float32(device_kind):
    x, w = (RNG.standard_normal(s).astype(np.float32) for s in [(2, 2, 6, 6), (3, 2, 3, 3)])
    y = mv.nn.conv2d(*put(x, w), pad=1)
    assert y.dtype == np.float32
    check(y, ref_conv2d(x, w, None, (1, 1), (1, 1)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stride,pad,geo", [(1, 0, ((1, 1), (0, 0))),
                                            ((2, 1), (1, 0), ((2, 1), (1, 0)))],
                         ids=["int-attrs", "pair-attrs"])
def test_conv2d_backward_ops(device_kind, stride, pad, geo):
    x, w, b = (RNG.standard_normal(s) for s in [(2, 2, 5, 4), (3, 2, 3, 2), (3,)])
    dy = RNG.standard_normal(ref_conv2d(x, w, b, *geo).shape)
    dy_, w_, x_ = put(dy, w, x)
    check(mv.nn.conv2d_backward_data(dy_, w_, x.shape, stride=stride, pad=pad),
          grad_of(lambda v: ref_conv2d(v, w, b, *geo), x, dy))
    check(mv.nn.conv2d_backward_filter(dy_, x_, w.shape, stride=stride, pad=pad),
          grad_of(lambda v: ref_conv2d(x, v, b, *geo), w, dy))
    check(mv.nn.conv2d_backward_bias(dy_), grad_of(lambda v: ref_conv2d(x, w, v, *geo), b, dy))


@pytest.mark.parametrize("stride,pad,n_out", [(1, 1, 3), (2, 1, 3), (2, 0, 6)],
                         ids=["by-conv", "col2im", "long-gemm"])
def test_conv2d_ops_in_batch_blocks(device_kind, monkeypatch, stride, pad, n_out):
    """CPU kernels walk the batch in blocks: blocks of two images (and a remainder of one)
    give the reference results on every kernel path."""
    x, w, b = (RNG.standard_normal(s) for s in [(3, 2, 4, 4), (n_out, 2, 3, 3), (n_out,)])
    geo = ((stride, stride), (pad, pad))
    y = ref_conv2d(x, w, b, *geo)
    monkeypatch.setattr(nn_conv, "BLOCK_BYTES", 2 * 2 * 9 * y.shape[2] * y.shape[3] * 8)
    dy = RNG.standard_normal(y.shape)
    x_, w_, dy_ = put(x, w, dy)
    check(mv.nn.conv2d(x_, w_, mv.array(b), stride=stride, pad=pad), y, atol=1e-10)
    check(mv.nn.conv2d_backward_data(dy_, w_, x.shape, stride=stride, pad=pad),
          grad_of(lambda v: ref_conv2d(v, w, b, *geo), x, dy))
    check(mv.nn.conv2d_backward_filter(dy_, x_, w.shape, stride=stride, pad=pad),
          grad_of(lambda v: ref_conv2d(x, v, b, *geo), w, dy))


# ---------------------------------------------------------------- pooling
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_default_stride(device_kind, kind):
    x = RNG.standard_normal((2, 2, 6, 7)).astype(np.float32)
    y = getattr(mv.nn, f"{kind}_pool2d")(mv.array(x), 3)
    check(y, ref_pool(x, (3, 3), (3, 3), (0, 0), kind), rtol=1e-5, atol=1e-6)


def test_max_pool2d_backward(device_kind):
    x = RNG.permutation(2 * 5 * 6).reshape(1, 2, 5, 6) * 0.01  # distinct: no ties
    attrs = dict(kernel=(3, 2), stride=(2, 1), pad=(1, 0))
    geo = ((3, 2), (2, 1), (1, 0))
    x_ = mv.array(x)
    y_ = mv.nn.max_pool2d(x_, **attrs)
    check(y_, ref_pool(x, *geo, "max"))
    dy = RNG.standard_normal(y_.shape)
    dx = mv.nn.max_pool2d_backward(mv.array(dy), x_, y_, **attrs)
    check(dx, grad_of(lambda v: ref_pool(v, *geo, "max"), x, dy))


def test_avg_pool2d_backward(device_kind):
    x = RNG.standard_normal((1, 2, 5, 6))
    geo = ((2, 3), (1, 2), (1, 1))
    dy = RNG.standard_normal(ref_pool(x, *geo, "avg").shape)
    dx = mv.nn.avg_pool2d_backward(mv.array(dy), x.shape, kernel=(2, 3), stride=(1, 2), pad=1)
    check(dx, grad_of(lambda v: ref_pool(v, *geo, "avg"), x, dy))


# ---------------------------------------------------------------- softmax, cross-entropy
@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_and_log_softmax(device_kind, axis):
    x = RNG.standard_normal((5, 4)) * 10
    check(mv.nn.softmax(mv.array(x), axis=axis), ref_softmax(x, axis), rtol=1e-10)
    check(mv.nn.log_softmax(mv.array(x), axis=axis), ref_softmax(x, axis, log=True),
          rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_and_backward(device_kind, reduction):
    logits = RNG.standard_normal((5, 4)) * 2
    labels = RNG.integers(0, 4, size=5)
    logits_, labels_ = put(logits, labels)
    loss = mv.nn.cross_entropy(logits_, labels_, reduction=reduction)
    assert loss.shape == ((5,) if reduction == "none" else ())
    check(loss, ref_cross_entropy(logits, labels, reduction), rtol=1e-12)
    dy = RNG.standard_normal(loss.shape)
    ref = lambda v: ref_cross_entropy(v, labels, reduction)  # noqa: E731
    check(mv.nn.cross_entropy_backward(logits_, labels_, reduction), grad_of(ref, logits, 1.0))
    check(mv.nn.cross_entropy_backward(logits_, labels_, reduction, dy=mv.array(dy)),
          grad_of(ref, logits, dy))


def test_cross_entropy_bad_label_fails_at_wait(device_kind):
    loss = mv.nn.cross_entropy(*put(np.zeros((2, 3)), np.array([0, 3])))
    with pytest.raises(mv.OpError):
        loss.to_numpy()


# ---------------------------------------------------------------- activations, LRN
def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


@pytest.mark.parametrize("name,forward,host", [
    ("relu", mv.relu, lambda v: np.maximum(v, 0.0)),
    ("sigmoid", mv.sigmoid, _sigmoid),
    ("tanh", mv.tanh, np.tanh),
])
def test_activation_backward(device_kind, name, forward, host):
    x = RNG.standard_normal((3, 4))
    x[np.abs(x) < 1e-3] = 0.5  # keep relu's kink out of the finite-difference step
    dy = RNG.standard_normal(x.shape)
    x_, dy_ = put(x, dy)
    partner = x_ if name == "relu" else forward(x_)  # sigmoid/tanh take the output y
    dx = getattr(mv.nn, f"{name}_backward")(dy_, partner)
    check(dx, grad_of(host, x, dy))


def test_lrn_and_backward(device_kind):
    x = RNG.standard_normal((2, 6, 2, 3)) * 2
    attrs = dict(size=3, alpha=0.5, beta=0.6, k=1.0)
    x_ = mv.array(x)
    y_ = mv.nn.lrn(x_, **attrs)
    check(y_, ref_lrn(x, 3, 0.5, 0.6, 1.0), rtol=1e-12)
    dy = RNG.standard_normal(x.shape)
    dx = mv.nn.lrn_backward(mv.array(dy), x_, y_, **attrs)
    check(dx, grad_of(lambda v: ref_lrn(v, 3, 0.5, 0.6, 1.0), x, dy))


def test_lrn_defaults(device_kind):
    x = RNG.standard_normal((1, 7, 2, 3))
    check(mv.nn.lrn(mv.array(x)), ref_lrn(x, 5, 1e-4, 0.75, 2.0), rtol=1e-12)


# ---------------------------------------------------------------- dropout
def test_dropout_seeding_and_eval_identity(device_kind):
    x = mv.array(np.ones((50, 40), dtype=np.float32))
    assert mv.nn.dropout(x, 0.5, training=False) is x
    assert mv.nn.dropout(x, 0.0) is x
    mv.random.seed(3)
    a = mv.nn.dropout(x, 0.5).to_numpy()
    mv.random.seed(3)
    b = mv.nn.dropout(x, 0.5).to_numpy()
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) <= {0.0, 2.0}


def test_dropout_matches_seeded_mask_and_backward(device_kind):
    x, dy = RNG.standard_normal((2, 30, 7)), RNG.standard_normal((2, 30, 7))
    keep = np.random.default_rng((9, 9)).random(x.shape, dtype=np.float32) >= 0.25
    y = mv.nn.dropout(mv.array(x), 0.25, seed=(9, 9))
    assert y.device == mv.current_device()
    check(y, np.where(keep, x / 0.75, 0.0))
    check(mv.nn.dropout_backward(mv.array(dy), 0.25, seed=(9, 9)), np.where(keep, dy / 0.75, 0))


# ---------------------------------------------------------------- shape errors
def z(*shape, dtype=np.float32):
    """A host array of zeros, for building bad calls."""
    return np.zeros(shape, dtype=dtype)


BAD_CALLS = [
    ("conv2d", lambda a: mv.nn.conv2d(a(z(1, 3, 5, 5)), a(z(2, 4, 3, 3))), "channels"),
    ("conv2d", lambda a: mv.nn.conv2d(a(z(3, 5, 5)), a(z(2, 3, 3, 3))), "rank"),
    ("conv2d", lambda a: mv.nn.conv2d(a(z(1, 3, 4, 4)), a(z(2, 3, 7, 3)), pad=1), "larger"),
    ("conv2d", lambda a: mv.nn.conv2d(a(z(1, 3, 5, 5)), a(z(2, 3, 3, 3)), a(z(3))), "bias"),
    ("conv2d_backward_data",
     lambda a: mv.nn.conv2d_backward_data(a(z(2, 4, 3, 3)), a(z(4, 3, 3, 3)), (2, 3, 6, 5)),
     "dy"),
    ("conv2d_backward_filter",
     lambda a: mv.nn.conv2d_backward_filter(a(z(2, 4, 3, 3)), a(z(2, 3, 5, 5)), (4, 3, 2, 3)),
     "dy"),
    ("conv2d_backward_bias", lambda a: mv.nn.conv2d_backward_bias(a(z(2, 4, 3))), "rank"),
    ("max_pool2d", lambda a: mv.nn.max_pool2d(a(z(1, 3, 5, 5)), 6), "larger"),
    ("max_pool2d_backward",
     lambda a: mv.nn.max_pool2d_backward(a(z(1, 3, 2, 2)), a(z(1, 3, 5, 5)),
                                         a(z(1, 3, 3, 3)), 2), "max_pool2d"),
    ("avg_pool2d", lambda a: mv.nn.avg_pool2d(a(z(1, 3, 5, 5)), 3, pad=2), "half"),
    ("avg_pool2d_backward",
     lambda a: mv.nn.avg_pool2d_backward(a(z(1, 3, 3, 3)), (1, 3, 5, 5), 2), "avg_pool2d"),
    ("softmax", lambda a: mv.nn.softmax(a(z(3, 4)), axis=2), "axis"),
    ("log_softmax", lambda a: mv.nn.log_softmax(a(z(3, 4, dtype=np.int64))), "floating"),
    ("cross_entropy", lambda a: mv.nn.cross_entropy(a(z(3, 4)), a(z(3))), "integer"),
    ("cross_entropy",
     lambda a: mv.nn.cross_entropy(a(z(3, 4)), a(z(3, dtype=np.int64)), "avg"), "reduction"),
    ("cross_entropy_backward",
     lambda a: mv.nn.cross_entropy_backward(a(z(3, 4)), a(z(3, dtype=np.int64)), dy=a(z(3))),
     "dy"),
    ("relu_backward", lambda a: mv.nn.relu_backward(a(z(3, 4)), a(z(4, 3))), "same shape"),
    ("sigmoid_backward", lambda a: mv.nn.sigmoid_backward(a(z(3, 4)), a(z(3))), "same shape"),
    ("tanh_backward", lambda a: mv.nn.tanh_backward(a(z(2)), a(z(3))), "same shape"),
    ("lrn", lambda a: mv.nn.lrn(a(z(3, 4))), "rank"),
    ("lrn_backward",
     lambda a: mv.nn.lrn_backward(a(z(1, 3, 4, 4)), a(z(1, 3, 4, 4)), a(z(1, 2, 4, 4))),
     "same shape"),
    ("dropout", lambda a: mv.nn.dropout(a(z(3, 4)), 1.0), "p must"),
]


@pytest.mark.parametrize("name,call,words", BAD_CALLS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_CALLS)])
def test_shape_error_at_call(device_kind, name, call, words):
    with pytest.raises(mv.ShapeError, match=words) as info:
        call(mv.array)
    assert name in str(info.value)
    assert isinstance(info.value, ValueError)
