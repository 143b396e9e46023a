"""Gradients of the ``mv.nn`` ops: against central finite differences in float64, and
exactly equal to the hand-written backward ops (``conv2d_backward_data`` ...) given the
same upstream gradient."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from tests.support.autograd_fixtures import check_grad, check_second, distinct, uniform


@pytest.fixture(autouse=True)
def runtime_started():
    """A dag runtime for every test here."""
    mv.init()


def _grads(f, arrays, head):
    """``backward`` of ``f(*arrays)`` with head gradient ``head``: each float input's
    gradient (NumPy)."""
    args = [mv.array(a) for a in arrays]
    floats = [x for x in args if x.dtype.kind == "f"]
    for x in floats:
        x.attach_grad()
    with mv.autograd.record():
        y = f(*args)
    y.backward(mv.array(head))
    return [x.grad.to_numpy() for x in floats]


CONV = [(1, 0, True), (2, 1, False), ((1, 2), (0, 1), True), (1, 2, False)]


@pytest.mark.parametrize("stride,pad,bias", CONV, ids=str)
def test_conv2d(stride, pad, bias):
    rng = np.random.default_rng(43)
    x, w, b = uniform(rng, (2, 2, 5, 4)), uniform(rng, (3, 2, 3, 2)), uniform(rng, (3,))
    arrays = (x, w, b) if bias else (x, w)
    check_grad(lambda *a: mv.nn.conv2d(*a, stride=stride, pad=pad), *arrays)
    y = mv.nn.conv2d(*[mv.array(a) for a in arrays], stride=stride, pad=pad)
    dy = uniform(rng, y.shape)
    got = _grads(lambda *a: mv.nn.conv2d(*a, stride=stride, pad=pad), arrays, dy)
    d = mv.array(dy)
    want = [mv.nn.conv2d_backward_data(d, mv.array(w), x.shape, stride, pad),
            mv.nn.conv2d_backward_filter(d, mv.array(x), w.shape, stride, pad)]
    if bias:
        want.append(mv.nn.conv2d_backward_bias(d))
    for g, v in zip(got, want):
        np.testing.assert_array_equal(g, v.to_numpy())


@pytest.mark.parametrize("kernel,stride,pad",
                         [(2, None, 0), (3, 1, 1), ((2, 3), (1, 2), 0)], ids=str)
def test_pools(kernel, stride, pad):
    rng = np.random.default_rng(47)
    x = distinct(rng, (2, 2, 5, 6), 8.0)
    check_grad(lambda a: mv.nn.max_pool2d(a, kernel, stride, pad), x)
    check_grad(lambda a: mv.nn.avg_pool2d(a, kernel, stride, pad), x)
    xs = mv.array(x)
    y = mv.nn.max_pool2d(xs, kernel, stride, pad)
    dy = uniform(rng, y.shape)
    (got,) = _grads(lambda a: mv.nn.max_pool2d(a, kernel, stride, pad), [x], dy)
    want = mv.nn.max_pool2d_backward(mv.array(dy), xs, y, kernel, stride, pad)
    np.testing.assert_array_equal(got, want.to_numpy())
    (got,) = _grads(lambda a: mv.nn.avg_pool2d(a, kernel, stride, pad), [x], dy)
    want = mv.nn.avg_pool2d_backward(mv.array(dy), x.shape, kernel, stride, pad)
    np.testing.assert_array_equal(got, want.to_numpy())


def test_max_pool_ties_follow_the_backward_op():
    x = np.ones((1, 1, 4, 4))
    dy = np.arange(4.0).reshape(1, 1, 2, 2) + 1
    (got,) = _grads(lambda a: mv.nn.max_pool2d(a, 2), [x], dy)
    want = mv.nn.max_pool2d_backward(mv.array(dy), mv.array(x), mv.array(np.ones(dy.shape)),
                                     2)
    np.testing.assert_array_equal(got, want.to_numpy())
    assert got.sum() == dy.sum()


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax(axis):
    x = uniform(np.random.default_rng(53), (3, 4, 2), -2.0, 2.0)
    check_grad(lambda a: mv.nn.softmax(a, axis), x)
    check_grad(lambda a: mv.nn.log_softmax(a, axis), x)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy(reduction):
    rng = np.random.default_rng(59)
    logits, labels = uniform(rng, (4, 3), -2.0, 2.0), np.array([0, 2, 1, 2])
    check_grad(lambda a, y: mv.nn.cross_entropy(a, y, reduction), logits, labels)
    head = uniform(rng, (4,) if reduction == "none" else ())
    (got,) = _grads(lambda a, y: mv.nn.cross_entropy(a, y, reduction), [logits, labels],
                    head)
    want = mv.nn.cross_entropy_backward(mv.array(logits), mv.array(labels), reduction,
                                        mv.array(head))
    np.testing.assert_array_equal(got, want.to_numpy())


@pytest.mark.parametrize("size,alpha,beta,k", [(3, 0.3, 0.75, 2.0), (2, 1.0, 0.5, 1.0)])
def test_lrn(size, alpha, beta, k):
    rng = np.random.default_rng(61)
    x = uniform(rng, (2, 4, 2, 3))
    check_grad(lambda a: mv.nn.lrn(a, size, alpha, beta, k), x)
    xs = mv.array(x)
    y = mv.nn.lrn(xs, size, alpha, beta, k)
    dy = uniform(rng, x.shape)
    (got,) = _grads(lambda a: mv.nn.lrn(a, size, alpha, beta, k), [x], dy)
    want = mv.nn.lrn_backward(mv.array(dy), xs, y, size, alpha, beta, k)
    np.testing.assert_array_equal(got, want.to_numpy())


def test_dropout_gradient_reuses_the_forward_mask():
    rng = np.random.default_rng(67)
    x, dy = uniform(rng, (4, 50), 0.5, 1.0), uniform(rng, (4, 50))
    mv.random.seed(5)
    xs = mv.array(x)
    xs.attach_grad()
    with mv.autograd.record():
        y = mv.nn.dropout(xs, 0.4)
    y.backward(mv.array(dy))
    kept = y.to_numpy() != 0
    assert 0 < kept.sum() < kept.size
    scale = 1.0 / 0.6
    np.testing.assert_array_equal(xs.grad.to_numpy(), np.where(kept, dy * scale, 0.0))
    mv.random.seed(5)
    want = mv.nn.dropout_backward(mv.array(dy), 0.4, y_seed(y))
    np.testing.assert_array_equal(xs.grad.to_numpy(), want.to_numpy())


def y_seed(y):
    """The seed the dropout that made ``y`` drew its mask from (from its recording)."""
    return y._grad_info.node.attrs["seed"]


def test_dropout_off_passes_the_gradient():
    x = mv.array(np.ones((2, 3)))
    x.attach_grad()
    with mv.autograd.record():
        y = mv.nn.dropout(x, 0.5, training=False) * 3
    y.backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), np.full((2, 3), 3.0))


@pytest.mark.parametrize("name", ["relu", "sigmoid", "tanh"])
def test_activations_match_their_backward_ops(name):
    rng = np.random.default_rng(71)
    x, dy = uniform(rng, (3, 4), -2.0, 2.0), uniform(rng, (3, 4))
    (got,) = _grads(getattr(mv, name), [x], dy)
    xs = mv.array(x)
    other = xs if name == "relu" else getattr(mv, name)(xs)
    want = getattr(mv.nn, name + "_backward")(mv.array(dy), other)
    np.testing.assert_allclose(got, want.to_numpy(), rtol=1e-15, atol=0)


def test_a_small_cnn():
    rng = np.random.default_rng(73)
    x, w, b = uniform(rng, (2, 1, 6, 6)), uniform(rng, (2, 1, 3, 3)), uniform(rng, (2,))
    fc, labels = uniform(rng, (8, 3)), np.array([2, 0])

    def net(x, w, b, fc, labels):
        h = mv.relu(mv.nn.conv2d(x, w, b, pad=1))
        h = mv.nn.avg_pool2d(mv.nn.lrn(h, 2, 0.5, 0.75, 1.0), 3)
        return mv.nn.cross_entropy(h.reshape(2, -1) @ fc, labels)

    check_grad(net, x, w, b, fc, labels)


# ---- the backward ops' own gradients (second derivatives through nn ops) -----------------

@pytest.mark.parametrize("stride,pad", [(1, 0), (2, 1)], ids=str)
def test_conv_backward_ops_have_gradients(stride, pad):
    rng = np.random.default_rng(113)
    x, w = uniform(rng, (2, 2, 5, 4)), uniform(rng, (3, 2, 3, 2))
    dy = uniform(rng, mv.nn.conv2d(mv.array(x), mv.array(w), stride=stride, pad=pad).shape)
    check_grad(lambda d, f: mv.nn.conv2d_backward_data(d, f, x.shape, stride, pad), dy, w)
    check_grad(lambda d, a: mv.nn.conv2d_backward_filter(d, a, w.shape, stride, pad), dy, x)
    check_grad(mv.nn.conv2d_backward_bias, dy)


def test_other_backward_ops_have_gradients():
    rng = np.random.default_rng(127)
    x, dy = uniform(rng, (2, 2, 4, 6)), uniform(rng, (2, 2, 2, 3))
    check_grad(lambda d: mv.nn.avg_pool2d_backward(d, x.shape, 2), dy)
    check_grad(lambda d: mv.nn.relu_backward(d, mv.array(x)), x)
    check_grad(lambda d: mv.nn.dropout_backward(d, 0.3, seed=5), x)


def test_second_derivatives_through_conv_and_pooling():
    rng = np.random.default_rng(131)
    w = mv.array(uniform(rng, (2, 1, 2, 2)))
    check_second(lambda a: mv.nn.avg_pool2d(mv.relu(mv.nn.conv2d(
        a.reshape(1, 1, 3, 4), w * a[0, 0], pad=1)) ** 2, 2), uniform(rng, (3, 4)))


def test_second_derivatives_through_max_pooling_raise():
    x = mv.array(distinct(np.random.default_rng(137), (1, 1, 4, 4)))
    x.attach_grad()
    with mv.autograd.record():
        y = mv.nn.max_pool2d(x * x, 2).sum()
        (g,) = mv.autograd.grad(y, [x], create_graph=True)
        total = g.sum()
    with pytest.raises(mv.autograd.AutogradError, match="max_pool2d_backward"):
        total.backward()


def test_relu_gradient_is_zero_where_the_input_is_not_positive_even_for_nan():
    x = mv.array(np.array([-1.0, 0.0, 2.0, -3.0]))
    head = np.array([np.nan, np.inf, 5.0, -np.inf])
    x.attach_grad()
    with mv.autograd.record():
        y = mv.relu(x)
    y.backward(mv.array(head))
    want = np.where(x.to_numpy() > 0, head, 0.0)
    np.testing.assert_array_equal(x.grad.to_numpy(), want)
    direct = mv.nn.relu_backward(mv.array(head), x).to_numpy()
    np.testing.assert_array_equal(direct, want)


def _refuse(name):
    def refused(*args, **kwargs):
        raise AssertionError(f"{name} was built for an input that needs no gradient")
    return refused


def test_inputs_without_gradients_get_no_backward_ops(monkeypatch):
    rng = np.random.default_rng(149)
    x, w = mv.array(uniform(rng, (2, 2, 5, 4))), mv.array(uniform(rng, (3, 2, 3, 2)))
    w.attach_grad()
    monkeypatch.setattr(mv.nn, "conv2d_backward_data", _refuse("conv2d_backward_data"))
    with mv.autograd.record():
        y = mv.nn.conv2d(x, w, pad=1).sum()
    y.backward()
    want = mv.nn.conv2d_backward_filter(mv.ones(mv.nn.conv2d(x, w, pad=1).shape), x,
                                        w.shape, 1, 1)
    np.testing.assert_allclose(w.grad.to_numpy(), want.to_numpy(), rtol=1e-13)


def test_matmul_builds_only_the_gradients_wanted(monkeypatch):
    rng = np.random.default_rng(151)
    x, w = uniform(rng, (4, 3)), uniform(rng, (3, 2))
    xs, ws = mv.array(x), mv.array(w)
    ws.attach_grad()
    calls = []
    real = mv.matmul
    monkeypatch.setattr(mv, "matmul", lambda *a, **k: calls.append(1) or real(*a, **k))
    with mv.autograd.record():
        y = (xs @ ws).sum()
    y.backward()
    assert len(calls) == 1
    np.testing.assert_allclose(ws.grad.to_numpy(), x.T @ np.ones((4, 2)), rtol=1e-14)
