"""Every element-wise, reduction and product gradient rule against central finite
differences in float64 (``autograd_fixtures.check_grad``), on random shapes."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minerva as mv
from tests.support.autograd_fixtures import away_from_zero, check_grad, distinct, uniform

FAST = settings(max_examples=6, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)


@pytest.fixture(autouse=True)
def runtime_started():
    """A dag runtime for every test here."""
    mv.init()


def _range(low, high):
    return lambda rng, shape: uniform(rng, shape, low, high)


ANY = _range(-1.5, 1.5)
POSITIVE = _range(0.3, 2.0)
UNIT = _range(-0.9, 0.9)
NONZERO = away_from_zero

UNARY = {
    "negative": ANY, "positive": ANY, "absolute": NONZERO, "fabs": NONZERO, "exp": ANY,
    "exp2": ANY, "expm1": ANY, "log": POSITIVE, "log2": POSITIVE, "log10": POSITIVE,
    "log1p": _range(-0.5, 2.0), "sqrt": POSITIVE, "cbrt": NONZERO, "square": ANY,
    "reciprocal": NONZERO, "sin": ANY, "cos": ANY, "tan": _range(-1.2, 1.2),
    "arcsin": UNIT, "arccos": UNIT, "arctan": ANY, "sinh": ANY, "cosh": ANY, "tanh": ANY,
    "arcsinh": ANY, "arccosh": _range(1.1, 3.0), "arctanh": UNIT, "deg2rad": ANY,
    "rad2deg": ANY, "sigmoid": ANY, "relu": NONZERO, "conjugate": ANY,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    rng = np.random.default_rng(len(name))
    x = UNARY[name](rng, (2, 3))
    check_grad(getattr(mv, name), x)


def test_unary_operators():
    x = away_from_zero(np.random.default_rng(0), (3, 2))
    check_grad(lambda a: -abs(a) + (+a), x)


# ---- binary ops: broadcasting, and scalars on both sides ---------------------------------

BINARY = {  # name: (domain of a, domain of b, a scalar in b's domain, one in a's)
    "add": (ANY, ANY, 0.7, -1.3), "subtract": (ANY, ANY, 0.7, -1.3),
    "multiply": (ANY, ANY, 0.7, -1.3), "divide": (ANY, NONZERO, -0.7, 1.3),
    "power": (POSITIVE, ANY, 1.7, 1.4), "float_power": (POSITIVE, ANY, -0.6, 0.8),
    "maximum": (ANY, ANY, 0.1, -0.2), "minimum": (ANY, ANY, 0.1, -0.2),
    "fmax": (ANY, ANY, 0.1, -0.2), "fmin": (ANY, ANY, 0.1, -0.2),
    "remainder": (_range(2.0, 5.0), _range(0.6, 1.4), 0.8, 3.3),
    "fmod": (_range(2.0, 5.0), _range(0.6, 1.4), 0.8, 3.3),
    "arctan2": (NONZERO, NONZERO, -0.6, 0.9), "hypot": (NONZERO, NONZERO, -0.6, 0.9),
    "logaddexp": (ANY, ANY, 0.3, -0.4), "logaddexp2": (ANY, ANY, 0.3, -0.4),
    "copysign": (NONZERO, NONZERO, -0.5, 0.6),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@FAST
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3))
def test_binary_broadcasting(name, shapes):
    da, db, _, _ = BINARY[name]
    rng = np.random.default_rng(7)
    a, b = da(rng, shapes.input_shapes[0]), db(rng, shapes.input_shapes[1])
    check_grad(getattr(mv, name), a, b)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_with_a_scalar(name):
    da, db, scalar_b, scalar_a = BINARY[name]
    rng = np.random.default_rng(3)
    op = getattr(mv, name)
    check_grad(lambda x: op(x, scalar_b), da(rng, (2, 3)))
    if name == "power":  # a negative base: s ** x needs s > 0
        scalar_a = 1.4
    check_grad(lambda x: op(scalar_a, x), db(rng, (3,)))


def test_operators_with_scalars_on_both_sides():
    x = uniform(np.random.default_rng(1), (2, 3), 0.5, 1.5)
    check_grad(lambda a: (2.0 + a) * (1.5 - a) / (a - 3.0) + 2.0 / a - a / 4.0, x)
    check_grad(lambda a: a ** 2.5 + 1.7 ** a - 3.0 * a * 0.5, x)
    check_grad(lambda a: a ** 2 + a ** -1, x)


def test_maximum_tie_goes_to_the_first_argument():
    a = mv.array([1.0, 2.0, 3.0])
    b = mv.array([1.0, 1.0, 3.0])
    a.attach_grad()
    b.attach_grad()
    with mv.autograd.record():
        lo, hi = mv.minimum(a, b), mv.maximum(a, b)
        loss = (lo + 10 * hi).sum()
    loss.backward()
    np.testing.assert_array_equal(a.grad.to_numpy(), [11.0, 10.0, 11.0])
    np.testing.assert_array_equal(b.grad.to_numpy(), [0.0, 1.0, 0.0])


def test_where_clip_maximum_minimum():
    rng = np.random.default_rng(5)
    a, b = uniform(rng, (3, 4)), uniform(rng, (4,))
    check_grad(lambda x, y: mv.where(x > y, x * y, y - x), a, b)
    check_grad(lambda x, y: mv.where(x > 0, x, 0.5) + mv.where(x > 0, 2.0, y), a, b)
    check_grad(lambda x: mv.clip(x, -0.5, 0.4), a)
    check_grad(lambda x: mv.clip(x, None, 0.2) + mv.clip(x, -0.1, None), a)
    low, high = uniform(rng, (3, 1), -0.6, -0.2), uniform(rng, (4,), 0.1, 0.5)
    check_grad(lambda x, lo, hi: mv.clip(x, lo, hi), a, low, high)
    check_grad(lambda x, y: mv.maximum(x, y) * mv.minimum(y, x), a, b)


def test_casts_and_copies():
    x = uniform(np.random.default_rng(2), (2, 3))
    check_grad(lambda a: mv.copy(a) * a.copy() + a.astype(np.float64), x)
    v = mv.array(x)
    v.attach_grad()
    with mv.autograd.record():
        y = v.astype(np.float32)
        loss = (y * mv.array(x, dtype=np.float32)).sum()
    loss.backward()
    assert v.grad.dtype == np.float64
    np.testing.assert_array_equal(v.grad.to_numpy(), x.astype(np.float32))


# ---- reductions --------------------------------------------------------------------------

AXES = [None, 0, -1, (0, 2), (1,), (0, 1, 2)]


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min"])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(name, axis, keepdims):
    rng = np.random.default_rng(11)
    x = distinct(rng, (2, 3, 2), 4.0) if name in ("max", "min") else \
        away_from_zero(rng, (2, 3, 2), 0.5, 1.5)
    check_grad(lambda a: getattr(mv, name)(a, axis=axis, keepdims=keepdims), x)


@FAST
@given(shape=SHAPES, data=st.data())
def test_reductions_on_random_shapes(shape, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1))
                     if shape else st.none())
    x = distinct(np.random.default_rng(0), shape, 3.0) + 2.0
    for name in ("sum", "mean", "prod", "max", "min"):
        check_grad(lambda a: getattr(mv, name)(a, axis=axis), x)


def test_methods_reduce_too():
    x = away_from_zero(np.random.default_rng(4), (3, 4))
    check_grad(lambda a: a.sum(axis=1) * a.mean(0)[:3] + a.prod() - a.max(1) * a.min(), x)


@pytest.mark.parametrize("name", ["max", "min"])
def test_extremum_ties_split_evenly(name):
    values = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, -1.0]])
    if name == "min":
        values = -values
    x = mv.array(values)
    x.attach_grad()
    with mv.autograd.record():
        y = getattr(mv, name)(x, axis=1)
        loss = (y * mv.array([6.0, 3.0])).sum()
    loss.backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), [[0, 3, 3, 0], [1, 1, 1, 0]])
    x.attach_grad()
    with mv.autograd.record():
        loss = getattr(mv, name)(x) * 4.0
    loss.backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), [[0, 2, 2, 0], [0, 0, 0, 0]])


# ---- products ----------------------------------------------------------------------------

MATMUL_SHAPES = [((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4)),
                 ((2, 2, 3), (2, 3, 2)), ((1, 2, 3), (2, 3, 2)), ((2, 3), (2, 3, 2)),
                 ((2, 1, 2, 3), (3, 3, 1)), ((3,), (2, 3, 2)), ((2, 2, 3), (3,))]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(shapes):
    rng = np.random.default_rng(13)
    a, b = uniform(rng, shapes[0]), uniform(rng, shapes[1])
    check_grad(mv.matmul, a, b)
    check_grad(lambda x, y: x @ y, a, b)


@FAST
@given(data=st.data())
def test_matmul_random_batches(data):
    m, k, n = (data.draw(st.integers(1, 3)) for _ in range(3))
    batch = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2,
                                                        max_side=2))
    rng = np.random.default_rng(m * 9 + k * 3 + n)
    a = uniform(rng, batch.input_shapes[0] + (m, k))
    b = uniform(rng, batch.input_shapes[1] + (k, n))
    check_grad(mv.matmul, a, b)


def test_dot():
    rng = np.random.default_rng(17)
    v, w, m = uniform(rng, (3,)), uniform(rng, (3,)), uniform(rng, (2, 3))
    check_grad(mv.dot, v, w)
    check_grad(mv.dot, m, v)
    check_grad(mv.dot, m.T.copy(), m)
    check_grad(lambda x, y: x.dot(y), m, w)


@pytest.mark.parametrize("axes", [0, 1, 2, ([1], [0]), ([0, 2], [1, 0])], ids=str)
def test_tensordot(axes):
    rng = np.random.default_rng(19)
    a = uniform(rng, (2, 3, 2))
    b = uniform(rng, (2, 2, 3)) if isinstance(axes, tuple) else \
        uniform(rng, a.shape[a.ndim - axes:] + (2,))
    if axes == ([1], [0]):
        b = uniform(rng, (3, 2))
    check_grad(lambda x, y: mv.tensordot(x, y, axes), a, b)


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 2)]), ("ij,jk", [(2, 3), (3, 4)]), ("ij->ji", [(2, 3)]),
    ("ij", [(2, 3)]), ("ji", [(2, 3)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
    ("iij->j", [(2, 2, 3)]), ("ij->", [(2, 3)]), ("ij,j->i", [(2, 3), (3,)]),
    ("i,i", [(3,), (3,)]), ("i,j->ij", [(2,), (3,)]), ("ij,jk->k", [(2, 3), (3, 2)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (2, 3, 2)]), ("...ij,jk", [(2, 2, 3), (3, 2)]),
    ("i...->...", [(2, 3, 2)]), ("bij,bjk,bk->bi", [(2, 2, 3), (2, 3, 2), (2, 2)]),
    ("ij,ij->i", [(2, 3), (2, 3)]), ("ii,i->i", [(3, 3), (3,)]),
    ("i...j,...j->...i", [(2, 3, 2), (1, 2)]), ("...i,...i", [(2, 3), (3,)]),
    ("i...,i->...", [(2, 1, 3), (2,)]),
]


@pytest.mark.parametrize("subscripts,shapes", EINSUM, ids=[e[0] for e in EINSUM])
def test_einsum(subscripts, shapes):
    rng = np.random.default_rng(len(subscripts))
    arrays = [uniform(rng, s) for s in shapes]
    check_grad(lambda *xs: mv.einsum(subscripts, *xs), *arrays)


def test_inner_and_outer():
    rng = np.random.default_rng(23)
    a, b, m = uniform(rng, (3,)), uniform(rng, (4,)), uniform(rng, (2, 3))
    check_grad(mv.outer, a, b)
    check_grad(mv.inner, m, a)
    check_grad(mv.inner, a, a[::-1].copy())
