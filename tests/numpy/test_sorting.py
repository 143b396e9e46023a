"""NumPy's sorting, searching, set and comparison functions, rounding and complex parts in
minerva against NumPy itself, under every engine; in-place ``sort`` seen through aliases
and views."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minerva as mv
from tests.numpy.test_statistics import HYPOTHESIS, check, compare, numpy_result, sample

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = (np.float64, np.float32, np.int32, np.uint8, np.bool_)


# ---- sort, argsort, partition ------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES + (np.complex128,))
def test_sort_and_argsort(engine, rng, dtype):
    x_np = sample(rng, (3, 4, 5), dtype, nans=True)
    if dtype == np.complex128:
        x_np = x_np + 1j * sample(rng, (3, 4, 5), np.float64)
    for axis in (None, 0, 1, -1):
        compare("sort", x_np, axis=axis)
        compare("argsort", x_np, axis=axis, stable=True)
    compare("argsort", x_np, kind="mergesort")
    compare("sort", x_np, kind="heapsort")


def test_sort_errors(engine, rng):
    x_np = sample(rng, (3, 4), np.float64)
    compare("sort", x_np, axis=2)
    compare("sort", x_np, axis=(0, 1))
    compare("sort", x_np, kind="bogus")
    compare("sort", x_np, kind="stable", stable=True)
    compare("sort", x_np, order="f")
    compare("sort", np.float64(3.0))
    compare("argsort", x_np, axis=-3)


@HYPOTHESIS
@given(values=st.lists(st.integers(-3, 3) | st.floats(-5, 5), min_size=0, max_size=12))
def test_sort_random_values(engine, values):
    x_np = np.array(values, dtype=np.float64)
    compare("sort", x_np)
    compare("argsort", x_np, stable=True)
    compare("unique", x_np, return_counts=True, return_inverse=True, return_index=True)


def test_sort_method_sorts_in_place(engine, rng):
    x_np = sample(rng, (4, 6), np.float64)
    x = mv.array(x_np)
    alias, row, before = x, x[1], x * 1  # `before` was issued before the sort
    assert x.sort() is None
    check(alias, np.sort(x_np))
    check(row, np.sort(x_np)[1])
    check(before, x_np)
    x.sort(axis=0)
    check(alias, np.sort(np.sort(x_np), axis=0))


def test_sort_method_through_views(engine, rng):
    x_np = sample(rng, (4, 6), np.int32)
    x = mv.array(x_np)
    x[2].sort()  # a row view of the base
    x[:, ::2].sort(axis=0)  # a strided view
    want = x_np.copy()
    want[2].sort()
    want[:, ::2].sort(axis=0)
    check(x, want)
    t = x.T  # a transposed view: sorting it sorts the base's columns
    t.sort()
    want.T.sort()
    check(x, want)
    with pytest.raises(TypeError):
        x.sort(axis=None)
    with pytest.raises(ValueError):
        mv.broadcast_to(mv.array([3, 1]), (2, 2)).sort()


@pytest.mark.parametrize("dtype", (np.float64, np.int32, np.bool_))
def test_partition(engine, rng, dtype):
    x_np = sample(rng, (5, 7), dtype)
    for kth, axis in ((3, -1), ((0, 4), 0), (-1, 1), (2, None)):
        got = mv.partition(mv.array(x_np), kth, axis=axis).to_numpy()
        indices = mv.argpartition(mv.array(x_np), kth, axis=axis).to_numpy()
        flat = x_np.ravel() if axis is None else x_np
        assert got.dtype == x_np.dtype and indices.dtype == np.intp
        want = np.sort(flat, axis=-1 if axis is None else axis)
        for k in np.atleast_1d(kth):
            pick = (slice(None),) * (flat.ndim - 1 if axis is None else axis % 2) + (k,)
            np.testing.assert_array_equal(got[pick], want[pick])
        np.testing.assert_array_equal(np.take_along_axis(flat, indices, axis=-1 if axis
                                                         is None else axis), got)
    compare("partition", x_np, 7)
    compare("partition", x_np, 1.5)
    compare("argpartition", x_np, 2, kind="quick")


def test_partition_method_in_place(engine, rng):
    x_np = sample(rng, (9,), np.float64)
    x = mv.array(x_np)
    assert x.partition(4) is None
    assert x.to_numpy()[4] == np.sort(x_np)[4]
    np.testing.assert_array_equal(np.sort(x.to_numpy()), np.sort(x_np))
    check(x.argsort(), np.argsort(x.to_numpy()))


# ---- searching and sets -------------------------------------------------------------------

@pytest.mark.parametrize("dtype", (np.float64, np.float32, np.int32))
def test_searchsorted(engine, rng, dtype):
    a_np = np.sort(sample(rng, (10,), dtype))
    v_np = sample(rng, (3, 4), dtype)
    for side in ("left", "right"):
        compare("searchsorted", a_np, v_np, side=side)
        compare("searchsorted", a_np, 1, side=side)
        compare("searchsorted", a_np, 0.1, side=side)
    unsorted = sample(rng, (10,), dtype)
    sorter = np.argsort(unsorted)
    compare("searchsorted", unsorted, v_np, sorter=sorter)
    check(mv.array(a_np).searchsorted(mv.array(v_np), side="right"),
          a_np.searchsorted(v_np, side="right"))
    compare("searchsorted", a_np, v_np, side="middle")
    compare("searchsorted", a_np.reshape(2, 5), v_np)
    compare("searchsorted", a_np[0], v_np)
    compare("searchsorted", a_np, v_np, sorter=sorter[:5])
    compare("searchsorted", a_np, v_np, sorter=sorter.astype(float))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_family(engine, rng, dtype):
    x_np = sample(rng, (4, 6), dtype) % 3 if dtype != np.bool_ else sample(rng, (4, 6), dtype)
    compare("unique", x_np)
    compare("unique", x_np, return_index=True, return_inverse=True, return_counts=True)
    compare("unique", x_np, axis=0, return_inverse=True)
    compare("unique", x_np, axis=1, return_counts=True)
    compare("unique", x_np, axis=2)
    for name in ("unique_all", "unique_counts", "unique_inverse", "unique_values"):
        want, got = getattr(np, name)(x_np), getattr(mv, name)(mv.array(x_np))
        if name == "unique_values":
            check(got, want)
            continue
        assert type(got) is type(want) and got._fields == want._fields
        for g, w in zip(got, want):
            check(g, w)


def test_unique_with_nans(engine):
    x_np = np.array([np.nan, 1.0, np.nan, 2.0])
    compare("unique", x_np)
    compare("unique", x_np, equal_nan=False)


@pytest.mark.parametrize("dtype", DTYPES)
def test_argwhere_flatnonzero(engine, rng, dtype):
    x_np = sample(rng, (3, 4), dtype)
    compare("argwhere", x_np)
    compare("flatnonzero", x_np)
    compare("argwhere", x_np[0, 0])


@pytest.mark.parametrize("dtype", (np.float64, np.int32, np.bool_))
def test_isin(engine, rng, dtype):
    x_np = sample(rng, (3, 5), dtype)
    test_np = sample(rng, (4,), dtype)
    compare("isin", x_np, test_np)
    compare("isin", x_np, test_np, invert=True)
    compare("isin", x_np, list(test_np[:2]))
    compare("isin", x_np, 1)
    compare("isin", x_np, test_np.reshape(2, 2), kind="sort")
    compare("isin", x_np, test_np, kind="bogus")


# ---- comparisons --------------------------------------------------------------------------------

def _close_pairs(rng):
    a = sample(rng, (3, 4), np.float64, nans=True)
    b = a + rng.standard_normal((3, 4)) * 1e-6
    b[0, 0] = a[0, 0] + 1
    return a, b


def test_isclose_and_allclose(engine, rng):
    a, b = _close_pairs(rng)
    for kwargs in ({}, {"equal_nan": True}, {"rtol": 0, "atol": 1e-7}, {"atol": 2}):
        compare("isclose", a, b, **kwargs)
        compare("isclose", a, b[0], **kwargs)
        compare("isclose", a, 0.5, **kwargs)
        assert mv.allclose(mv.array(a), mv.array(b), **kwargs) is np.allclose(a, b, **kwargs)
    compare("isclose", a.astype(np.float32), 0.1)
    compare("isclose", a.astype(np.int32), b.astype(np.int32))
    assert mv.isclose(1.0, 1.0 + 1e-9).shape == ()
    assert mv.allclose(mv.array(a[1:]), b[1:], equal_nan=True) is True
    compare("isclose", a, b[:2])  # shapes that do not broadcast
    with pytest.raises(TypeError):
        mv.isclose(mv.array(a), b, rtol=np.ones(4))


@pytest.mark.parametrize("dtype", (np.float64, np.complex128, np.int32, np.bool_))
def test_array_equal_and_equiv(engine, rng, dtype):
    a = sample(rng, (3, 4), dtype if dtype != np.complex128 else np.float64, nans=True)
    a = a.astype(dtype)
    b = a.copy()
    for x, y in ((a, b), (a, b[:2]), (a, b.T), (a[:1], b), (a, b[0]), (a, np.array(a[0, 0]))):
        for equal_nan in (False, True):
            assert mv.array_equal(mv.array(x), y, equal_nan=equal_nan) is \
                np.array_equal(x, y, equal_nan=equal_nan)
        assert mv.array_equiv(mv.array(x), y) is np.array_equiv(x, y)
    assert mv.array_equiv(mv.array(a[:1]), np.broadcast_to(a[:1], (3, 4))) is True
    if dtype != np.bool_:
        b[1, 2] = 7
        assert mv.array_equal(mv.array(a), b) is False


# ---- rounding, complex parts, nan_to_num --------------------------------------------------------

@pytest.mark.parametrize("dtype", (np.float64, np.float32, np.int32, np.bool_,
                                   np.complex128))
def test_round(engine, rng, dtype):
    x_np = (sample(rng, (3, 4), np.float64) * 37).astype(dtype)
    for decimals in (0, 1, 3, -1):
        compare("round", x_np, decimals)
        compare("around", x_np, decimals=decimals)
        want, error = numpy_result(x_np.round, decimals)
        if error is None:
            check(mv.array(x_np).round(decimals), want)
        else:
            with pytest.raises(TypeError):
                mv.array(x_np).round(decimals)
    out_dtype = np.complex128 if dtype == np.complex128 else np.float64
    want, error = numpy_result(np.round, x_np, 0, out=np.zeros((3, 4), out_dtype))
    out = mv.zeros((3, 4), out_dtype)
    assert mv.round(mv.array(x_np), 0, out=out) is out
    check(out, want)


def test_python_round(engine):
    assert round(mv.array(2.5)) == round(np.float64(2.5)) == 2
    assert round(mv.array(3.5)) == 4 and type(round(mv.array(3.5))) is int
    check(round(mv.array(2.567), 2), np.round(np.float64(2.567), 2))
    check(round(mv.array(37), -1), np.round(np.int64(37), -1))
    check(round(mv.sum(mv.array([0.25, 0.5])), 1), round(np.sum([0.25, 0.5]), 1))
    with pytest.raises(TypeError):
        round(mv.array([1.5, 2.5]))


@pytest.mark.parametrize("dtype", (np.complex128, np.complex64, np.float32, np.int32))
def test_real_imag_angle(engine, rng, dtype):
    x_np = sample(rng, (3, 4), np.float64).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x_np = x_np + 1j * sample(rng, (3, 4), np.float64).astype(dtype)
    for name in ("real", "imag", "angle"):
        compare(name, x_np)
    compare("angle", x_np, deg=True)
    x = mv.array(x_np)
    check(x.real, x_np.real)
    check(x.imag, x_np.imag)
    check(x.conj(), x_np.conj())
    check(x.conjugate(), x_np.conjugate())


def test_real_imag_setters(engine, rng):
    z_np = sample(rng, (2, 3), np.float64) + 1j * sample(rng, (2, 3), np.float64)
    z = mv.array(z_np)
    z.real = mv.array([1.0, 2.0, 3.0])
    z_np.real = [1.0, 2.0, 3.0]
    z[0].imag = 5
    z_np[0].imag = 5
    check(z, z_np)
    f = mv.array(np.array([1.5, 2.5]))
    view = mv.real(f)  # a real array's real part is a view of it
    f.real = 7
    check(view, np.array([7.0, 7.0]))
    with pytest.raises(TypeError):
        f.imag = 1


@pytest.mark.parametrize("dtype", (np.float64, np.float32, np.complex128, np.int32))
def test_nan_to_num(engine, dtype):
    x_np = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0]).astype(dtype) \
        if np.dtype(dtype).kind != "i" else np.arange(5, dtype=dtype)
    if np.dtype(dtype).kind == "c":
        x_np = x_np + 1j * x_np[::-1]
    compare("nan_to_num", x_np)
    compare("nan_to_num", x_np, nan=-1.0, posinf=9, neginf=-9)
    x = mv.array(x_np)
    alias = x
    assert mv.nan_to_num(x, copy=False, nan=3.0) is x
    check(alias, np.nan_to_num(x_np, nan=3.0))


def test_methods_and_names_exported():
    for name in ("sort", "argsort", "partition", "argpartition", "searchsorted", "unique",
                 "unique_all", "unique_counts", "unique_inverse", "unique_values",
                 "argwhere", "flatnonzero", "isin", "allclose", "isclose", "array_equal",
                 "array_equiv", "round", "around", "real", "imag", "angle", "nan_to_num"):
        assert callable(getattr(mv, name)) and getattr(mv, name).__doc__, name
    for name in ("cumsum", "cumprod", "std", "var", "sort", "argsort", "searchsorted",
                 "round", "ptp", "conj", "conjugate", "real", "imag", "partition",
                 "argpartition"):
        assert hasattr(mv.NArray, name), name


@pytest.mark.parametrize("name", ("unique", "unique_all", "unique_counts", "unique_inverse",
                                  "unique_values", "argwhere", "flatnonzero", "allclose",
                                  "array_equal", "array_equiv"))
def test_waiting_functions_say_so(name):
    assert "wait" in getattr(mv, name).__doc__.lower()
