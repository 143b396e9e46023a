"""Any op ``builder.build`` builds, on the lean path in C (``_lean.run_op``: norms,
arg-reductions, joins, casts, ``clip``, ``where``, ``diff`` ...), and ``np.array([a, b])``
of plain numbers (``lean.new_array``): NumPy's bits, dtypes, scalars, errors and
floating-point warnings, with the engine's Python ``run_lean`` left out where C takes the
op. What C does not take keeps the Python path's answer. The Python path alone runs this
file too (test_lean_accel); test_lean_trace compares the traces of both paths."""
from __future__ import annotations

import numpy
import pytest

import minerva as mv
from minerva.api.core import lean
from tests.support.profiling import python_calls

accelerated = pytest.mark.skipif(not lean.ACTIVE, reason="the C accelerator is not built")


def _same(got, want):
    assert repr(got) == repr(want)
    assert numpy.asarray(got).tobytes() == numpy.asarray(want).tobytes()


def _programs(ns, a, b):
    """The same calls, under NumPy (``ns`` numpy) or minerva, of arrays ``a`` and ``b``."""
    return [ns.linalg.norm(a), ns.linalg.norm(a, axis=0), a.argmax(), ns.argmin(a, axis=1),
            ns.concatenate([a, b]), ns.stack([a, b], axis=1), a.astype(numpy.float32),
            ns.clip(a, -0.5, 0.5), ns.where(a > 0, a, b), ns.diff(a, axis=0),
            ns.roll(a, 2, axis=1), ns.outer(a[0], b[1]), a.copy(), ns.cumsum(a, axis=1),
            ns.sort(a, axis=0), ns.round(a, 2), a.T.copy(), ns.concatenate([a[1:], b[:1]])]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_ops_equal_numpy_bitwise(seed, dtype):
    rng = numpy.random.default_rng(seed)
    shape = (int(rng.integers(2, 6)), int(rng.integers(3, 7)))
    a, b = ((rng.standard_normal(shape) * 3).astype(dtype) for _ in range(2))
    for got, want in zip(_programs(mv, mv.array(a), mv.array(b)), _programs(numpy, a, b)):
        _same(got, want)


@accelerated
def test_such_ops_leave_out_the_python_run_lean():
    x, y = mv.ones((3, 4)), mv.zeros((3, 4))
    _programs(mv, x, y)
    calls = python_calls(lambda: [_programs(mv, x, y) for _ in range(20)])
    assert "run_lean" not in calls, calls.get("run_lean")


def test_more_inputs_than_c_takes_keep_the_python_path():
    parts = [numpy.full(3, float(i)) for i in range(7)]
    _same(mv.concatenate([mv.array(p) for p in parts]), numpy.concatenate(parts))
    _same(mv.stack([mv.array(p) for p in parts]), numpy.stack(parts))


def test_a_floating_point_warning_names_the_users_line():
    a = numpy.array([numpy.inf, numpy.inf, 1.0])
    x = mv.array(a)
    with pytest.warns(RuntimeWarning, match="invalid value") as record:
        got = mv.diff(x)
    assert record[0].filename == __file__
    with numpy.errstate(invalid="ignore"):
        _same(got, numpy.diff(a))


def test_a_failing_kernel_raises_at_the_users_line_and_the_runtime_goes_on():
    singular = mv.zeros((3, 3))
    with pytest.raises(mv.OpError) as info:
        mv.linalg.inv(singular).wait(timeout=30)
    assert "test_lean_any_op.py" in str(info.value)
    _same(mv.linalg.norm(mv.ones(4)), numpy.linalg.norm(numpy.ones(4)))


@pytest.mark.parametrize("values", [[1.5, 2.0], [1, 2, 3], [1, 2.5], (1j, 2.0),
                                    [numpy.float32(1.5), numpy.float32(2)],
                                    [numpy.float64(0.1), 3], [-0.0, numpy.nan, numpy.inf],
                                    [2 ** 62, 1], [[1.0, 2.0], [3.0, 4.0]],
                                    ([1, 2], (3, 4)), [[numpy.float64(0.5), 2.0]],
                                    [[[1.0], [2.0]], [[3.0], [4.0]]]])
def test_array_of_plain_numbers_equals_numpys(values):
    got, want = mv.array(values), numpy.array(values)
    assert got.dtype == want.dtype and got.shape == want.shape and not got.ndim == 0
    assert got.to_numpy().tobytes() == want.tobytes()
    assert type(got) is mv.NArray and got.flags.owndata


@pytest.mark.parametrize("values", [[True, False], [], [[1.0], [2.0, 3.0]], [1.0, [2.0]],
                                    [[[[1.0]]]], [[1.0, True]], [[]], list(range(65)),
                                    ["a", "b"], [1.0, None], [2 ** 70], [2 ** 64 - 1, 1]])
def test_array_of_other_items_keeps_the_python_paths_answer(values):
    try:
        want = numpy.array(values)
    except (OverflowError, ValueError, TypeError) as err:
        with pytest.raises(type(err)):
            mv.array(values)
        return
    if want.dtype.kind == "O":
        with pytest.raises(mv.DTypeError):
            mv.array(values)
        return
    got = mv.array(values)
    assert got.dtype == want.dtype and got.to_numpy().tobytes() == want.tobytes()


@accelerated
def test_array_of_plain_numbers_leaves_out_the_python_array():
    mv.array([1.0, 2.0])
    mv.array([[1.0, 2.0], [3.0, 4.0]])
    for make in (lambda i: mv.array([1.0, float(i)]),
                 lambda i: mv.array([[1.0, i], [2.0, 3.0]])):
        calls = python_calls(lambda: [make(i) for i in range(50)])
        assert "array" not in calls and "upload" not in calls, calls


def _writes(ns, a, b, c):
    """Ops written into ``out=``, under NumPy or minerva: whole targets, views, aliases."""
    ns.clip(a, -0.5, 0.5, out=a)
    ns.add(a, b, out=c)
    ns.multiply(b[1:], 2.0, out=c[:-1])
    ns.maximum(a, b, out=b)
    ns.subtract(a[:, ::-1], a, out=a)   # reads what it overwrites: unaliased first
    ns.negative(c.T, out=c.T)
    ns.sqrt(ns.abs(c[0]), out=c[1])
    return a, b, c


@pytest.mark.parametrize("seed", range(6))
def test_writes_into_out_equal_numpys(seed):
    rng = numpy.random.default_rng(seed)
    want = [rng.standard_normal((4, 4)) for _ in range(3)]
    got = [mv.array(w) for w in want]
    for g, w in zip(_writes(mv, *got), _writes(numpy, *want)):
        numpy.testing.assert_array_equal(g.to_numpy(), w)


@accelerated
def test_a_write_into_out_leaves_out_the_python_run_lean():
    x, y = mv.ones(6), mv.zeros(6)

    def step():
        mv.clip(x, -5, 5, out=x)
        mv.add(x, y, out=y)
    step()
    calls = python_calls(lambda: [step() for _ in range(20)])
    assert "run_lean" not in calls, calls.get("run_lean")
    numpy.testing.assert_array_equal(y.to_numpy(), numpy.full(6, 21.0))
