"""NumPy's floating-point error handling holds for every op, whatever its size, engine or
thread: the ``numpy.errstate`` in force when the op was issued applies to its kernel; a
warning names the user's line; ``raise`` becomes an OpError caused by FloatingPointError
at the next wait."""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import minerva as mv
from tests.conftest import start_engine

SIZES = {"tiny": 4, "big": 1 << 17}    # 32 B and 1 MiB of float64: direct and DAG paths
INLINE_BYTES = 1 << 20
"""The inline limit the sizes are chosen for (on any machine: unset, it depends on the
cores, configuration.md)."""


@pytest.fixture(params=["dag", "naive", "dag-queued"])
def engine_name(request):
    start_engine(request.param, inline_bytes=INLINE_BYTES)
    return request.param


def _line() -> int:
    """The line number of the caller's next line."""
    return inspect.currentframe().f_back.f_lineno + 1


@pytest.mark.parametrize("size", SIZES)
def test_a_warning_names_the_users_line(engine_name, size):
    x = mv.zeros(SIZES[size])
    with pytest.warns(RuntimeWarning, match="divide by zero encountered in divide") as got:
        line = _line()
        y = mv.ones(SIZES[size]) / x
        y.wait(timeout=30)
    np.testing.assert_array_equal(y.to_numpy(), np.full(SIZES[size], np.inf))
    assert [(w.filename, w.lineno) for w in got] == [(__file__, line)]


@pytest.mark.parametrize("size", SIZES)
def test_raise_gives_an_op_error_at_the_next_wait(engine_name, size):
    x = mv.zeros(SIZES[size])
    with np.errstate(all="raise"):
        line = _line()
        y = mv.log(x)
    with pytest.raises(mv.OpError) as info:     # waited outside the errstate block
        y.wait(timeout=30)
    assert isinstance(info.value.__cause__, FloatingPointError)
    assert "divide by zero" in str(info.value.__cause__)
    assert f"test_errstate.py:{line}" in str(info.value)


@pytest.mark.parametrize("size", SIZES)
def test_the_state_at_issue_applies_not_the_state_at_wait(engine_name, size):
    x = mv.zeros(SIZES[size])
    with np.errstate(divide="ignore", invalid="ignore"):
        quiet = mv.ones(SIZES[size]) / x
        nan = x / x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            quiet.wait(timeout=30)
            nan.wait(timeout=30)
    assert np.isinf(quiet.to_numpy()).all() and np.isnan(nan.to_numpy()).all()
    with np.errstate(all="raise"):
        loud = mv.ones(SIZES[size]) / x
    with pytest.raises(mv.OpError):
        loud.wait(timeout=30)


@pytest.mark.parametrize("size", SIZES)
def test_a_user_callable_is_called_as_numpy_calls_it(engine_name, size):
    calls, expected = [], []
    with np.errstate(all="call", call=lambda kind, flag: calls.append(kind)):
        (mv.zeros(SIZES[size]) / 0.0).wait(timeout=30)
    with np.errstate(all="call", call=lambda kind, flag: expected.append(kind)):
        np.zeros(SIZES[size]) / 0.0
    assert calls == expected == ["invalid value"]


def test_warnings_as_errors_fail_the_op(engine_name):
    x = mv.zeros(SIZES["big"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        y = mv.sqrt(x - 1.0)
        with pytest.raises(mv.OpError) as info:
            y.wait(timeout=30)
    assert isinstance(info.value.__cause__, RuntimeWarning)


def test_a_split_op_warns_once_per_kind():
    mv.init()
    with mv.device(mv.create_cpu_device(threads=2)):
        x = mv.array(np.r_[np.zeros(1 << 16), np.full(1 << 16, -1.0)])   # both ranges
        with pytest.warns(RuntimeWarning) as got:
            y = mv.log(x)
            y.wait(timeout=30)
    assert sorted(str(w.message) for w in got) == [
        "divide by zero encountered in log", "invalid value encountered in log"]


def test_the_default_state_warns_as_numpy_does(engine_name):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        (mv.ones(SIZES["big"]) * 1e308 * 10).wait(timeout=30)
        (mv.ones(3) * 1e-308 * 1e-100).wait(timeout=30)        # underflow: ignored
        np.ones(3) * 1e308 * 10
    assert [str(w.message) for w in got] == ["overflow encountered in multiply"] * 2


def test_errstate_functions_are_numpys():
    assert mv.errstate is np.errstate and mv.seterr is np.seterr and mv.geterr is np.geterr
    assert mv.seterrcall is np.seterrcall and mv.geterrcall is np.geterrcall
