"""pandas: Series and DataFrames made of NArrays, their ``values`` back into minerva, and
arithmetic of a Series with an NArray give what NumPy arrays give."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv

pd = pytest.importorskip("pandas")


def values():
    rng = np.random.default_rng(0)
    return rng.normal(size=6), rng.normal(size=(6, 3)), np.arange(6)


@pytest.mark.parametrize("make", [
    lambda a, x, X, k: pd.Series(a(x)),
    lambda a, x, X, k: pd.Series(a(k), name="k"),
    lambda a, x, X, k: pd.Series(a(x), index=a(k) * 10),
    lambda a, x, X, k: pd.Series(x) + a(x),
    lambda a, x, X, k: pd.Series(x) * a(x) - a(x) / 2,
    lambda a, x, X, k: pd.Series(x) > a(x)[::-1],
    lambda a, x, X, k: np.exp(pd.Series(a(x))),
    lambda a, x, X, k: pd.Series(x).iloc[a(k[:3])],
    lambda a, x, X, k: pd.DataFrame({"g": a(k % 2), "v": a(x)}).groupby("g").v.sum(),
], ids=["series", "ints", "index", "add", "arithmetic", "compare", "ufunc", "iloc",
        "groupby"])
def test_series(engine, make):
    x, X, k = values()
    expected, got = make(np.asarray, x, X, k), make(mv.array, x, X, k)
    pd.testing.assert_series_equal(got, expected)


@pytest.mark.parametrize("make", [
    lambda a, x, X, k: pd.DataFrame(a(X)),
    lambda a, x, X, k: pd.DataFrame(a(X), columns=list("abc"), index=a(k)),
    lambda a, x, X, k: pd.DataFrame({"a": a(x), "k": a(k)}),
    lambda a, x, X, k: pd.DataFrame(X).assign(d=a(x)),
    lambda a, x, X, k: pd.DataFrame({"a": a(x)}).describe(),
], ids=["frame", "labels", "dict", "assign", "describe"])
def test_frames(engine, make):
    x, X, k = values()
    pd.testing.assert_frame_equal(make(mv.array, x, X, k), make(np.asarray, x, X, k))


def test_values_round_trip(engine):
    _, X, _ = values()
    frame = pd.DataFrame(mv.array(X))
    back = mv.asarray(frame.values)
    assert isinstance(back, mv.NArray) and np.array_equal(back.to_numpy(), X)
    assert np.array_equal(frame.to_numpy(), X) and frame.values.dtype == X.dtype
    assert pd.Series(mv.array(X[:, 0])).mean() == pd.Series(X[:, 0]).mean()


def test_a_series_copied_from_an_narray_is_written(engine):
    x, _, _ = values()
    array = mv.array(x)
    series = pd.Series(array, copy=True)  # pandas copies only NumPy arrays by default
    series.iloc[0] = 5.0
    series += 1
    expected = pd.Series(x.copy())
    expected.iloc[0] = 5.0
    expected += 1
    pd.testing.assert_series_equal(series, expected)
    assert np.array_equal(array.to_numpy(), x)
