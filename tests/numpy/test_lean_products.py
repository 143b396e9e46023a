"""Matrix products on the lean path in C (``lean.product``: ``x @ y``, ``x.dot(y)``,
``np.matmul``, ``np.dot``) and one-operand functions of host scalars (``np.log(s)`` of a
NumPy scalar: NumPy's own result, at once): NumPy's bits, dtypes, errors and warnings at
the user's line, with the device's BLAS thread count held and given back; the Python path
alone (MINERVA_ACCEL=0) runs this file too (test_lean_accel)."""
from __future__ import annotations

import threading
import warnings

import numpy
import pytest

import minerva as mv
from minerva.api.core import lean
from minerva.common.errors import ShapeError
from minerva.device.cpu.blas import BLAS
from tests.support.profiling import python_calls

WAIT = 30
SHAPES = [((5,), (5, 3)), ((4, 5), (5,)), ((4, 5), (5, 3)), ((2, 4, 5), (2, 5, 3)),
          ((2, 4, 5), (5, 3)), ((1, 5), (5, 1)), ((3, 1), (1, 4))]
DTYPES = ["float64", "float32", "int64", "complex128", "bool"]


def _operand(rng, shape, dtype):
    data = rng.standard_normal(shape) * 3
    if numpy.dtype(dtype).kind == "c":
        data = data + 1j * rng.standard_normal(shape)
    return data.astype(dtype)


@pytest.mark.parametrize("seed", range(6))
def test_random_products_equal_numpy_bitwise(seed):
    rng = numpy.random.default_rng(seed)
    for shape_a, shape_b in SHAPES:
        dtype = DTYPES[rng.integers(len(DTYPES))]
        a, b = _operand(rng, shape_a, dtype), _operand(rng, shape_b, dtype)
        x, y = mv.array(a), mv.array(b)
        cases = [(x @ y, a @ b), (mv.matmul(x, y), numpy.matmul(a, b))]
        if len(shape_a) <= 2:   # NumPy's dot of a deeper `a` loops its own way (below)
            cases += [(x.dot(y), a.dot(b)), (mv.dot(x, y), numpy.dot(a, b))]
        for got, want in cases:
            result = got.to_numpy(timeout=WAIT)
            assert result.dtype == want.dtype and result.shape == want.shape
            assert result.tobytes() == want.tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_products_of_views_equal_numpy_bitwise(seed):
    rng = numpy.random.default_rng(seed)
    a, b = rng.standard_normal((6, 4)), rng.standard_normal((6, 5))
    x, y = mv.array(a), mv.array(b)
    cases = [(x.T @ y, a.T @ b), (x.T.dot(y), a.T.dot(b)), (x[1:5].T @ y[1:5], a[1:5].T @ b[1:5]),
             (x[::2].T @ y[::2], a[::2].T @ b[::2]), (x[:, 1] @ y, a[:, 1] @ b)]
    for got, want in cases:
        assert got.to_numpy(timeout=WAIT).tobytes() == want.tobytes()


def test_dot_of_deeper_operands_sums_numpys_axes():
    """NumPy's dot of an operand with more than two axes sums element by element (its own
    loop), minerva's with matmul's or tensordot's kernel: the same sums, not the same
    rounding (rtol 1e-13)."""
    rng = numpy.random.default_rng(3)
    for shape_a, shape_b in (((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5))):
        a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
        for got in (mv.array(a).dot(mv.array(b)), mv.dot(mv.array(a), mv.array(b))):
            got = got.to_numpy(timeout=WAIT)
            assert got.shape == numpy.dot(a, b).shape
            numpy.testing.assert_allclose(got, numpy.dot(a, b), rtol=1e-13)


def test_a_product_of_vectors_is_numpys_scalar_and_a_scalar_operand_is_refused():
    v = numpy.arange(4.0)
    s = mv.array(v) @ mv.array(v)
    assert s.shape == () and float(s) == float(v @ v)
    assert mv.array(v).dot(2.0).to_numpy(timeout=WAIT).tobytes() == v.dot(2.0).tobytes()
    with pytest.raises(ValueError):
        mv.array(v) @ 2.0


def test_a_bad_product_shape_raises_at_the_users_line():
    with pytest.raises(ShapeError) as info:
        mv.ones((3, 4)) @ mv.ones((3, 4))
    assert any(str(entry.path) == __file__ for entry in info.traceback)
    with pytest.raises(ShapeError):
        mv.ones((3, 4)).dot(mv.ones(3))


@pytest.mark.skipif(not lean.ACTIVE, reason="the C accelerator is not built")
def test_a_small_product_makes_no_python_call():
    x, y = mv.ones((20, 6)), mv.ones(6)
    for _ in range(10):
        x @ y
    calls = python_calls(lambda: [x @ y for _ in range(200)] and [x.dot(y) for _ in range(200)])
    assert "build" not in calls and "run_lean" not in calls and "try_hold" not in calls


@pytest.mark.skipif(not BLAS.process_wide, reason="per-thread BLAS counts never wait")
def test_a_product_waits_outside_the_lock_while_another_count_is_held():
    mv.init(cpu_threads=2)
    mv.set_device(mv.create_cpu_device())
    a = numpy.arange(9.0).reshape(3, 3)
    x = mv.array(a)
    x.wait(timeout=WAIT)
    BLAS.hold(3)   # another kernel holds another count: the product may not run here
    try:
        y = x @ x
        z = (x + 1.0).wait(timeout=WAIT)   # the engine goes on meanwhile
        numpy.testing.assert_array_equal(z.to_numpy(timeout=WAIT), a + 1.0)
    finally:
        BLAS.release()
    assert y.to_numpy(timeout=WAIT).tobytes() == (a @ a).tobytes()


@pytest.mark.skipif(not BLAS.process_wide, reason="per-thread BLAS counts never wait")
def test_products_give_the_blas_count_back():
    mv.init(cpu_threads=2)
    mv.set_device(mv.create_cpu_device())
    x = mv.ones((4, 4))
    for _ in range(50):
        x = (x @ x) * 0.25
    x.wait(timeout=WAIT)
    taken = threading.Event()

    def other_count():   # waits forever if a product kept its hold
        BLAS.hold(5)
        BLAS.release()
        taken.set()
    thread = threading.Thread(target=other_count, daemon=True)
    thread.start()
    assert taken.wait(WAIT)
    numpy.testing.assert_array_equal(x.to_numpy(timeout=WAIT), numpy.ones((4, 4)))


HOST_NAMES = ("log", "exp", "sqrt", "negative", "absolute", "sin", "tanh", "floor",
              "isnan", "square", "reciprocal", "sign")


@pytest.mark.parametrize("name", HOST_NAMES)
@pytest.mark.parametrize("value", [numpy.float64(2.5), numpy.float32(0.5), 3.25,
                                   numpy.int16(7), numpy.complex128(1 + 2j), numpy.bool_(True)])
def test_a_function_of_a_host_scalar_is_numpys_scalar(name, value):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = getattr(numpy, name)(value)
        except TypeError:   # NumPy has no loop for it: minerva refuses it too
            with pytest.raises(TypeError):
                getattr(mv, name)(value)
            return
        got = getattr(mv, name)(value)
    assert type(got) is type(want)
    assert numpy.asarray(got).tobytes() == numpy.asarray(want).tobytes()


def test_a_host_scalars_floating_point_error_is_reported_at_the_users_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = mv.log(numpy.float64(0.0))
    assert got == -numpy.inf
    assert [w.category for w in caught] == [RuntimeWarning]
    assert caught[0].filename == __file__ and "log" in str(caught[0].message)
    with numpy.errstate(divide="raise"), pytest.raises(FloatingPointError):
        mv.log(0.0)
    with numpy.errstate(divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mv.log(0.0) == -numpy.inf


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "complex128"])
def test_scalar_results_chain_as_numpys_scalars(dtype):
    """0-d results of ufuncs and products (on the C path where it is built) are marked as
    NumPy's scalars, as ``build`` marks them: repr, type rules and bits of NumPy's."""
    a = (numpy.arange(1, 5) * 1.5).astype(dtype)
    b = a[::-1].copy()
    s, t = mv.array(a) @ mv.array(b), a @ b
    u, w = mv.array(a[0]), a[0]   # a 0-d array: ufuncs of it give scalars too
    steps = [lambda v: v * 2.0, lambda v: 1.0 - v, lambda v: -v, lambda v: v + v,
             lambda v: abs(v), lambda v: v * numpy.float32(0.5), lambda v: v < 3.0]
    for step in steps:
        for got, want in ((step(s), step(t)), (step(u), step(w))):
            assert repr(got) == repr(want)
            assert numpy.asarray(got).tobytes() == numpy.asarray(want).tobytes()
            assert hash(got) == hash(want)


@pytest.mark.skipif(not lean.ACTIVE, reason="the C accelerator is not built")
def test_a_scalar_chain_makes_no_python_call_per_op():
    s = mv.ones(4) @ mv.ones(4)

    def chain():
        v = s
        for _ in range(200):
            v = 1.0 - (v * 0.5) * (v * 0.5)
        return v
    chain()
    calls = python_calls(chain)
    assert "build" not in calls and "run_lean" not in calls and "method" not in calls
    want = numpy.float64(4.0)
    for _ in range(200):
        want = 1.0 - (want * 0.5) * (want * 0.5)
    got = chain()
    assert repr(got) == repr(want) and float(got) == float(want)
