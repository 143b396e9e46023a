"""The C accelerator of the lean path (minerva._lean, minerva/api/core/lean.py): operators
taken in C give NumPy's bits, errors and warnings at the user's line, the Python path's
memory figures; and the Python path alone (MINERVA_ACCEL=0) passes the same suites."""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
import threading
import warnings

import numpy
import pytest

import minerva as mv
from minerva.api.core import lean
from minerva.common.errors import IntegerOverflowError, ShapeError
from minerva.current import get_system
from minerva.narray import NArray
from minerva.ops.registry import ArraySpec
from tests.support.profiling import python_calls

accelerated = pytest.mark.skipif(not lean.ACTIVE, reason="the C accelerator is not built")
OPERATORS = ("__add__", "__sub__", "__mul__", "__truediv__", "__pow__", "__floordiv__",
             "__mod__", "__and__", "__or__", "__xor__")
HERE = os.path.dirname(os.path.abspath(__file__))


@accelerated
def test_a_tiny_chain_makes_no_python_call_per_op():
    x = mv.zeros(4)

    def chain(n):
        y = x
        for _ in range(n):
            y = 1.0 - (y * 0.5) * (y * 0.5)   # stays in [0, 1]: no warnings
        return y
    chain(10)
    calls = python_calls(lambda: chain(1000))
    assert "build" not in calls and "run_lean" not in calls and "method" not in calls
    assert sum(calls.values()) < 4 * 1000 * 8   # the store's own, for two temporaries a step
    expected = numpy.zeros(4)
    for _ in range(1000):
        expected = 1.0 - (expected * 0.5) * (expected * 0.5)
    assert chain(1000).to_numpy().tobytes() == expected.tobytes()


@accelerated
def test_an_op_waits_for_the_engine_lock_another_thread_holds():
    x = mv.zeros(4) + 1.0
    engine = get_system().engine
    held, done = threading.Event(), threading.Event()

    def hold():
        with engine._lock:
            held.set()
            assert not done.wait(0.2)   # the op below cannot finish while the lock is held
    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    result = []
    worker = threading.Thread(target=lambda: (result.append(x * 3.0), done.set()))
    worker.start()
    holder.join(10)
    worker.join(10)
    assert done.is_set() and result[0].to_numpy().tolist() == [3.0] * 4
    assert not engine._lock.locked()   # released as it was taken, whichever way
    assert isinstance(lean._lean.fast_locks(), bool)   # the layout configure probed


@accelerated
@pytest.mark.parametrize("call", [
    lambda np, v: np.argmax(v), lambda np, v: np.linalg.norm(v, axis=(0,)),
    lambda np, v: np.sort(v[::-1]), lambda np, v: np.cumsum(v, dtype=np.float32),
    lambda np, v: np.concatenate([v, v]), lambda np, v: v.astype(np.int16),
    lambda np, v: np.clip(v, 0.2, 0.6)])
def test_a_built_op_takes_its_rule_from_the_memo_in_c(call):
    values = numpy.linspace(0.0, 1.0, 9)
    v = mv.array(values)
    call(mv, v)   # the rule's answer remembered
    calls = python_calls(lambda: [call(mv, v) for _ in range(20)])
    assert "memo_key" not in calls and "rule" not in calls and "_fresh" not in calls
    got, want = call(mv, v), call(numpy, values)
    assert type(got) is NArray and got.dtype == want.dtype
    assert got.to_numpy().tobytes() == numpy.asarray(want).tobytes()


@accelerated
def test_zeros_ones_and_empty_are_made_in_c():
    for name in ("zeros", "ones", "empty"):
        assert type(getattr(mv, name)).__name__ == "Filled"
    mv.zeros((3, 2))   # the system started
    calls = python_calls(lambda: [mv.zeros((3, 2)) for _ in range(20)])
    assert "_filled" not in calls and "check_shape" not in calls


@accelerated
def test_a_c_function_shows_its_twins_name_docstring_and_signature():
    for function in (mv.zeros, mv.array, NArray.__getitem__, NArray.__float__):
        twin = function.python
        assert function.__doc__ == twin.__doc__ and function.__name__ == twin.__name__
    assert "dtype=None" in str(inspect.signature(mv.zeros))


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("shape", [3, (), (0,), (2, 3), (1, 4, 2)])
@pytest.mark.parametrize("dtype", [None, numpy.float32, "int16", numpy.dtype("complex64"),
                                   bool, int, "U3"])
def test_zeros_ones_and_empty_are_numpys(name, shape, dtype):
    got = getattr(mv, name)(shape) if dtype is None else getattr(mv, name)(shape, dtype)
    want = getattr(numpy, name)(shape) if dtype is None else getattr(numpy, name)(shape, dtype)
    assert type(got) is NArray and got.shape == want.shape and got.dtype == want.dtype
    if name != "empty":
        assert got.to_numpy().tobytes() == want.tobytes()
    keyword = getattr(mv, name)(shape, dtype=dtype)
    assert keyword.shape == want.shape and keyword.dtype == want.dtype


@pytest.mark.parametrize("shape", [-1, (2, -3), numpy.int64(3), (numpy.int32(2), 3)])
def test_zeros_of_other_shapes_are_numpys(shape):
    try:
        numpy.zeros(shape)
    except Exception as exc:
        with pytest.raises(type(exc)):
            mv.zeros(shape)
    else:
        assert mv.zeros(shape).shape == numpy.zeros(shape).shape


@pytest.mark.parametrize("seed", range(8))
def test_random_operator_chains_equal_numpy_bitwise(seed):
    rng = numpy.random.default_rng(seed)
    dtype = rng.choice(["float64", "float32", "int64", "int32", "complex128"])
    kind = numpy.dtype(dtype).kind
    a = (rng.standard_normal(7) * 10).astype(dtype) if kind != "i" else \
        rng.integers(1, 50, 7).astype(dtype)
    b = a[::-1].copy() + (1 if kind == "i" else 0.5)
    names = [n for n in OPERATORS if kind in "fc" or n != "__truediv__"]
    names = [n for n in names if kind == "i" or n not in ("__and__", "__or__", "__xor__")]
    names = [n for n in names if kind != "c" or n not in ("__floordiv__", "__mod__")]
    x, y, ex, ey = mv.array(a), mv.array(b), a, b
    with numpy.errstate(all="ignore" if seed % 2 else "warn"), warnings.catch_warnings():
        warnings.simplefilter("ignore")   # both report the same warnings (test_errstate)
        x, ex = _chain(rng, names, kind, x, y, ex, ey)
    got = x.to_numpy()
    assert got.tobytes() == ex.tobytes()


def _chain(rng, names, kind, x, y, ex, ey):
    for _ in range(30):
        name = names[rng.integers(len(names))]
        other = rng.integers(1, 4) if rng.random() < 0.5 else None
        if name == "__pow__" and kind != "i":
            other = 2.0 if other is not None else None
        if other is None:
            x, ex = getattr(x, name)(y), getattr(ex, name)(ey)
        else:
            scalar = float(other) if kind in "fc" and rng.random() < 0.5 else int(other)
            if rng.random() < 0.4:   # reflected: the scalar on the left (``2.0 - x``)
                name = name.replace("__", "__r", 1)
            x, ex = getattr(x, name)(scalar), getattr(ex, name)(scalar)
        if kind == "i":
            x, ex = x % 1000, ex % 1000
        assert x.dtype == ex.dtype
    return x, ex


def test_a_bad_shape_raises_at_the_users_line():
    with pytest.raises(ShapeError) as info:
        mv.ones(3) + mv.ones(4)
    assert any(str(entry.path) == __file__ for entry in info.traceback)


def test_an_integer_out_of_bounds_raises_as_numpy_does():
    small = mv.ones(3, dtype="int8")
    numpy.testing.assert_array_equal((small + 100).to_numpy(), numpy.ones(3, "int8") + 100)
    with pytest.raises(IntegerOverflowError):
        small + 300
    with pytest.raises(OverflowError):
        numpy.ones(3, "int8") + 300


def test_a_floating_point_warning_names_the_users_line():
    x = mv.ones(4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = x / 0.0
    with numpy.errstate(divide="ignore"):
        expected = numpy.ones(4) / numpy.zeros(4)
    numpy.testing.assert_array_equal(y.to_numpy(), expected)
    assert [w.category for w in caught] == [RuntimeWarning]
    assert caught[0].filename == __file__


def test_a_chain_hands_each_dead_block_to_the_next_output():
    device = mv.create_cpu_device()
    with mv.device(device):
        y = mv.zeros(16)
        y.wait()
        store = get_system().devices.table[device].store
        before = store.n_recycled
        for _ in range(50):
            y = y * 1.5 + 1.0
        y.wait()
        assert store.n_recycled - before >= 45   # a dead block handed over each step
    expected = numpy.zeros(16)
    for _ in range(50):
        expected = expected * 1.5 + 1.0
    assert y.to_numpy().tobytes() == expected.tobytes()


def test_operators_with_views_and_traces_and_autograd_still_agree():
    base = numpy.arange(12.0).reshape(3, 4)
    x = mv.array(base)
    assert ((x[1:] + 1.0) * x[:2]).to_numpy().tobytes() == ((base[1:] + 1.0) * base[:2]).tobytes()
    w = mv.array(numpy.ones(3))
    w.attach_grad()
    with mv.autograd.record():
        loss = (w * 2.0 + w).sum()
    loss.backward()
    numpy.testing.assert_array_equal(w.grad.to_numpy(), numpy.full(3, 3.0))


def test_the_python_path_alone_passes_the_operator_suites():
    """The pure-Python fallback, as a machine without a compiler runs it."""
    env = dict(os.environ, MINERVA_ACCEL="0")
    files = [os.path.join(HERE, name) for name in
             ("test_lean_accel.py", "test_lean_element.py", "test_lean_products.py",
              "test_lean_reductions.py", "test_lean_setitem.py", "test_lean_views.py",
              "test_lean_any_op.py", "test_elision.py", "test_errstate.py",
              "test_mask_indexing.py", "test_pick_indexing.py",
              "test_programs.py")
             if os.path.exists(os.path.join(HERE, name))]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-k", "not python_path_alone", *files],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    check = subprocess.run([sys.executable, "-c",
                            "from minerva.api.core import lean; print(lean.ACTIVE)"],
                           env=env, capture_output=True, text=True, timeout=60)
    assert check.stdout.strip() == "False"


UNARY_NAMES = ("negative", "positive", "absolute", "fabs", "exp", "exp2", "expm1", "log",
               "log2", "log10", "log1p", "sqrt", "cbrt", "square", "reciprocal", "sign",
               "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
               "arcsinh", "arccosh", "arctanh", "floor", "ceil", "trunc", "rint", "invert",
               "logical_not", "isnan", "isinf", "isfinite", "signbit", "conjugate",
               "deg2rad", "rad2deg")


@pytest.mark.parametrize("name", UNARY_NAMES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int16", "bool",
                                   "complex128"])
def test_a_one_operand_function_gives_numpys_bits_type_and_error(name, dtype):
    rng = numpy.random.default_rng(len(name) * 7 + len(dtype))
    host = (rng.standard_normal(9) * 3).astype(dtype)
    x = mv.array(host)
    with numpy.errstate(all="ignore"):
        try:
            expected = getattr(numpy, name)(host)
        except TypeError as err:   # NumPy has no loop for this dtype
            with pytest.raises(TypeError):
                getattr(mv, name)(x)
            return
        got = getattr(mv, name)(x)
        again = getattr(mv, name)(x)   # the second call: the shape rule from the cache
    for result in (got, again):
        assert result.dtype == expected.dtype
        assert result.to_numpy().tobytes() == expected.tobytes()


@pytest.mark.parametrize("operator", ["__neg__", "__pos__", "__abs__", "__invert__"])
def test_a_unary_operator_gives_numpys_bits(operator):
    for host in (numpy.arange(-4, 5, dtype="int32"), numpy.linspace(-2, 2, 7)):
        if operator == "__invert__" and host.dtype.kind == "f":
            continue
        x = mv.array(host)
        got, expected = getattr(x, operator)(), getattr(host, operator)()
        assert got.to_numpy().tobytes() == expected.tobytes()
        view = getattr(x[1:], operator)()   # a view: the Python path
        assert view.to_numpy().tobytes() == getattr(host[1:], operator)().tobytes()


@accelerated
def test_a_tiny_chain_of_functions_makes_no_python_call_per_op():
    x = mv.array(numpy.linspace(0.0, 1.0, 6))

    def chain(n):
        y = x
        for _ in range(n):
            y = mv.tanh(-mv.sqrt(abs(y)))
        return y
    expected = numpy.linspace(0.0, 1.0, 6)
    for _ in range(300):
        expected = numpy.tanh(-numpy.sqrt(abs(expected)))
    chain(3)
    calls = python_calls(lambda: chain(300))
    assert sum(calls.values()) < 300 * 4 * 2   # the store's own, for fresh temporaries
    assert "build" not in calls and "run_lean" not in calls
    assert chain(300).to_numpy().tobytes() == expected.tobytes()


def test_a_one_operand_function_with_keywords_or_a_warning_keeps_numpys_behaviour():
    host = numpy.array([4.0, -1.0, 9.0])
    x = mv.array(host)
    out = mv.zeros(3)
    assert mv.sqrt(x[::2], out=out[:2]) is not None
    numpy.testing.assert_array_equal(out.to_numpy()[:2], [2.0, 3.0])
    assert mv.exp(x, dtype="float32").dtype == numpy.float32
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = mv.sqrt(x)
    assert [w.category for w in caught] == [RuntimeWarning]
    assert caught[0].filename == __file__
    with numpy.errstate(invalid="ignore"):
        assert got.to_numpy().tobytes() == numpy.sqrt(host).tobytes()


IN_PLACE = ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__",
            "__iand__", "__ior__", "__ixor__")


@pytest.mark.parametrize("seed", range(6))
def test_random_in_place_chains_equal_numpy_bitwise(seed):
    rng = numpy.random.default_rng(100 + seed)
    dtype = ["float64", "float32", "int64", "int32", "complex128", "float64"][seed]
    kind = numpy.dtype(dtype).kind
    host = (rng.standard_normal(8) * 5).astype(dtype) if kind != "i" else \
        rng.integers(1, 40, 8).astype(dtype)
    other = host[::-1].copy() + (1 if kind == "i" else 0.25)
    names = [n for n in IN_PLACE if kind in "fc" or n != "__itruediv__"]
    names = [n for n in names if kind == "i" or n not in ("__iand__", "__ior__", "__ixor__")]
    names = [n for n in names if kind != "c" or n not in ("__ifloordiv__", "__imod__")]
    x, y, alias = mv.array(host), mv.array(other), None
    view_of_x = x[2:5]   # sees every write into x, as NumPy's view does
    expected, expected_other = host.copy(), other
    with numpy.errstate(all="ignore"):
        for step in range(40):
            name = names[rng.integers(len(names))]
            operand = y if rng.random() < 0.5 else (
                float(rng.integers(1, 4)) if kind in "fc" else int(rng.integers(1, 4)))
            numpy_operand = expected_other if operand is y else operand
            if step % 7 == 3:   # x into itself
                operand, numpy_operand = x, expected
            result = getattr(x, name)(operand)
            getattr(expected, name)(numpy_operand)
            assert result is x
            if kind == "i":
                x %= 1000
                expected %= 1000
    assert x.to_numpy().tobytes() == expected.tobytes()
    assert view_of_x.to_numpy().tobytes() == expected[2:5].tobytes()


def test_an_in_place_operator_keeps_numpys_rules_where_c_steps_aside():
    ints = mv.arange(4, dtype="int8")
    with pytest.raises(IntegerOverflowError):
        ints += 300
    floats = mv.arange(4, dtype="float32")
    floats += numpy.float64(0.5)   # the result type differs: cast back as NumPy does
    host = numpy.arange(4, dtype="float32")
    host += numpy.float64(0.5)
    assert floats.to_numpy().tobytes() == host.tobytes()
    frozen = mv.ones(3)
    frozen.flags.writeable = False
    with pytest.raises(ValueError):
        frozen += 1.0
    scalar = mv.ones(3).sum()   # a NumPy scalar: += rebinds, the old one stays
    kept = scalar
    scalar += 1.0
    assert float(kept) == 3.0 and float(scalar) == 4.0


def test_an_in_place_write_waits_for_pending_readers():
    big = mv.ones(400_000)   # past the inline limit
    total = (big * 2.0).sum()   # pending readers of big's value
    small = mv.ones(4)
    small += 1.0
    big += 1.0   # must not overwrite what the pending ops read
    assert float(total) == 800_000.0
    assert float(big.sum()) == 800_000.0 and small.to_numpy().tolist() == [2.0] * 4


def test_a_failing_in_place_kernel_fails_the_new_version_at_the_users_line():
    x = mv.ones(3)
    with numpy.errstate(divide="raise"):
        x /= 0.0
    with pytest.raises(mv.OpError, match="test_lean_accel.py") as info:
        x.to_numpy()
    assert "FloatingPointError" in str(info.value)
    y = mv.ones(3)
    y += 1.0   # the runtime goes on
    assert y.to_numpy().tolist() == [2.0] * 3


COMPARISONS = ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__")


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "uint8", "bool",
                                   "complex128"])
def test_comparisons_give_numpys_answers(dtype):
    rng = numpy.random.default_rng(len(dtype))
    host = (rng.standard_normal(10) * 4).astype(dtype)
    if host.dtype.kind == "f":
        host[3] = numpy.nan
    other = numpy.roll(host, 3)
    x, y = mv.array(host), mv.array(other)
    narrow = other.real.astype("float32")
    operands = [(y, other), (2, 2), (-1, -1), (300, 300), (2.5, 2.5), (float("nan"),) * 2,
                (mv.array(narrow), narrow)]
    for name in COMPARISONS:
        if host.dtype.kind == "c" and name not in ("__eq__", "__ne__"):
            continue
        for ours, numpys in operands:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # NumPy's own, on both sides
                expected = getattr(host, name)(numpys)
                got = getattr(x, name)(ours)
            assert got.dtype == expected.dtype
            assert got.to_numpy().tobytes() == expected.tobytes(), (name, ours)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32",
                                   "int64", "uint64", "bool"])
def test_comparisons_of_integer_arrays_with_ints_at_their_bounds(dtype):
    """A Python int in the dtype's range compares in C; one past it takes NumPy's answer
    on the Python path; both give NumPy's bits."""
    host = numpy.array([0, 1, 5, 100], dtype)
    if host.dtype.kind != "b":
        info = numpy.iinfo(dtype)
        host = numpy.array([info.min, 0, 1, info.max], dtype)
        edges = [int(info.min), int(info.max), int(info.min) - 1, int(info.max) + 1,
                 2 ** 64, -2 ** 63 - 1]
    else:
        edges = [0, 1, 2, -1]
    x = mv.array(host)
    for name in COMPARISONS:
        for value in edges + [0, 1, 7]:
            expected = getattr(host, name)(value)
            got = getattr(x, name)(value)
            assert got.dtype == expected.dtype
            assert got.to_numpy().tobytes() == expected.tobytes(), (name, value)


def test_comparisons_of_other_operands_take_numpys_rules():
    words = mv.array(numpy.array(["a", "b", "c"]))
    numpy.testing.assert_array_equal((words == "b").to_numpy(), [False, True, False])
    x = mv.arange(3.0)
    assert (x == None).to_numpy().tolist() == [False] * 3   # noqa: E711 (NumPy's answer)
    numpy.testing.assert_array_equal((x[1:] < x[:2]).to_numpy(), [False, False])
    assert (2 < x).to_numpy().tolist() == [False, False, False]


@pytest.mark.parametrize("scalar_type", lean.FLOAT_SCALARS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "complex64"])
def test_numpy_float_scalars_as_operands_give_numpys_bits_and_dtype(scalar_type, dtype):
    host = (numpy.arange(1, 7) * 1.5).astype(dtype)
    scalar = scalar_type(2.5 if scalar_type(0).dtype.kind == "f" else 2.5 + 1j)
    x = mv.array(host)
    for name in ("__add__", "__mul__", "__rsub__", "__truediv__", "__lt__", "__eq__"):
        if name == "__lt__" and (host.dtype.kind == "c" or scalar.dtype.kind == "c"):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = getattr(host, name)(scalar)
            got = getattr(x, name)(scalar)
        assert got.dtype == expected.dtype
        _assert_same(got.to_numpy(), expected)
    target, expected = mv.array(host), host.copy()
    if numpy.result_type(host, scalar) == host.dtype:   # else NumPy refuses the cast
        target += scalar
        expected += scalar
        _assert_same(target.to_numpy(), expected)


def _assert_same(got, expected):
    """Bitwise, but for long doubles, whose padding bytes hold anything: by value."""
    if expected.dtype.itemsize > 8 * (2 if expected.dtype.kind == "c" else 1):
        numpy.testing.assert_array_equal(got, expected)
    else:
        assert got.tobytes() == expected.tobytes()


def _views(rng, host):
    """Pairs (a view of ``host`` as minerva indexes it, the same key) of every kind."""
    keys = [(slice(1, None),), (slice(None, None, 2),), (slice(None, None, -1),),
            (2,), (slice(1, 4), slice(None, None, -2)), (Ellipsis, 1), (slice(None), None, 0)]
    return [keys[i] for i in rng.permutation(len(keys))]


@pytest.mark.parametrize("seed", range(6))
def test_operators_over_views_equal_numpy_bitwise_and_layout(seed):
    rng = numpy.random.default_rng(200 + seed)
    dtype = ["float64", "float32", "int64", "complex128", "float64", "int32"][seed]
    host = (rng.standard_normal((5, 6)) * 8).astype(dtype)
    other = (rng.standard_normal((5, 6)) * 8 + 1).astype(dtype)
    x, y = mv.array(host), mv.array(other)
    for key in _views(rng, host):
        a, ea = x[key], host[key]
        b, eb = y[key], other[key]
        pairs = [(a + b, ea + eb), (a * 2.0, ea * 2.0), (-a, -ea), (a < b, ea < eb),
                 (abs(a - b), abs(ea - eb)), (mv.exp(a * 0.01), numpy.exp(ea * 0.01)),
                 (x.T + y.T, host.T + other.T), (a + y[1], ea + other[1])
                 if ea.shape[-1:] == other[1].shape else (a, ea)]
        for got, expected in pairs:
            assert got.dtype == expected.dtype
            assert got.to_numpy().tobytes() == expected.tobytes()
            assert got.strides == expected.strides   # NumPy's order='K' layout
    target = mv.array(host)
    target += y[::-1]   # another array's view
    expected = host + other[::-1]
    assert target.to_numpy().tobytes() == expected.tobytes()
    target += target[::-1]   # its own view, reversed: copied first, as NumPy does
    expected += expected[::-1].copy()
    assert target.to_numpy().tobytes() == expected.tobytes()


@accelerated
def test_an_operator_over_views_makes_no_python_call_per_op():
    rows = mv.array(numpy.arange(40.0).reshape(8, 5))

    def chain(n):
        total = rows[0] * 0.0
        for i in range(n):
            total = total + rows[i % 8] * 0.5
        return total
    chain(10)
    calls = python_calls(lambda: chain(400))
    assert "build" not in calls and "run_lean" not in calls
    expected = numpy.arange(40.0).reshape(8, 5)[0] * 0.0
    for i in range(400):
        expected = expected + numpy.arange(40.0).reshape(8, 5)[i % 8] * 0.5
    assert chain(400).to_numpy().tobytes() == expected.tobytes()


def test_a_spec_counting_numpy_ints_runs_and_frees_its_blocks():
    """A spec whose shape holds NumPy ints counts its bytes in a NumPy int (SciPy's
    ``x.shape[-1]`` arithmetic once made such specs): the C path hands its ops to Python,
    frees their blocks, and leaves no error pending (one pending error once left the
    engine's lock taken, and the next op waited for ever)."""
    base = mv.ones(4)
    odd = NArray(base._storage, None, ArraySpec((numpy.int64(4),), numpy.dtype("float64")))
    assert type(odd._spec.nbytes) is not int   # the case this test is about
    y = mv.ones(4)
    x = odd + y
    expected = numpy.ones(4) + 1.0
    for _ in range(3):
        x += 2.0
        z = (x > odd) | mv.isnan(-x)
        x = x * 0.5 + odd[3]
        expected += 2.0
        expected_z = (expected > 1.0) | numpy.isnan(-expected)
        expected = expected * 0.5 + 1.0
    assert z.to_numpy().tobytes() == expected_z.tobytes()
    assert x.to_numpy().tobytes() == expected.tobytes()
    before = mv.memory_stats()["in_use_bytes"]
    del x, y, z
    mv.wait_for_all()
    assert mv.memory_stats()["in_use_bytes"] < before
    w = mv.ones(3)
    w += 1.0   # the runtime goes on
    assert w.to_numpy().tolist() == [2.0] * 3


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "power",
                                  "maximum", "minimum", "floor_divide", "remainder"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8"])
def test_a_function_with_a_scalar_first_is_the_reflected_op(name, dtype):
    host = numpy.arange(1, 7).astype(dtype)
    x = mv.array(host)
    for scalar in (3, 2.5, numpy.float64(1.5), numpy.float32(2.0), -2):
        if name == "power" and host.dtype.kind == "i" and isinstance(scalar, float):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                expected = getattr(numpy, name)(scalar, host)
            except (TypeError, ValueError, OverflowError) as err:
                with pytest.raises(type(err)):
                    getattr(mv, name)(scalar, x)
                continue
            got = getattr(mv, name)(scalar, x)
        assert got.dtype == expected.dtype, (name, scalar)
        assert got.to_numpy().tobytes() == expected.tobytes(), (name, scalar)


@pytest.mark.parametrize("scalar", [numpy.float64(1.5), numpy.float32(2.0), numpy.int64(3),
                                    numpy.int32(-2), numpy.bool_(True), numpy.complex64(1j),
                                    numpy.float16(0.5)])
def test_a_numpy_scalar_on_the_left_gives_numpys_answer(scalar):
    """``np.float64(h) * x``: NumPy hands the call to ``NArray.__array_ufunc__``, which
    takes the common two-operand call straight to minerva's function."""
    host = numpy.arange(1.0, 6.0)
    x = mv.array(host)
    for name in ("__mul__", "__add__", "__sub__", "__truediv__", "__pow__", "__lt__",
                 "__eq__", "__floordiv__"):
        if scalar.dtype.kind == "c" and name in ("__lt__", "__floordiv__"):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = getattr(scalar, name)(host)
            got = getattr(scalar, name)(x)
        assert isinstance(got, NArray), name
        assert got.dtype == expected.dtype, name
        assert got.to_numpy().tobytes() == expected.tobytes(), name


@accelerated
def test_a_numpy_scalar_on_the_left_makes_no_python_call():
    """``np.float64(h) * x`` and ``np.float32(h) - x``: ``__array_ufunc__``'s common call
    in C (``lean.array_ufunc``), minerva's C operator behind it."""
    x, h, k = mv.arange(1.0, 5.0), numpy.float64(0.5), numpy.float32(2.0)
    for _ in range(5):
        h * x
    calls = python_calls(lambda: [(h * x, k - x, h / x) for _ in range(100)])
    assert "array_ufunc" not in calls and "build" not in calls
    assert (k - x).to_numpy().tobytes() == (k - numpy.arange(1.0, 5.0)).tobytes()


@accelerated
def test_arrays_made_anew_each_step_find_the_shape_rules_their_twins_met():
    """The C rule cache is keyed by a spec's identity: an array made anew (``np.array`` of
    a step's numbers) is keyed by the canonical spec of its shape and dtype, and so are
    the results made from it, so a loop pays the Python shape rule once."""
    y = mv.array([1.0, 2.0])

    def step():
        k = mv.array([float(v) for v in (3.0, 4.0)])
        return y + 0.5 * (k + 2.0 * k)
    step()
    calls = python_calls(step)
    assert "infer" not in calls and "build" not in calls, calls
    numpy.testing.assert_array_equal(step().to_numpy(), [5.5, 8.0])


def _written_lines(a, b):
    """Writes on lines that take turns (each op's line read from a cache of offsets):
    the line each new version names, and the lines the writes are on."""
    lines, first = [], inspect.currentframe().f_lineno
    for _ in range(3):
        a += 1.0
        lines.append(a._storage.current.created_at[1])
        b *= 2.0
        lines.append(b._storage.current.created_at[1])
        a -= b
        lines.append(a._storage.current.created_at[1])
    return lines, [first + 2, first + 4, first + 6] * 3


def test_each_version_names_the_line_of_its_write_in_a_loop():
    got, want = _written_lines(mv.ones(3), mv.ones(3))
    assert got == want
