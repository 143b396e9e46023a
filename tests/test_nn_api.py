"""A few ``mv.nn`` ops through the public API, against the references of test_nn_ops.py."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from minerva.common.errors import ShapeError
from test_nn_ops import (ref_conv2d, ref_cross_entropy, ref_lrn, ref_pool,
                         ref_softmax)

RNG = np.random.default_rng(7)


def test_conv2d_with_bias_int_stride_and_pair_pad():
    x, w, b = (RNG.standard_normal(s) for s in [(2, 3, 7, 6), (4, 3, 3, 2), (4,)])
    y = mv.nn.conv2d(mv.array(x), mv.array(w), mv.array(b), stride=2, pad=(1, 0))
    np.testing.assert_allclose(y.to_numpy(), ref_conv2d(x, w, b, (2, 2), (1, 0)), atol=1e-10)


def test_conv2d_backward_chain_shapes():
    x, w = mv.array(RNG.standard_normal((2, 3, 8, 8))), mv.array(RNG.standard_normal((5, 3, 3, 3)))
    y = mv.nn.conv2d(x, w, pad=1)
    dx = mv.nn.conv2d_backward_data(y, w, x.shape, pad=1)
    dw = mv.nn.conv2d_backward_filter(y, x, w.shape, pad=1)
    db = mv.nn.conv2d_backward_bias(y)
    assert (dx.shape, dw.shape, db.shape) == (x.shape, w.shape, (5,))
    np.testing.assert_allclose(db.to_numpy(), y.to_numpy().sum(axis=(0, 2, 3)), rtol=1e-10)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_default_stride(kind):
    x = RNG.standard_normal((2, 2, 6, 7)).astype(np.float32)
    y = getattr(mv.nn, f"{kind}_pool2d")(mv.array(x), 3)
    np.testing.assert_allclose(y.to_numpy(), ref_pool(x, (3, 3), (3, 3), (0, 0), kind),
                               rtol=1e-5)


def test_softmax_and_cross_entropy():
    logits = RNG.standard_normal((5, 4))
    labels = RNG.integers(0, 4, size=5)
    p = mv.nn.softmax(mv.array(logits))
    np.testing.assert_allclose(p.to_numpy(), ref_softmax(logits, -1), rtol=1e-10)
    loss = mv.nn.cross_entropy(mv.array(logits), mv.array(labels), reduction="sum")
    np.testing.assert_allclose(float(loss), ref_cross_entropy(logits, labels, "sum"))


def test_lrn_defaults():
    x = RNG.standard_normal((1, 7, 2, 3))
    y = mv.nn.lrn(mv.array(x))
    np.testing.assert_allclose(y.to_numpy(), ref_lrn(x, 5, 1e-4, 0.75, 2.0), rtol=1e-12)


def test_dropout_seeding_and_eval_identity():
    x = mv.array(np.ones((50, 40), dtype=np.float32))
    assert mv.nn.dropout(x, 0.5, training=False) is x
    mv.random.seed(3)
    a = mv.nn.dropout(x, 0.5).to_numpy()
    mv.random.seed(3)
    b = mv.nn.dropout(x, 0.5).to_numpy()
    np.testing.assert_array_equal(a, b)
    y = mv.nn.dropout(x, 0.25, seed=(9, 9)).to_numpy()
    dx = mv.nn.dropout_backward(x, 0.25, seed=(9, 9)).to_numpy()
    np.testing.assert_array_equal(y, dx)


def test_shape_error_at_call():
    with pytest.raises(ShapeError, match="channels"):
        mv.nn.conv2d(mv.zeros((1, 3, 5, 5)), mv.zeros((2, 4, 3, 3)))
