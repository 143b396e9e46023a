"""NumPy's scalars: where NumPy gives a scalar (a full reduction, one element picked by
integers, a ufunc of scalars), minerva's 0-d result acts as that scalar — against NumPy's
scalar for the same computation: repr, str, hash, format, not iterable, no len,
``__index__``, ``isinstance`` of the numbers ABCs, dict keys and sets, ``range()`` and list
indices, NEP 50 arithmetic, immutability — while an explicit 0-d array (``mv.array(3.0)``,
``x.reshape(())``) acts as NumPy's 0-d array. Scalars stay lazy until a use needs their
value; matplotlib takes them (``axhline(x.mean())``, ``bar(range(3), x)``)."""
from __future__ import annotations

import math
import numbers
import operator
import threading

import matplotlib
import numpy as np
import pytest

import minerva as mv
from minerva.builder import build
from tests.support.gates import gated_op

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DTYPES = [np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_, np.complex128]


def host(dtype) -> np.ndarray:
    """A 3x4 array of ``dtype`` with distinct, non-zero-sum values."""
    values = np.array([[3, 1, 4, 1], [5, 9, 2, 6], [5, 3, 5, 8]])
    if dtype is np.bool_:
        return values % 2 == 1
    if dtype is np.complex128:
        return values + 1j * values[::-1]
    return values.astype(dtype)


SOURCES = {
    "x.sum()": lambda xp, x: x.sum(),
    "np.mean(x)": lambda xp, x: xp.mean(x),
    "x.max()": lambda xp, x: x.max(),
    "np.min(x)": lambda xp, x: xp.min(x),
    "x.prod()": lambda xp, x: x.prod(),
    "x.any()": lambda xp, x: x.any(),
    "np.all(x)": lambda xp, x: xp.all(x),
    "x.argmax()": lambda xp, x: x.argmax(),
    "sum over every axis": lambda xp, x: xp.sum(x, axis=(0, 1)),
    "x[1, 2]": lambda xp, x: x[1, 2],
    "x[-1, -2]": lambda xp, x: x[-1, -2],
    "x[1][2]": lambda xp, x: x[1][2],
    "x.ravel()[x.argmin()]": lambda xp, x: x.ravel()[x.argmin()],
    "x[2].sum(axis=0)": lambda xp, x: x[2].sum(axis=0),
    "x[0, 1] + x[2, 3]": lambda xp, x: x[0, 1] + x[2, 3],
    "np.negative(x[0, 0])": lambda xp, x: xp.negative(x[0, 0]),
    "np.sqrt(x.sum()) * 2": lambda xp, x: xp.sqrt(x.sum()) * 2,
}
"""Computations NumPy gives a scalar for, written once for ``numpy`` and ``minerva``."""

COMPLEX_UNORDERED = {"x.max()", "np.min(x)", "x.argmax()", "x.ravel()[x.argmin()]"}
"""Sources minerva does not compute for complex values (no order of complex numbers)."""


def _error_of(function, value):
    """``(class, message)`` of what ``function(value)`` raises, or ``(None, result)``."""
    try:
        return None, function(value)
    except Exception as error:  # noqa: BLE001 (comparing errors with NumPy's)
        return type(error), str(error)


def _cases():
    for source in SOURCES:
        for dtype in DTYPES:
            if not (dtype is np.complex128 and source in COMPLEX_UNORDERED or
                    dtype is np.bool_ and "negative" in source):  # NumPy refuses it
                yield source, dtype


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("source, dtype", list(_cases()))
def test_a_scalar_result_acts_as_numpys_scalar(source, dtype):
    values = host(dtype)
    want = SOURCES[source](np, values)
    got = SOURCES[source](mv, mv.array(values))
    assert isinstance(want, np.generic)  # NumPy gives a scalar here
    assert type(got) is mv.NArray or type(got) is type(want)  # lazy, or NumPy's, read now
    assert got.shape == () and got.ndim == 0 and got.size == 1 and got.dtype == want.dtype
    assert repr(got) == repr(want) and str(got) == str(want)
    assert hash(got) == hash(want) == hash(want.item())
    assert not np.iterable(got)
    for use in (iter, len, operator.index):
        assert _error_of(use, got) == _error_of(use, want)
    for number in (numbers.Number, numbers.Complex, numbers.Real, numbers.Integral):
        assert isinstance(got, number) == isinstance(want, number)
    lazy_bool = type(got) is mv.NArray and want.dtype.kind == "b"  # no numbers.Number
    assert np.isscalar(got) == (not lazy_bool)
    for convert in (float, int, complex, bool):
        assert _error_of(convert, got) == _error_of(convert, want)
    assert got.item() == want.item() and type(got.item()) is type(want.item())


FORMATS = {"f": ["", ".2f", "10.3e", "+.1%", "g"], "i": ["", "d", "05d", "x", ".2f"],
           "u": ["", "d", ">6"], "b": ["", ">6"], "c": ["", ".2f"]}


@pytest.mark.parametrize("dtype", DTYPES)
def test_format_and_f_strings_of_a_scalar_are_numpys(dtype):
    values = host(dtype)
    got, want = mv.array(values)[1, 2], values[1, 2]
    for spec in FORMATS[np.dtype(dtype).kind]:
        assert format(got, spec) == format(want, spec)
    assert f"{got}|{got!r}|{got!s}" == f"{want}|{want!r}|{want!s}"


ZERO_D = {
    "mv.array(3.0)": lambda xp: xp.array(3.0),
    "mv.array(7)": lambda xp: xp.array(7),
    "mv.array(True)": lambda xp: xp.array(True),
    "int8 0-d": lambda xp: xp.array(3, dtype=xp.int8),
    "x.reshape(())": lambda xp: xp.arange(4.0, 5.0).reshape(()),
    "x[...] of a 0-d array": lambda xp: xp.array(5)[...],
    "x[..., 1]": lambda xp: xp.arange(3.0)[..., 1],
    "mv.zeros(())": lambda xp: xp.zeros(()),
}
"""0-d arrays that NumPy keeps as arrays."""


@pytest.mark.parametrize("make", list(ZERO_D))
def test_an_explicit_0d_array_acts_as_numpys_0d_array(make):
    got, want = ZERO_D[make](mv), ZERO_D[make](np)
    assert isinstance(want, np.ndarray) and not isinstance(want, np.generic)
    assert got.shape == want.shape == () and got.dtype == want.dtype
    assert repr(got) == repr(want) and str(got) == str(want)
    assert not np.iterable(got)
    for use in (iter, len, operator.index, float, int, bool):
        assert _error_of(use, got) == _error_of(use, want)
    with pytest.raises(TypeError, match="unhashable type"):
        hash(got)
    assert not isinstance(got, numbers.Number) and not np.isscalar(got)
    assert format(got, "") == format(want, "")
    if want.dtype.kind == "f":
        assert format(got, ".3f") == format(want, ".3f")


def test_arrays_are_unhashable_and_iterate_as_numpys():
    values = np.arange(6.0).reshape(2, 3)
    x = mv.array(values)
    with pytest.raises(TypeError, match="unhashable type"):
        hash(x)
    with pytest.raises(TypeError, match="unhashable type"):
        {x: 1}  # noqa: B018
    assert np.iterable(x) and len(x) == 2
    assert [repr(v) for v in x[0]] == [repr(v) for v in values[0]]
    assert _error_of(operator.index, x) == _error_of(operator.index, values)
    assert _error_of(operator.index, mv.array([3])) == _error_of(operator.index,
                                                                 np.array([3]))


def test_indexing_a_scalar_gives_what_numpys_gives():
    values = np.arange(3.0)
    s, n = mv.array(values).sum(), values.sum()
    for key in ((), Ellipsis, None):
        assert repr(s[key]) == repr(n[key])
    zero_d = np.array(2.5)
    assert repr(mv.array(zero_d)[()]) == repr(zero_d[()])  # a 0-d array's element: a scalar


# ---- dict keys, sets, range(), list indices ----------------------------------------------

@pytest.mark.parametrize("xp", [np, mv], ids=["numpy", "minerva"])
def test_scalars_are_dict_keys_and_set_members_by_value(xp):
    x = xp.arange(4.0)
    names = {0.0: "zero", 6.0: "six"}
    assert names[x.sum()] == "six" and names[x[0]] == "zero"
    assert x.sum() in {6.0} and 6 in {x.sum()}
    assert len({x.sum(), 6.0, np.float64(6.0), 6, x[1] + x[2] + x[3]}) == 1
    by_value = {v: i for i, v in enumerate(x)}
    assert by_value[2.0] == 2 and by_value[x[3]] == 3
    counts: dict = {}
    for v in xp.array([1, 2, 2, 3, 3, 3]):
        counts[v] = counts.get(v, 0) + 1
    assert counts == {1: 1, 2: 2, 3: 3}
    assert hash(xp.array([True]).all()) == hash(True) and hash(x.max()) == hash(3)


def test_equal_values_hash_equal_across_dtypes_and_a_nan_is_its_own_key():
    for dtype in (np.float16, np.float32, np.float64, np.int8, np.uint16, np.int64):
        s = mv.array([2, 1], dtype=dtype)[0]
        assert hash(s) == hash(2) == hash(np.array([2], dtype=dtype)[0])
    assert hash(mv.array([0.1], dtype=np.float32)[0]) == hash(np.float32(0.1))
    assert hash(mv.array([1 + 2j])[0]) == hash(1 + 2j)
    nan = mv.array([np.nan]).sum()
    table = {nan: "found"}
    assert table[nan] == "found" and hash(nan) == hash(nan)


def test_integer_scalars_are_range_bounds_and_list_indices():
    values = np.array([3, 0, 4, 1])
    x, letters = mv.array(values), list("abcdef")
    assert list(range(x.sum())) == list(range(values.sum()))
    assert list(range(x[1], x[0])) == [0, 1, 2]
    assert letters[x.argmax()] == letters[values.argmax()] == "c"
    assert letters[x[3]:x[2]] == letters[1:4] and "xyz"[x[3]] == "y"
    assert operator.index(mv.array([7], dtype=np.uint8)[0]) == 7
    for bad, want in ((mv.arange(3.0).sum(), np.arange(3.0).sum()),
                      (mv.array([True])[0], np.array([True])[0]),
                      (mv.array([1 + 0j])[0], np.array([1 + 0j])[0])):
        assert _error_of(operator.index, bad) == _error_of(operator.index, want)
        with pytest.raises(TypeError):
            range(bad)
        with pytest.raises(TypeError):
            letters[bad]  # noqa: B018


# ---- arithmetic and comparisons (NEP 50) -------------------------------------------------

ARITHMETIC = [
    (np.float32, lambda s: s + 1.0), (np.float32, lambda s: 2.0 * s),
    (np.float32, lambda s: s / 3), (np.float32, lambda s: s * np.float64(2.0)),
    (np.float32, lambda s: np.float32(2.0) * s), (np.float32, lambda s: s + 1j),
    (np.float32, lambda s: s ** 2), (np.float32, lambda s: s < 2.5),
    (np.float32, lambda s: np.sqrt(s)), (np.float32, lambda s: -s),
    (np.float16, lambda s: s + 1.5), (np.float64, lambda s: abs(-s)),
    (np.float64, lambda s: s % 2), (np.float64, lambda s: divmod(s, 2)[0]),
    (np.int8, lambda s: s + 1), (np.int8, lambda s: s * 2.5), (np.int8, lambda s: s // 2),
    (np.int8, lambda s: s + np.int16(1)), (np.int8, lambda s: 3 - s),
    (np.uint8, lambda s: s - 1), (np.uint8, lambda s: s + np.int8(1)),
    (np.int64, lambda s: s / 2), (np.int64, lambda s: s ** 2), (np.int64, lambda s: s == 3),
    (np.int64, lambda s: s & 1), (np.int64, lambda s: s << 2),
    (np.int32, lambda s: s * 1.0),
    (np.bool_, lambda s: s + 1), (np.bool_, lambda s: s & True), (np.bool_, lambda s: ~s),
    (np.bool_, lambda s: s * 1.5), (np.complex64, lambda s: s * 2.0),
    (np.complex64, lambda s: s + np.complex128(1j)),
    (np.float64, lambda s: round(s * 1.37, 1)),
]


@pytest.mark.parametrize("dtype, op", ARITHMETIC)
def test_arithmetic_on_scalars_gives_numpys_scalar(dtype, op):
    values = np.array([1, 0, 3], dtype=dtype) if dtype is not np.bool_ else np.array(
        [True, False, True])
    want = op(values[2:].max())
    got = op(mv.array(values)[2:].max())   # a lazy scalar (x[2] may be NumPy's own)
    assert isinstance(want, np.generic)
    assert type(got) is mv.NArray and repr(got) == repr(want)


def test_python_functions_of_scalars_answer_as_for_numpys():
    values = np.array([2.5, -1.25, 4.0])
    x = mv.array(values)
    assert type(x.max()) is mv.NArray
    assert round(x[0]) == round(values[0]) and type(round(x[0])) is int
    assert sorted([x.max(), x.min(), x[0]]) == sorted([values.max(), values.min(),
                                                        values[0]])
    assert max(x.sum(), 5.0) == max(values.sum(), 5.0)
    assert sum(v for v in x) == sum(v for v in values)
    assert math.floor(x[1]) == math.floor(values[1]) and math.isclose(x.sum(), 5.25)
    assert "%.3f and %d" % (x[0], x[2]) == "%.3f and %d" % (values[0], values[2])
    assert np.float64(x.sum()) == values.sum() and type(np.float64(x.sum())) is np.float64
    assert bool(x[1] < 0) and not bool(x.min() > 0)


def test_in_place_operators_on_a_scalar_make_a_new_scalar_as_numpys():
    for xp in (np, mv):
        x = xp.arange(4.0)
        s = x.sum()
        alias = s
        s += 1
        s *= 2
        assert float(alias) == 6.0 and float(s) == 14.0 and repr(s) == "np.float64(14.0)"
        element = x[1]
        element -= 10
        assert float(x[1]) == 1.0 and float(element) == -9.0
        x[2] += 5  # through an element: writes the array
        np.testing.assert_array_equal(np.asarray(x), [0.0, 1.0, 7.0, 3.0])
        zero_d = xp.array(1.0)
        same = zero_d
        zero_d += 1  # a 0-d array is written in place
        assert float(same) == 2.0


# ---- laziness ----------------------------------------------------------------------------

GATED, GATE = gated_op("test_scalars_gate")


def test_scalars_stay_lazy_until_a_use_needs_their_value():
    mv.init(engine="dag")
    GATE.clear()
    safety = threading.Timer(20, GATE.set)
    safety.start()
    try:
        x = build(GATED, [mv.arange(4.0)])
        s, peak = x.sum(), x.argmax()
        later = (s * 2 + 1, x[peak], x[1] + s, mv.exp(s) > 1, -x[3])
        assert repr(type(s)) == repr(mv.NArray) and isinstance(s, numbers.Real)
        assert not np.iterable(s) and isinstance(peak, numbers.Integral)
        with pytest.raises(TypeError):
            len(s)
        assert not GATE.is_set(), "a scalar waited for its value"
        GATE.set()
        assert hash(s) == hash(6.0) and repr(s) == "np.float64(6.0)"
        assert [repr(v) for v in later] == [
            "np.float64(13.0)", "np.float64(3.0)", "np.float64(7.0)", "np.True_",
            "np.float64(-3.0)"]
        assert list(range(peak)) == [0, 1, 2]
    finally:
        GATE.set()
        safety.cancel()


def test_scalars_are_the_same_under_every_engine(engine):
    values = np.arange(12.0).reshape(3, 4)
    x = mv.array(values)
    got = [x.sum(), x[2, 1], x.mean() * 2, x[1].max() > 5]
    want = [values.sum(), values[2, 1], values.mean() * 2, values[1].max() > 5]
    assert [repr(v) for v in got] == [repr(v) for v in want]
    assert {hash(v) for v in got} == {hash(v) for v in want}


def test_out_gives_the_array_written_not_a_scalar():
    x, out = mv.arange(3.0), mv.zeros(())
    result = mv.sum(x, out=out)
    assert result is out and repr(out) == repr(np.sum(np.arange(3.0), out=np.zeros(())))
    with pytest.raises(TypeError):
        hash(out)


# ---- matplotlib --------------------------------------------------------------------------

def test_matplotlib_takes_scalar_results_and_arrays():
    x = mv.arange(6.0).reshape(2, 3)
    figure, axes = plt.subplots()
    try:
        line = axes.axhline(x.mean())
        assert [float(y) for y in line.get_ydata()] == [2.5, 2.5]
        bars = plt.bar(range(3), x[1])
        assert [bar.get_height() for bar in bars] == [3.0, 4.0, 5.0]
        points = axes.plot(x[0], x[1] * x.max())[0]
        np.testing.assert_array_equal(np.asarray(points.get_ydata(), float), [15, 20, 25])
        figure.canvas.draw()
    finally:
        plt.close(figure)


# ---- which functions give scalars --------------------------------------------------------

VECTOR, MATRIX = np.array([3.0, -1.0, 2.5, 4.0]), np.array([[2.0, 1.0], [0.5, 3.0]])
FUNCTIONS = {
    "v @ v": lambda xp, v, m: v @ v, "dot": lambda xp, v, m: xp.dot(v, v),
    "vdot": lambda xp, v, m: xp.vdot(v, v), "inner": lambda xp, v, m: xp.inner(v, v),
    "vecdot": lambda xp, v, m: xp.vecdot(v, v),
    "einsum": lambda xp, v, m: xp.einsum("i,i", v, v),
    "tensordot (an array in NumPy)": lambda xp, v, m: xp.tensordot(v, v, 1),
    "trace": lambda xp, v, m: xp.trace(m), "std": lambda xp, v, m: xp.std(v),
    "var": lambda xp, v, m: v.var(), "ptp": lambda xp, v, m: xp.ptp(v),
    "median": lambda xp, v, m: xp.median(v),
    "percentile": lambda xp, v, m: xp.percentile(v, 25),
    "quantile": lambda xp, v, m: xp.quantile(v, 0.5),
    "average": lambda xp, v, m: xp.average(v, weights=xp.abs(v)),
    "nanmean": lambda xp, v, m: xp.nanmean(v), "nansum": lambda xp, v, m: xp.nansum(v),
    "nanargmax": lambda xp, v, m: xp.nanargmax(v),
    "count_nonzero": lambda xp, v, m: xp.count_nonzero(v > 0),
    "searchsorted": lambda xp, v, m: xp.searchsorted(xp.sort(v), 2.0),
    "clip": lambda xp, v, m: xp.clip(v.sum(), 0, 5),
    "round": lambda xp, v, m: xp.round(v[2]),
    "add.reduce": lambda xp, v, m: xp.add.reduce(v),
    "subtract.reduce": lambda xp, v, m: xp.subtract.reduce(v),
    "logaddexp.reduce": lambda xp, v, m: xp.logaddexp.reduce(v),
    "add.reduce with initial": lambda xp, v, m: xp.add.reduce(v, initial=2.0),
    "sum with where": lambda xp, v, m: xp.sum(v, where=v > 0),
    "a ufunc with where": lambda xp, v, m: xp.multiply(v[1], 2.0, where=True),
    "det": lambda xp, v, m: xp.linalg.det(m),
    "norm": lambda xp, v, m: xp.linalg.norm(v), "cond": lambda xp, v, m: xp.linalg.cond(m),
    "matrix_rank": lambda xp, v, m: xp.linalg.matrix_rank(m),
    "slogdet": lambda xp, v, m: tuple(xp.linalg.slogdet(m))[1],
    "where (an array in NumPy)": lambda xp, v, m: xp.where(True, v.sum(), 0.0),
    "copy (an array in NumPy)": lambda xp, v, m: xp.copy(v.sum()),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_functions_give_a_scalar_where_numpys_do(name):
    want = FUNCTIONS[name](np, VECTOR, MATRIX)
    got = FUNCTIONS[name](mv, mv.array(VECTOR), mv.array(MATRIX))
    assert type(got) is mv.NArray and got.dtype == want.dtype and got.shape == ()
    assert not np.iterable(got) and np.isscalar(got) == np.isscalar(want)
    assert repr(got).split("(")[0] == repr(want).split("(")[0]  # np.float64( or array(
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
    if isinstance(want, np.generic):
        assert hash(got) == hash(got.item())
    else:
        with pytest.raises(TypeError):
            hash(got)


def test_a_scalar_variable_of_autograd_is_updated_in_place_by_its_optimizer():
    bias = mv.array([0.5, 2.0]).sum()  # a NumPy scalar, made a variable
    bias.attach_grad()
    params = [bias]
    with mv.autograd.record():
        loss = (bias * 3.0) ** 2
    loss.backward()
    for p in params:
        p -= 0.01 * p.grad  # minerva's optimizers write variables in place
    assert float(params[0]) == float(bias) == pytest.approx(2.5 - 0.01 * 18 * 2.5)
