"""minerva.linalg's errors against numpy.linalg's (the same exception families, shape errors
at once, value errors at wait), random stacks, and the portable kernels (the paths a GPU
takes) run with NumPy."""
from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minerva as mv
from tests.support.linalg_fixtures import check, hermitian, matrices
from minerva.ops import registry

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# ---- errors ------------------------------------------------------------------------------------

BAD_SHAPES = [
    (lambda m, a: m.linalg.inv(a), (3,)), (lambda m, a: m.linalg.inv(a), (2, 3)),
    (lambda m, a: m.linalg.det(a), (2, 3, 4)), (lambda m, a: m.linalg.cholesky(a), (4,)),
    (lambda m, a: m.linalg.eigh(a), (3, 2)), (lambda m, a: m.linalg.svd(a), (3,)),
    (lambda m, a: m.linalg.qr(a), (3,)), (lambda m, a: m.linalg.matrix_power(a, 2), (2, 3)),
    (lambda m, a: m.linalg.slogdet(a), ()), (lambda m, a: m.linalg.pinv(a), (4,)),
    (lambda m, a: m.linalg.cond(a, 1), (2, 3)),
    (lambda m, a: m.linalg.norm(a, "fro"), (3,)), (lambda m, a: m.linalg.norm(a, 1), (2, 2, 2)),
    (lambda m, a: m.linalg.norm(a, "bad", (0, 1)), (2, 2)),
    (lambda m, a: m.linalg.norm(a, axis=(0, 0)), (2, 2)),
    (lambda m, a: m.linalg.norm(a, axis=(0, 1, 2)), (2, 2, 2)),
    (lambda m, a: m.linalg.norm(a, -np.inf), (0,)),
    (lambda m, a: m.linalg.matrix_norm(a), (3,)),
    (lambda m, a: m.linalg.vector_norm(a, axis=(0, 0)), (2, 2)),
    (lambda m, a: m.linalg.solve(a, np.ones(3)), (2, 2)),
    (lambda m, a: m.linalg.solve(a, np.ones((3, 1))), (2, 2)),
    (lambda m, a: m.linalg.solve(a, np.ones((4, 2, 1))), (3, 2, 2)),
    (lambda m, a: m.linalg.solve(a, 1.0), (2, 2)),
    (lambda m, a: m.linalg.tensorsolve(a, np.ones(4)), (4, 3)),
    (lambda m, a: m.linalg.tensorinv(a, 0), (4, 4)),
    (lambda m, a: m.linalg.multi_dot([a, a, np.ones((2, 2, 2))]), (2, 2)),
    (lambda m, a: m.linalg.multi_dot([a]), (2, 2)),
]


@pytest.mark.parametrize("case", range(len(BAD_SHAPES)))
def test_bad_shapes_raise_at_once_as_in_numpy(engine, case):
    function, shape = BAD_SHAPES[case]
    a_np = np.ones(shape)
    with pytest.raises(ValueError) as numpy_error:
        function(np, a_np)
    with pytest.raises(ValueError) as error:
        function(mv, mv.array(a_np))
    assert isinstance(error.value, (mv.ShapeError, np.linalg.LinAlgError)) or not \
        isinstance(error.value, mv.MinervaError)
    if isinstance(numpy_error.value, np.linalg.LinAlgError):
        assert isinstance(error.value, np.linalg.LinAlgError)
    if isinstance(numpy_error.value, IndexError):
        assert isinstance(error.value, IndexError)


def test_bad_arguments(engine):
    a = mv.array(np.eye(3))
    with pytest.raises(TypeError, match="float16"):
        mv.linalg.inv(a.astype(np.float16))
    with pytest.raises(ValueError, match="UPLO"):
        mv.linalg.eigh(a, UPLO="X")
    with pytest.raises(ValueError, match="mode"):
        mv.linalg.qr(a, mode="bogus")
    with pytest.raises(TypeError, match="exponent"):
        mv.linalg.matrix_power(a, 1.5)
    with pytest.raises(ValueError, match="both"):
        mv.linalg.matrix_rank(a, tol=1.0, rtol=1.0)
    with pytest.raises(ValueError, match="both"):
        mv.linalg.pinv(a, rcond=1.0, rtol=1.0)
    with pytest.raises(TypeError, match="axis"):
        mv.linalg.norm(a, axis=[0, 1])
    with pytest.raises(mv.ShapeError, match="not defined on empty"):
        mv.linalg.cond(mv.zeros((0, 0)))
    with pytest.warns(DeprecationWarning, match="full"):
        assert len(mv.linalg.qr(a, mode="full")) == 2


@pytest.mark.parametrize("call", [
    lambda m, a, b: m.linalg.inv(a), lambda m, a, b: m.linalg.solve(a, b),
    lambda m, a, b: m.linalg.solve(a[None], b[:, None]), lambda m, a, b: m.linalg.cholesky(a),
    lambda m, a, b: m.linalg.tensorinv(a.reshape(2, 1, 2), ind=1)])
def test_singular_matrices_fail_at_wait_with_numpy_linalgerror(engine, call):
    a_np, b_np = np.array([[1.0, 2.0], [2.0, 4.0]]), np.ones(2)
    with pytest.raises(np.linalg.LinAlgError):
        call(np, a_np, b_np)
    result = call(mv, mv.array(a_np), mv.array(b_np))  # built: no error yet
    with pytest.raises(mv.OpError) as info:
        result.wait(timeout=30)
    assert isinstance(info.value.__cause__, np.linalg.LinAlgError)
    assert float(mv.linalg.det(mv.array(a_np))) == np.linalg.det(a_np)  # still usable


def test_singular_matrix_gives_an_infinite_condition_number(engine):
    a_np = np.array([[1.0, 2.0], [2.0, 4.0]])
    for p in (None, 1, "fro"):
        check(mv.linalg.cond(mv.array(a_np), p), np.linalg.cond(a_np, p))


# ---- random stacks (hypothesis) ---------------------------------------------------------------

@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(st.integers(0, 3), max_size=2), n=st.integers(1, 4),
       k=st.integers(1, 3), vector=st.booleans(), seed=st.integers(0, 2**16))
def test_solve_and_inv_on_random_stacks(engine, batch, n, k, vector, seed):
    rng = np.random.default_rng(seed)
    a_np = matrices(rng, tuple(batch) + (n, n))
    b_np = rng.standard_normal((n,) if vector else tuple(batch[1:]) + (n, k))
    check(mv.linalg.solve(mv.array(a_np), mv.array(b_np)), np.linalg.solve(a_np, b_np))
    check(mv.linalg.inv(mv.array(a_np)), np.linalg.inv(a_np))


# ---- the portable kernels (what runs on a GPU), run with NumPy ---------------------------------

def _cupy_like_numpy():
    """NumPy without the functions CuPy lacks, and not NumPy itself: ops take the paths
    they take on a GPU."""
    hidden = {"vecdot", "vector_norm"}
    linalg = types.SimpleNamespace(**{n: getattr(np.linalg, n) for n in dir(np.linalg)
                                      if n not in hidden and not n.startswith("__")})
    names = {n: getattr(np, n) for n in dir(np) if n not in hidden and not n.startswith("__")}
    names["linalg"] = linalg
    return types.SimpleNamespace(**names)


def _run(name, inputs, out_shapes, **attrs):
    xp = _cupy_like_numpy()
    op = registry.get(name)
    specs = op.infer(*[registry.spec(a.shape, a.dtype) for a in inputs], **attrs)
    outs = tuple(np.empty(s.shape, s.dtype) for s in specs)
    op.impl(xp, *inputs, out=outs[0] if len(outs) == 1 else outs, **attrs)
    assert [o.shape for o in outs] == out_shapes
    return outs


def test_portable_kernels_match_numpy(rng):
    a = matrices(rng, (2, 3, 3))
    h = hermitian(rng, (3, 3))
    b = rng.standard_normal((4, 2, 3, 2))
    (x,) = _run("solve", [a, b], [(4, 2, 3, 2)])
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-12)
    (x,) = _run("solve", [a, b[0, 0, :, 0]], [(2, 3)])
    np.testing.assert_allclose(x, np.linalg.solve(a, b[0, 0, :, 0]), rtol=1e-12)
    (u,) = _run("cholesky", [h], [(3, 3)], upper=True)
    np.testing.assert_allclose(u, np.linalg.cholesky(h, upper=True), rtol=1e-12)
    x4 = rng.standard_normal((2, 3, 4))
    (n,) = _run("vector_norm", [x4], [(1, 3, 1)], ord=3, axis=(2, 0), keepdims=True)
    np.testing.assert_allclose(n, np.linalg.vector_norm(x4, ord=3, axis=(2, 0),
                                                        keepdims=True), rtol=1e-12)
    c = x4 + 1j * rng.standard_normal((2, 3, 4))
    (d,) = _run("vecdot", [c, x4[0]], [(2, 3)], axis_a=2, axis_b=1)
    np.testing.assert_allclose(d, np.vecdot(c, x4[0]), rtol=1e-12)
