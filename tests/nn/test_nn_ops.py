"""Forward NN ops against plain nested-loop NumPy references, and their shape errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

from minerva.common.errors import ShapeError
from tests.support.nn_fixtures import infer, run_op, xp  # noqa: F401  (xp is a fixture)

RNG = np.random.default_rng(1234)

# (kernel, stride, pad): square, non-square, uneven floor, 1x1
CONV_GEOMETRY = [
    ((3, 3), (1, 1), (0, 0)),
    ((3, 2), (2, 1), (1, 0)),
    ((2, 3), (1, 2), (0, 2)),
    ((1, 1), (2, 2), (0, 0)),
    ((4, 4), (3, 3), (1, 1)),
    ((5, 3), (1, 3), (2, 1)),
]


# ---------------------------------------------------------------- references
def ref_pad(x, ph, pw, value=0.0):
    n, c, h, w = x.shape
    out = np.full((n, c, h + 2 * ph, w + 2 * pw), value, dtype=np.float64)
    out[:, :, ph:ph + h, pw:pw + w] = x
    return out


def ref_conv2d(x, w, b, stride, pad):
    (sh, sw), (ph, pw) = stride, pad
    xp_ = ref_pad(x, ph, pw)
    n, o, (kh, kw) = x.shape[0], w.shape[0], w.shape[2:]
    ho = (xp_.shape[2] - kh) // sh + 1
    wo = (xp_.shape[3] - kw) // sw + 1
    out = np.zeros((n, o, ho, wo))
    for i in range(n):
        for f in range(o):
            for r in range(ho):
                for s in range(wo):
                    patch = xp_[i, :, r * sh:r * sh + kh, s * sw:s * sw + kw]
                    out[i, f, r, s] = np.sum(patch * w[f]) + (0.0 if b is None else b[f])
    return out


def ref_pool(x, kernel, stride, pad, kind):
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pad
    xp_ = ref_pad(x, ph, pw, -np.inf if kind == "max" else 0.0)
    ho = (xp_.shape[2] - kh) // sh + 1
    wo = (xp_.shape[3] - kw) // sw + 1
    out = np.zeros(x.shape[:2] + (ho, wo))
    for i in range(x.shape[0]):
        for c in range(x.shape[1]):
            for r in range(ho):
                for s in range(wo):
                    win = xp_[i, c, r * sh:r * sh + kh, s * sw:s * sw + kw]
                    out[i, c, r, s] = win.max() if kind == "max" else win.sum() / (kh * kw)
    return out


def ref_softmax_rows(rows, log=False):
    out = np.zeros_like(rows, dtype=np.float64)
    for i, row in enumerate(rows):
        m = max(row)
        total = sum(math.exp(v - m) for v in row)
        for j, v in enumerate(row):
            out[i, j] = (v - m - math.log(total)) if log else math.exp(v - m) / total
    return out


def ref_softmax(x, axis, log=False):
    moved = np.moveaxis(np.asarray(x, np.float64), axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    return np.moveaxis(ref_softmax_rows(rows, log).reshape(moved.shape), -1, axis)


def ref_lrn(x, size, alpha, beta, k):
    n, c = x.shape[:2]
    out = np.zeros(x.shape)
    lo = (size - 1) // 2
    for i in range(n):
        for ch in range(c):
            acc = np.zeros(x.shape[2:])
            for other in range(ch - lo, ch - lo + size):
                if 0 <= other < c:
                    acc += x[i, other].astype(np.float64) ** 2
            out[i, ch] = x[i, ch] * (k + alpha / size * acc) ** -beta
    return out


# ---------------------------------------------------------------- conv2d
@pytest.mark.parametrize("kernel,stride,pad", CONV_GEOMETRY)
@pytest.mark.parametrize("with_bias", [False, True])
def test_conv2d_matches_reference(xp, kernel, stride, pad, with_bias):
    x = RNG.standard_normal((2, 3, 7, 8))
    w = RNG.standard_normal((4, 3) + kernel)
    b = RNG.standard_normal(4) if with_bias else None
    inputs = (x, w) + ((b,) if with_bias else ())
    got = run_op(xp, "conv2d", *inputs, stride=stride, pad=pad)
    np.testing.assert_allclose(got, ref_conv2d(x, w, b, stride, pad), rtol=1e-10, atol=1e-10)


def test_conv2d_float32_stays_float32(xp):
    x = RNG.standard_normal((3, 2, 9, 9)).astype(np.float32)
    w = RNG.standard_normal((5, 2, 3, 3)).astype(np.float32)
    got = run_op(xp, "conv2d", x, w, stride=2, pad=1)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref_conv2d(x, w, None, (2, 2), (1, 1)), rtol=1e-4,
                               atol=1e-4)


def test_conv2d_int_attrs_and_noncontiguous_input(xp):
    base = RNG.standard_normal((6, 7, 3, 2))
    x = base.transpose(3, 2, 0, 1)  # (2, 3, 6, 7), not C-contiguous
    w = RNG.standard_normal((2, 3, 3, 2))
    got = run_op(xp, "conv2d", x, w, stride=2, pad=1)
    np.testing.assert_allclose(got, ref_conv2d(x, w, None, (2, 2), (1, 1)), atol=1e-10)


def test_conv2d_output_size_rule():
    x, w = np.zeros((1, 1, 10, 7)), np.zeros((1, 1, 3, 2))
    (out,) = infer("conv2d", x, w, stride=(3, 2), pad=(1, 0))
    assert out.shape == (1, 1, (10 + 2 - 3) // 3 + 1, (7 - 2) // 2 + 1)


# ---------------------------------------------------------------- pooling
POOL_GEOMETRY = [
    ((2, 2), None, (0, 0)),
    ((3, 2), (2, 1), (1, 0)),
    ((3, 3), (1, 1), (1, 1)),
    ((2, 3), (1, 2), (1, 1)),
    ((3, 3), (2, 2), (0, 0)),
]


@pytest.mark.parametrize("kernel,stride,pad", POOL_GEOMETRY)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_matches_reference(xp, kernel, stride, pad, kind):
    x = RNG.standard_normal((2, 3, 7, 8))
    got = run_op(xp, f"{kind}_pool2d", x, kernel=kernel, stride=stride, pad=pad)
    want = ref_pool(x, kernel, stride or kernel, pad, kind)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_pool_stride_defaults_to_kernel():
    x = np.zeros((1, 1, 9, 8))
    (out,) = infer("max_pool2d", x, kernel=(3, 2))
    assert out.shape == (1, 1, 3, 4)


def test_max_pool_float32_negative_values(xp):
    x = -np.abs(RNG.standard_normal((2, 2, 5, 5))).astype(np.float32) - 1
    got = run_op(xp, "max_pool2d", x, kernel=3, stride=2, pad=1)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, ref_pool(x, (3, 3), (2, 2), (1, 1), "max"))


# ---------------------------------------------------------------- softmax, cross-entropy
@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_matches_reference(xp, axis, log):
    x = RNG.standard_normal((4, 5, 3)) * 10
    got = run_op(xp, "log_softmax" if log else "softmax", x, axis=axis)
    np.testing.assert_allclose(got, ref_softmax(x, axis, log), rtol=1e-10, atol=1e-12)


def test_softmax_is_stable_for_huge_logits(xp):
    x = np.array([[1000.0, 1001.0, 999.0], [-1e4, 0.0, 1e4]], dtype=np.float32)
    got = run_op(xp, "softmax", x, axis=-1)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, ref_softmax(x, -1), rtol=1e-5, atol=1e-7)
    lsm = run_op(xp, "log_softmax", x, axis=-1)
    np.testing.assert_allclose(lsm, ref_softmax(x, -1, log=True), rtol=1e-5, atol=1e-4)


def ref_cross_entropy(logits, labels, reduction):
    losses = []
    for row, label in zip(logits, labels):
        m = max(row)
        losses.append(m + math.log(sum(math.exp(v - m) for v in row)) - row[label])
    losses = np.array(losses)
    return {"none": losses, "sum": losses.sum(), "mean": losses.mean()}[reduction]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_dtype", [np.int64, np.int32])
def test_cross_entropy_matches_reference(xp, reduction, label_dtype):
    logits = RNG.standard_normal((6, 4)) * 3
    labels = RNG.integers(0, 4, size=6).astype(label_dtype)
    got = run_op(xp, "cross_entropy", logits, labels, reduction=reduction)
    np.testing.assert_allclose(got, ref_cross_entropy(logits, labels, reduction), rtol=1e-12)


@pytest.mark.parametrize("bad", [-1, 4])
def test_cross_entropy_label_out_of_range_fails_at_run(xp, bad):
    with pytest.raises(IndexError):
        run_op(xp, "cross_entropy", np.zeros((2, 4)), np.array([0, bad]))


# ---------------------------------------------------------------- LRN, dropout
@pytest.mark.parametrize("size,alpha,beta,k", [(5, 1e-4, 0.75, 2.0), (3, 0.5, 0.6, 1.0),
                                               (4, 0.3, 0.9, 1.5), (1, 1.0, 1.0, 1.0),
                                               (9, 0.2, 0.75, 1.0)])  # window > channels
def test_lrn_matches_reference(xp, size, alpha, beta, k):
    x = RNG.standard_normal((2, 6, 3, 4)) * 2
    got = run_op(xp, "lrn", x, size=size, alpha=alpha, beta=beta, k=k)
    np.testing.assert_allclose(got, ref_lrn(x, size, alpha, beta, k), rtol=1e-12)


@pytest.mark.parametrize("p", [0.0, 0.25, 0.6])
def test_dropout_matches_seeded_reference(xp, p):
    x = RNG.standard_normal((3, 50, 7)).astype(np.float32)
    got = run_op(xp, "dropout", x, p=p, seed=(7, 3))
    keep = np.random.default_rng((7, 3)).random(x.shape, dtype=np.float32) >= p
    np.testing.assert_allclose(got, np.where(keep, x / (1 - p), 0), rtol=1e-6)
    assert got.dtype == np.float32


def test_dropout_seed_reproducible_and_distinct(xp):
    x = np.ones((100, 100))
    a = run_op(xp, "dropout", x, p=0.5, seed=(1,))
    b = run_op(xp, "dropout", x, p=0.5, seed=(1,))
    c = run_op(xp, "dropout", x, p=0.5, seed=(2,))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert set(np.unique(a)) <= {0.0, 2.0}
    assert abs((a == 0).mean() - 0.5) < 0.03


# ---------------------------------------------------------------- shape errors
def z(*shape, dtype=np.float32):
    return np.zeros(shape, dtype=dtype)


BAD_CALLS = [
    ("conv2d", (z(2, 3, 5), z(4, 3, 3, 3)), {}, "rank"),
    ("conv2d", (z(2, 3, 5, 5), z(4, 3, 3)), {}, "rank"),
    ("conv2d", (z(2, 3, 5, 5), z(4, 2, 3, 3)), {}, "channels"),
    ("conv2d", (z(2, 3, 5, 5), z(4, 3, 6, 3)), {}, "larger"),
    ("conv2d", (z(2, 3, 5, 5), z(4, 3, 3, 8)), {"pad": (0, 1)}, "larger"),
    ("conv2d", (z(2, 3, 5, 5), z(4, 3, 3, 3), z(3)), {}, "bias"),
    ("conv2d", (z(2, 3, 5, 5), z(4, 3, 3, 3)), {"stride": 0}, "stride"),
    ("conv2d", (z(2, 3, 5, 5), z(4, 3, 3, 3)), {"pad": -1}, "pad"),
    ("conv2d", (z(2, 3, 5, 5), z(4, 3, 3, 3)), {"stride": (1, 2, 3)}, "stride"),
    ("conv2d", (z(2, 3, 5, 5, dtype=np.int32), z(4, 3, 3, 3)), {}, "floating"),
    ("conv2d_backward_data", (z(2, 4, 3, 3), z(4, 3, 3, 3)), {"x_shape": (2, 3, 6, 5)}, "dy"),
    ("conv2d_backward_data", (z(2, 4, 3, 3), z(4, 3, 3, 3)), {"x_shape": (2, 2, 5, 5)},
     "channels"),
    ("conv2d_backward_data", (z(2, 4, 3, 3), z(4, 3, 3, 3)), {"x_shape": (2, 3, 5)}, "x_shape"),
    ("conv2d_backward_filter", (z(2, 4, 3, 3), z(2, 3, 5, 5)), {"w_shape": (4, 3, 2, 3)}, "dy"),
    ("conv2d_backward_filter", (z(2, 4, 3), z(2, 3, 5, 5)), {"w_shape": (4, 3, 3, 3)}, "rank"),
    ("conv2d_backward_bias", (z(2, 4, 3),), {}, "rank"),
    ("max_pool2d", (z(3, 5, 5),), {"kernel": 2}, "rank"),
    ("max_pool2d", (z(1, 3, 5, 5),), {"kernel": 6}, "larger"),
    ("max_pool2d", (z(1, 3, 5, 5),), {"kernel": 3, "pad": 2}, "half"),
    ("avg_pool2d", (z(1, 3, 5, 5),), {"kernel": (2, 0)}, "kernel"),
    ("max_pool2d_backward", (z(1, 3, 2, 2), z(1, 3, 5, 5), z(1, 3, 3, 3)), {"kernel": 2},
     "max_pool2d"),
    ("avg_pool2d_backward", (z(1, 3, 3, 3),), {"x_shape": (1, 3, 5, 5), "kernel": 2},
     "avg_pool2d"),
    ("softmax", (z(3, 4),), {"axis": 2}, "axis"),
    ("softmax", (z(3, 4, dtype=np.int64),), {"axis": 1}, "floating"),
    ("cross_entropy", (z(3, 4), z(3)), {}, "integer"),
    ("cross_entropy", (z(3, 4), z(4, dtype=np.int64)), {}, "labels"),
    ("cross_entropy", (z(3, 4, 2), z(3, dtype=np.int64)), {}, "rank"),
    ("cross_entropy", (z(3, 4), z(3, dtype=np.int64)), {"reduction": "avg"}, "reduction"),
    ("cross_entropy_backward", (z(3, 4), z(3, dtype=np.int64), z(3)), {}, "dy"),
    ("relu_backward", (z(3, 4), z(4, 3)), {}, "same shape"),
    ("lrn", (z(3, 4),), {}, "rank"),
    ("lrn", (z(1, 3, 4, 4),), {"size": 0}, "size"),
    ("lrn_backward", (z(1, 3, 4, 4), z(1, 3, 4, 4), z(1, 2, 4, 4)), {}, "same shape"),
    ("dropout", (z(3, 4),), {"p": 1.0, "seed": (1,)}, "p must"),
    ("dropout", (z(3, 4),), {"p": 0.5, "seed": 3}, "seed"),
]


@pytest.mark.parametrize("name,arrays,attrs,words", BAD_CALLS,
                         ids=[f"{c[0]}-{c[3]}-{i}" for i, c in enumerate(BAD_CALLS)])
def test_shape_errors(name, arrays, attrs, words):
    with pytest.raises(ShapeError, match=words) as info:
        infer(name, *arrays, **attrs)
    assert name in str(info.value)
