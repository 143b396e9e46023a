"""convolve and correlate, minerva's own ops, against NumPy: every mode, both orders of the
operands, dtypes, views and 0-d operands, NumPy's errors, through ``numpy.convolve`` and
inside a jitted function."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv

MODES = ("full", "same", "valid", 0, 1, 2)
DTYPES = (np.float64, np.float32, np.int64, np.complex128, np.bool_)


def data(rng, n, dtype):
    values = rng.standard_normal(n) * 3
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.standard_normal(n)
    return values.astype(dtype)


def check(got, want):
    assert isinstance(got, mv.NArray)
    values = got.to_numpy()
    assert values.dtype == want.dtype and values.shape == want.shape
    np.testing.assert_array_equal(values, want)


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", MODES)
def test_every_mode_and_order_is_numpys(engine, rng, name, mode):
    for n, m in ((50, 7), (7, 50), (6, 6), (1, 4)):
        a, v = data(rng, n, np.float64), data(rng, m, np.float64)
        check(getattr(mv, name)(mv.array(a), mv.array(v), mode),
              getattr(np, name)(a, v, mode))


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_dtypes_are_numpys(engine, rng, name, dtype):
    a, v = data(rng, 20, dtype), data(rng, 5, dtype)
    check(getattr(mv, name)(mv.array(a), mv.array(v), "full"), getattr(np, name)(a, v, "full"))
    w = data(rng, 5, np.float32)
    check(getattr(mv, name)(mv.array(a), w), getattr(np, name)(a, w))


def test_views_lists_and_0d_operands(engine, rng):
    a, v = data(rng, 40, np.float64), data(rng, 9, np.float64)
    check(mv.convolve(mv.array(a)[::3], mv.array(v)[::-1]), np.convolve(a[::3], v[::-1]))
    check(mv.correlate(mv.array(a), [1.0, 2.0, 0.5], "same"),
          np.correlate(a, [1.0, 2.0, 0.5], "same"))
    check(mv.convolve(mv.array(np.float64(2.5)), mv.array(v)), np.convolve(2.5, v))


@pytest.mark.parametrize("call", [
    lambda m: m.convolve(m.ones((2, 2)), m.ones(2)),
    lambda m: m.convolve(m.ones(0), m.ones(2)),
    lambda m: m.correlate(m.ones(3), m.ones(0)),
    lambda m: m.correlate(m.ones(0), m.ones(3)),
    lambda m: m.convolve(m.ones(3), m.ones(0)),
    lambda m: m.convolve(m.ones(3), m.ones(2), mode="f"),
    lambda m: m.correlate(m.ones(3), m.ones(2), mode=3),
])
def test_errors_are_numpys_at_once(engine, call):
    with pytest.raises(Exception) as want:
        call(np)
    with pytest.raises(type(want.value)) as got:
        call(mv)
    assert str(got.value) == str(want.value)


def test_numpy_convolve_of_narrays_runs_in_minerva_without_the_fallback(engine, rng):
    a, v = data(rng, 30, np.float64), data(rng, 4, np.float64)
    mv.reset_fallback_stats()
    check(np.convolve(mv.array(a), mv.array(v)), np.convolve(a, v))
    check(np.correlate(mv.array(a), mv.array(v), "full"), np.correlate(a, v, "full"))
    assert mv.fallback_stats() == {}


def test_a_jitted_convolve_replays_numpys_result(rng):
    step = mv.jit(lambda a, v: mv.convolve(a, v) * 2.0)
    for _ in range(3):
        a, v = data(rng, 30, np.float64), data(rng, 4, np.float64)
        check(step(mv.array(a), mv.array(v)), np.convolve(a, v) * 2.0)
    assert step.stats()["n_replays"] == 2
