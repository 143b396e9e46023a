"""Every core op against NumPy: values and dtypes identical, under every engine."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from minerva.ops.elementwise import BINARY, UNARY

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN/inf on purpose

DTYPES = (np.float32, np.float64, np.int32, np.int64, np.bool_)


def sample(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(1, 9, size=shape).astype(dtype)
    return (rng.standard_normal(shape) * 3).astype(dtype)


def check(got, want):
    values = got.to_numpy()
    want = np.asarray(want)
    assert values.dtype == want.dtype, (values.dtype, want.dtype)
    assert values.shape == want.shape
    np.testing.assert_array_equal(values, want)


def numpy_or_error(function, *args):
    try:
        with np.errstate(all="ignore"):
            return function(*args), None
    except (TypeError, ValueError) as exc:
        return None, exc


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.int32, np.float64),
                                    (np.int64, np.int32), (np.bool_, np.bool_),
                                    (np.float32, np.int64)])
def test_binary_ops(engine, rng, name, dtypes):
    a_np, b_np = sample(rng, (3, 4), dtypes[0]), sample(rng, (4,), dtypes[1])
    ufunc = getattr(np, name)
    want, error = numpy_or_error(ufunc, a_np, b_np)
    if error is not None:
        with pytest.raises((mv.ShapeError, TypeError)):
            getattr(mv, name)(mv.array(a_np), mv.array(b_np))
        return
    got = getattr(mv, name)(mv.array(a_np), mv.array(b_np))
    check(got, want)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("scalar", [2, 2.5, True, np.float64(1.5), np.int8(3)])
@pytest.mark.parametrize("reverse", [False, True])
def test_scalar_operands_follow_nep50(engine, rng, name, scalar, reverse):
    a_np = sample(rng, (5,), np.float32 if name not in ("bitwise_and", "bitwise_or",
                                                        "bitwise_xor") else np.int32)
    ufunc = getattr(np, name)
    args = (scalar, a_np) if reverse else (a_np, scalar)
    want, error = numpy_or_error(ufunc, *args)
    function = getattr(mv, name)
    margs = (scalar, mv.array(a_np)) if reverse else (mv.array(a_np), scalar)
    if error is not None:
        with pytest.raises((mv.ShapeError, TypeError)):
            function(*margs)
        return
    check(function(*margs), want)


@pytest.mark.parametrize("name", UNARY + ("sigmoid", "relu"))
@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_ops(engine, rng, name, dtype):
    a_np = sample(rng, (2, 3), dtype)
    reference = {"sigmoid": lambda x: 1 / (1 + np.exp(-x)), "relu": lambda x: np.maximum(x, 0)}
    want, error = numpy_or_error(reference.get(name) or getattr(np, name), a_np)
    op = getattr(mv, name)
    if error is not None:
        with pytest.raises((mv.ShapeError, TypeError)):
            op(mv.array(a_np))
        return
    if name == "sigmoid":
        got = op(mv.array(a_np)).to_numpy()
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
        return
    check(op(mv.array(a_np)), want)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "any", "all"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (2, 0, 1), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(engine, rng, name, axis, keepdims):
    for dtype in (np.float32, np.int32, np.bool_):
        a_np = sample(rng, (2, 3, 4), dtype)
        want = getattr(np, name)(a_np, axis=axis, keepdims=keepdims)
        got = getattr(mv, name)(mv.array(a_np), axis=axis, keepdims=keepdims)
        if name == "mean":
            np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-6)
            assert got.dtype == np.asarray(want).dtype
        else:
            check(got, want)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_arg_reductions(engine, rng, name, axis, keepdims):
    a_np = sample(rng, (3, 5), np.float32)
    check(getattr(mv, name)(mv.array(a_np), axis=axis, keepdims=keepdims),
          getattr(np, name)(a_np, axis=axis, keepdims=keepdims))


def test_reduction_errors(engine):
    a = mv.zeros((2, 0))
    with pytest.raises(mv.ShapeError, match="zero-size"):
        a.max(axis=1)
    check(a.sum(axis=1), np.zeros((2, 0), np.float64).sum(axis=1))
    with pytest.raises(mv.ShapeError, match="repeated"):
        mv.ones((2, 2)).sum(axis=(0, 0))
    with pytest.raises(TypeError):
        mv.ones((2, 2)).argmax(axis=(0, 1))


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                                    ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
                                    ((5, 2, 3), (1, 3, 4)), ((2, 1, 2, 3), (4, 3, 2))])
def test_matmul_shapes(engine, rng, shapes):
    a_np, b_np = (sample(rng, s, np.float64) for s in shapes)
    check(mv.matmul(mv.array(a_np), mv.array(b_np)), np.matmul(a_np, b_np))


@pytest.mark.parametrize("shape_a, shape_b, ta, tb", [
    ((3, 2), (3, 4), True, False), ((2, 3), (4, 3), False, True), ((3, 2), (4, 3), True, True),
    ((5, 3, 2), (3, 4), True, False), ((2, 2, 3), (2, 4, 3), False, True)])
def test_matmul_transpose_flags(engine, rng, shape_a, shape_b, ta, tb):
    a_np, b_np = sample(rng, shape_a, np.float64), sample(rng, shape_b, np.float64)
    want = np.matmul(np.swapaxes(a_np, -1, -2) if ta else a_np,
                     np.swapaxes(b_np, -1, -2) if tb else b_np)
    check(mv.matmul(mv.array(a_np), mv.array(b_np), transpose_a=ta, transpose_b=tb), want)


def test_matmul_transpose_needs_two_dimensions(engine):
    with pytest.raises(mv.ShapeError, match="transpose_a"):
        mv.matmul(mv.ones(3), mv.ones((3, 2)), transpose_a=True)


def test_matmul_mixed_dtypes_and_errors(engine, rng):
    a_np, b_np = sample(rng, (2, 3), np.int32), sample(rng, (3, 2), np.float32)
    check(mv.array(a_np) @ mv.array(b_np), a_np @ b_np)
    with pytest.raises(mv.ShapeError):
        mv.ones(()) @ mv.ones(3)
    with pytest.raises(mv.ShapeError):
        mv.ones((2, 2, 3)) @ mv.ones((3, 3, 2))


@pytest.mark.parametrize("index", [0, -1, (1, 2), slice(1, None), (slice(None), 0),
                                   (Ellipsis, 1), (None, 0), (slice(None, None, -1),),
                                   (1, slice(0, 3, 2), None), np.int64(1), ()])
def test_basic_indexing(engine, index):
    a_np = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    check(mv.array(a_np)[index], a_np[index])


def test_shape_functions(engine):
    a_np = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    a = mv.array(a_np)
    check(a.reshape(4, -1), a_np.reshape(4, -1))
    check(a.reshape((24,)), a_np.reshape(24))
    check(a.T, a_np.T)
    check(a.transpose(1, 0, 2), a_np.transpose(1, 0, 2))
    check(mv.transpose(a, (2, 0, 1)), np.transpose(a_np, (2, 0, 1)))
    check(a.flatten(), a_np.flatten())
    check(mv.expand_dims(a, 1), np.expand_dims(a_np, 1))
    check(mv.squeeze(a[:, :1]), np.squeeze(a_np[:, :1]))
    check(mv.concatenate([a, a], axis=-1), np.concatenate([a_np, a_np], axis=-1))
    check(mv.concatenate([a, a], axis=None), np.concatenate([a_np, a_np], axis=None))
    check(mv.concatenate([a, a.astype(np.float32)]),
          np.concatenate([a_np, a_np.astype(np.float32)]))
    check(mv.stack([a, a], axis=-1), np.stack([a_np, a_np], axis=-1))
    check(a.astype(np.float16), a_np.astype(np.float16))
    with pytest.raises(mv.ShapeError):
        a.transpose(0, 1)
    with pytest.raises(mv.ShapeError):
        mv.stack([a, a[0]])


def test_where_and_clip(engine, rng):
    a_np = sample(rng, (3, 4), np.float32)
    b_np = sample(rng, (4,), np.float64)
    a, b = mv.array(a_np), mv.array(b_np)
    check(mv.where(a > 0, a, b), np.where(a_np > 0, a_np, b_np))
    check(mv.where(a > 0, 1.0, a), np.where(a_np > 0, 1.0, a_np))
    check(mv.where(a_np > 0, 1, 0), np.where(a_np > 0, 1, 0))
    check(mv.clip(a, -1, 1), np.clip(a_np, -1, 1))
    check(a.clip(None, 0.5), a_np.clip(None, 0.5))
    check(mv.clip(a, b, 2.0), np.clip(a_np, b_np, 2.0))


def test_random_ops_have_the_right_distribution(engine):
    mv.random.seed(0)
    normal = mv.randn((200, 200), mu=2.0, sigma=0.5).to_numpy()
    uniform = mv.rand((200, 200), low=-1, high=3).to_numpy()
    coins = mv.randb((200, 200), 0.3).to_numpy()
    assert normal.dtype == np.float64 and abs(normal.mean() - 2.0) < 0.01
    assert abs(normal.std() - 0.5) < 0.01
    assert uniform.min() >= -1 and uniform.max() < 3 and abs(uniform.mean() - 1) < 0.02
    assert set(np.unique(coins)) <= {0.0, 1.0} and abs(coins.mean() - 0.3) < 0.01
