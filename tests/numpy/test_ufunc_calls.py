"""The common call of a ufunc function, ``np.add(x, y)`` or ``np.exp(x)`` with an NArray
first and no ``out=`` or keywords, takes the operator's path (in C where the accelerator
is built): NumPy's values, dtypes, errors and answers for every kind of second operand,
as the same call with ``out=None`` spelled out and as NumPy; the suite passes with
MINERVA_ACCEL=0 too."""
from __future__ import annotations

import cProfile
import pstats

import numpy as np
import pytest

import minerva as mv
from minerva.api.core import lean
from minerva.common.errors import IntegerOverflowError, MinervaError

BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
          "floor_divide", "remainder", "arctan2", "hypot", "less", "equal", "greater_equal")
UNARY = ("exp", "tanh", "negative", "sqrt", "absolute", "log1p", "square", "sign")


def same(got, want) -> None:
    values = got.to_numpy() if isinstance(got, mv.NArray) else np.asarray(got)
    want = np.asarray(want)
    assert values.dtype == want.dtype and values.shape == want.shape, (values, want)
    np.testing.assert_array_equal(values, want)


def _seconds(data):
    return [1.5, 2, True, np.float32(0.5), np.int8(3), data[::-1].copy(), [1.0, 2.0, 3.0],
            np.array(2.0), -0.0]


@pytest.mark.parametrize("name", BINARY)
def test_binary_functions_give_numpys_answer_for_every_second_operand(engine, name):
    data = np.array([0.5, 1.5, 3.0])
    x = mv.array(data)
    with np.errstate(all="ignore"):
        for other in _seconds(data):
            want = getattr(np, name)(data, other)
            other_mv = mv.array(other) if isinstance(other, np.ndarray) and other.ndim else other
            same(getattr(mv, name)(x, other_mv), want)
            same(getattr(mv, name)(x, other_mv, out=None), want)
            same(getattr(mv, name)(x, other), want)


def test_integer_operands_keep_numpys_rules(engine):
    small = np.array([1, 2, 3], dtype=np.int8)
    x = mv.array(small)
    same(mv.add(x, 1), np.add(small, 1))
    same(mv.less(x, 300), np.less(small, 300))   # NumPy's answer for a value int8 lacks
    with pytest.raises((OverflowError, IntegerOverflowError)):
        mv.add(x, 300)
    same(mv.add(x, 2), np.add(small, 2))         # after an error: the rule still checks
    with pytest.raises((OverflowError, IntegerOverflowError)):
        mv.multiply(x, 1000)
    with pytest.raises(TypeError):
        mv.add(x, object())
    same(mv.power(mv.array(np.array([2.0, 3.0])), 2), np.power([2.0, 3.0], 2))


@pytest.mark.parametrize("name", UNARY)
def test_unary_functions_give_numpys_answer(engine, name):
    for data in (np.array([0.25, 1.0, 4.0]), np.array([[1, 4], [9, 16]]),
                 np.array([1.0, 2.0, 3.0, 4.0])[::2]):
        with np.errstate(all="ignore"):
            want = getattr(np, name)(data)
        x = mv.array(data)
        if data.base is not None:
            x = mv.array(np.array([1.0, 2.0, 3.0, 4.0]))[::2]
        with np.errstate(all="ignore"):
            same(getattr(mv, name)(x), want)
            same(getattr(mv, name)(x, out=None), want)


def test_a_scalar_result_stays_a_numpy_scalar(engine):
    s = mv.sum(mv.array([1.0, 2.0]))
    for result, want in ((mv.exp(s), np.exp(np.float64(3.0))),
                         (mv.add(s, 1.0), np.float64(4.0)),
                         (mv.maximum(s, s), np.float64(3.0))):
        assert np.ndim(result) == 0 and float(result) == float(want)
        same(result, want)


def test_an_array_of_a_shut_down_runtime_is_refused(engine):
    x = mv.array([1.0, 2.0])
    x.wait()
    mv.shutdown()
    with pytest.raises(MinervaError):
        mv.exp(x)
    with pytest.raises(MinervaError):
        mv.add(x, 1.0)
    mv.init()


@pytest.mark.skipif(not lean.ACTIVE, reason="the C accelerator is not built")
def test_the_common_binary_call_runs_in_c():
    x, y = mv.zeros(4), mv.ones(4)
    x.wait(), y.wait()
    mv.add(x, y), mv.maximum(x, 1.0)   # warm the caches
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(10):
        mv.add(x, y)
        mv.maximum(x, 1.0)
    profile.disable()
    names = {key[2] for key in pstats.Stats(profile).stats}
    assert "build" not in names and "binary_op" not in names, names
