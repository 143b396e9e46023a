"""minerva.linalg against numpy.linalg: values, dtypes and shapes, under every engine. The
kernels run NumPy's own functions on the same data, so results are compared exactly."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from tests.support.linalg_fixtures import FLOATS, both, check, hermitian, matrices

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# ---- square-matrix functions ---------------------------------------------------------------

SQUARE = {
    "inv": lambda m, a: m.linalg.inv(a),
    "det": lambda m, a: m.linalg.det(a),
    "slogdet": lambda m, a: tuple(m.linalg.slogdet(a)),
    "eigvalsh": lambda m, a: m.linalg.eigvalsh(a),
    "eigvalsh_U": lambda m, a: m.linalg.eigvalsh(a, UPLO="U"),
    "eigh": lambda m, a: tuple(m.linalg.eigh(a)),
    "cholesky": lambda m, a: m.linalg.cholesky(a),
    "cholesky_upper": lambda m, a: m.linalg.cholesky(a, upper=True),
    "power_-2": lambda m, a: m.linalg.matrix_power(a, -2),
    "power_0": lambda m, a: m.linalg.matrix_power(a, 0),
    "power_1": lambda m, a: m.linalg.matrix_power(a, 1),
    "power_3": lambda m, a: m.linalg.matrix_power(a, 3),
    "power_6": lambda m, a: m.linalg.matrix_power(a, 6),
}


@pytest.mark.parametrize("name", SQUARE)
def test_square_matrix_functions(engine, rng, name):
    function = SQUARE[name]
    for dtype in FLOATS + (np.complex128, np.int64):
        for shape in ((3, 3), (2, 4, 4), (2, 1, 2, 2), (0, 3, 3)):
            a_np, a = both(rng, shape, dtype, hermitian)
            check(function(mv, a), function(np, a_np))


def test_square_functions_take_views_and_bools(engine, rng):
    base = hermitian(rng, (4, 4))
    view = mv.array(base)[::-1, ::-1].T
    check(mv.linalg.inv(view), np.linalg.inv(base[::-1, ::-1].T))
    check(mv.linalg.det(mv.array(np.eye(3, dtype=bool))), np.linalg.det(np.eye(3, dtype=bool)))


@pytest.mark.parametrize("a_shape, b_shape", [
    ((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3, 1)),
    ((2, 3, 3), (1, 3, 4)), ((3, 3), (4, 3, 2)), ((1, 3, 3), (5, 3, 2)), ((0, 2, 2), (2,))])
def test_solve(engine, rng, a_shape, b_shape):
    for dtype in FLOATS + (np.int32,):
        a_np, a = both(rng, a_shape, dtype)
        b_np, b = both(rng, b_shape, dtype)
        check(mv.linalg.solve(a, b), np.linalg.solve(a_np, b_np))


def test_solve_of_lists_and_mixed_dtypes(engine, rng):
    a_np = matrices(rng, (2, 2), np.float32)
    check(mv.linalg.solve(mv.array(a_np), [1, 2]), np.linalg.solve(a_np, [1, 2]))
    a_c = matrices(rng, (2, 2), np.complex64)
    check(mv.linalg.solve(mv.array(a_c), mv.array(a_np)), np.linalg.solve(a_c, a_np))


# ---- svd, qr, pinv ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 4, 3), (3, 3)])
def test_svd(engine, rng, shape):
    for dtype in FLOATS + (np.complex64, np.int64):
        a_np, a = both(rng, shape, dtype)
        for full in (True, False):
            result = mv.linalg.svd(a, full_matrices=full)
            check(tuple(result), tuple(np.linalg.svd(a_np, full_matrices=full)))
        check(mv.linalg.svd(a, compute_uv=False), np.linalg.svd(a_np, compute_uv=False))
        check(mv.linalg.svdvals(a), np.linalg.svdvals(a_np))


def test_svd_of_hermitian_matrices(engine, rng):
    for dtype in FLOATS:
        a_np, a = both(rng, (2, 4, 4), dtype, hermitian)
        a_np -= 20 * np.eye(4, dtype=dtype)  # negative eigenvalues too
        a = mv.array(a_np)
        check(tuple(mv.linalg.svd(a, hermitian=True)), tuple(np.linalg.svd(a_np,
                                                                          hermitian=True)))
        check(mv.linalg.svd(a, compute_uv=False, hermitian=True),
              np.linalg.svd(a_np, compute_uv=False, hermitian=True))


def test_result_tuples_are_named_as_in_numpy_2(engine, rng):
    a_np, a = both(rng, (3, 3), make=hermitian)
    u, s, vh = result = mv.linalg.svd(a)
    assert (result.U, result.S, result.Vh) == (u, s, vh) and type(result).__name__ == "SVDResult"
    assert mv.linalg.eigh(a).eigenvalues.shape == (3,)
    assert mv.linalg.slogdet(a).logabsdet.shape == ()
    q, r = mv.linalg.qr(a)
    assert mv.linalg.qr(a).Q.shape == q.shape and r.shape == (3, 3)
    assert mv.linalg.eig(a).eigenvectors.shape == (3, 3)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 1, 5, 2)])
def test_qr(engine, rng, shape):
    for dtype in FLOATS + (np.complex128, np.int32):
        a_np, a = both(rng, shape, dtype)
        for mode in ("reduced", "complete", "raw"):
            check(tuple(mv.linalg.qr(a, mode=mode)), tuple(np.linalg.qr(a_np, mode=mode)))
        check(mv.linalg.qr(a, mode="r"), np.linalg.qr(a_np, mode="r"))


def test_pinv(engine, rng):
    for dtype in FLOATS + (np.complex128, np.int64):
        for shape in ((4, 3), (2, 3, 5), (0, 3)):
            a_np, a = both(rng, shape, dtype)
            check(mv.linalg.pinv(a), np.linalg.pinv(a_np))
            check(mv.linalg.pinv(a, rcond=0.5), np.linalg.pinv(a_np, rcond=0.5))
    a_np, a = both(rng, (3, 3), np.float32, hermitian)
    check(mv.linalg.pinv(a, hermitian=True), np.linalg.pinv(a_np, hermitian=True))
    check(mv.linalg.pinv(a, rtol=None), np.linalg.pinv(a_np, rtol=None))
    check(mv.linalg.pinv(a, rtol=0.1), np.linalg.pinv(a_np, rtol=0.1))


# ---- norms, cond, rank ------------------------------------------------------------------------

VECTOR_ORDS = (None, 2, 1, -1, 0, np.inf, -np.inf, 3, 0.5, -2)
MATRIX_ORDS = (None, "fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2)


def test_vector_norms(engine, rng):
    x_np, x = both(rng, (2, 3, 4))
    for ord in VECTOR_ORDS:
        for axis in (-1, 0, (1,)):
            for keepdims in (False, True):
                check(mv.linalg.norm(x, ord, axis, keepdims),
                      np.linalg.norm(x_np, ord, axis, keepdims))
        check(mv.linalg.norm(x[0, 0], ord), np.linalg.norm(x_np[0, 0], ord))
    check(mv.linalg.norm(x), np.linalg.norm(x_np))
    check(mv.linalg.norm(x, keepdims=True), np.linalg.norm(x_np, keepdims=True))
    check(mv.linalg.norm(mv.array(3.0)), np.linalg.norm(3.0))


def test_matrix_norms(engine, rng):
    for dtype in (np.float32, np.complex128, np.int16):
        x_np, x = both(rng, (2, 3, 4), dtype)
        for ord in MATRIX_ORDS:
            for axis in ((1, 2), (2, 0), (-1, -2)):
                for keepdims in (False, True):
                    check(mv.linalg.norm(x, ord, axis, keepdims),
                          np.linalg.norm(x_np, ord, axis, keepdims))
            check(mv.linalg.norm(x[0], ord), np.linalg.norm(x_np[0], ord))
            check(mv.linalg.matrix_norm(x, ord=ord, keepdims=True),
                  np.linalg.matrix_norm(x_np, ord=ord, keepdims=True))


def test_vector_norm_over_any_axes(engine, rng):
    x_np, x = both(rng, (2, 3, 4, 5), np.float32)
    for ord in VECTOR_ORDS[1:]:
        for axis in (None, 1, -1, (0, 2), (3, 1, 0), (0, 1, 2, 3)):
            for keepdims in (False, True):
                check(mv.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord),
                      np.linalg.vector_norm(x_np, axis=axis, keepdims=keepdims, ord=ord))


def test_cond_and_matrix_rank(engine, rng):
    x_np, x = both(rng, (2, 4, 4))
    for p in MATRIX_ORDS:
        check(mv.linalg.cond(x, p), np.linalg.cond(x_np, p))
    check(mv.linalg.cond(x[:, :, :3]), np.linalg.cond(x_np[:, :, :3]))
    low = rng.standard_normal((3, 5, 2)) @ rng.standard_normal((3, 2, 4))
    low[1] = 0
    check(mv.linalg.matrix_rank(mv.array(low)), np.linalg.matrix_rank(low))
    check(mv.linalg.matrix_rank(mv.array(low), tol=1.0), np.linalg.matrix_rank(low, tol=1.0))
    check(mv.linalg.matrix_rank(mv.array(low), rtol=0.5), np.linalg.matrix_rank(low, rtol=0.5))
    sym = low[:, :4] @ np.swapaxes(low[:, :4], -1, -2)
    check(mv.linalg.matrix_rank(mv.array(sym), hermitian=True),
          np.linalg.matrix_rank(sym, hermitian=True))
    for vector in (np.zeros(3), np.arange(3.0)):
        assert int(mv.linalg.matrix_rank(mv.array(vector))) == np.linalg.matrix_rank(vector)


# ---- products of several matrices, diagonals, tensor forms ---------------------------------

def test_multi_dot(engine, rng):
    shapes = [(10, 30), (30, 5), (5, 60)], [(6,), (6, 4), (4, 20), (20, 3)], \
        [(3, 4), (4, 2), (2,)], [(5,), (5, 7), (7, 2), (2,)], [(2, 3), (3, 2)]
    for group in shapes:
        arrays = [rng.standard_normal(s) for s in group]
        check(mv.linalg.multi_dot([mv.array(a) for a in arrays]), np.linalg.multi_dot(arrays),
              rtol=1e-12)


def test_diagonal_and_trace(engine, rng):
    x_np, x = both(rng, (2, 3, 5), np.int32)
    for offset in (-3, -1, 0, 2, 4, 7):
        check(mv.linalg.diagonal(x, offset=offset), np.linalg.diagonal(x_np, offset=offset))
        check(mv.linalg.trace(x, offset=offset), np.linalg.trace(x_np, offset=offset))
    check(mv.linalg.trace(x, dtype=np.float32), np.linalg.trace(x_np, dtype=np.float32))
    view = mv.linalg.diagonal(x)
    view += 100  # a view: writes reach the base, as through NumPy's writable diagonals
    assert (x.to_numpy()[:, 0, 0] == x_np[:, 0, 0] + 100).all()


def test_tensorinv_and_tensorsolve(engine, rng):
    a_np = np.eye(24).reshape(4, 6, 8, 3) + 0.1 * rng.standard_normal((4, 6, 8, 3))
    check(mv.linalg.tensorinv(mv.array(a_np)), np.linalg.tensorinv(a_np))
    b_np = rng.standard_normal((4, 6))
    check(mv.linalg.tensorsolve(mv.array(a_np), mv.array(b_np)),
          np.linalg.tensorsolve(a_np, b_np))
    c_np = np.moveaxis(a_np, 3, 0)
    check(mv.linalg.tensorsolve(mv.array(c_np), mv.array(b_np), axes=(0,)),
          np.linalg.tensorsolve(c_np, b_np, axes=(0,)))


def test_host_functions_eig_eigvals_lstsq(engine, rng):
    real = matrices(rng, (2, 3, 3))
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    for a_np in (real, rotation, real.astype(np.float32)):
        check(tuple(mv.linalg.eig(mv.array(a_np))), tuple(np.linalg.eig(a_np)))
        check(mv.linalg.eigvals(mv.array(a_np)), np.linalg.eigvals(a_np))
    a_np, b_np = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    got, want = mv.linalg.lstsq(mv.array(a_np), mv.array(b_np)), np.linalg.lstsq(a_np, b_np)
    check(got[0], want[0])
    check(got[1], want[1])
    assert got[2] == want[2]
    check(got[3], want[3])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_norm_of_all_elements_is_numpys_bitwise(engine, rng, dtype):
    """``norm(x)`` (no ord, no axis) of floats: NumPy's own steps, so NumPy's bits, of
    whole values and views, with and without ``keepdims``."""
    host = rng.standard_normal((5, 6)).astype(dtype)
    x = mv.array(host)
    for got, want in ((x, host), (x[::2, 1:], host[::2, 1:]), (x.T, host.T), (x[3], host[3])):
        for keepdims in (False, True):
            ours = mv.linalg.norm(got, keepdims=keepdims).to_numpy()
            theirs = np.asarray(np.linalg.norm(want, keepdims=keepdims))
            assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
            assert ours.tobytes() == theirs.tobytes()
