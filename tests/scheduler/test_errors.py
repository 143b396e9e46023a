"""Failures: a failing op poisons only what depends on it, is raised at the next wait that
needs it, once by wait_for_all, and leaves the runtime usable. Bad input raises at once."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import minerva as mv
from tests.conftest import assert_settled
from minerva.builder import build
from minerva.ops import registry

_gate = threading.Event()


def _fail_infer(x, *, message):
    return (x,)


def _fail_impl(xp, x, *, out, message):
    raise RuntimeError(message)


FAIL = registry.register("test_fail", _fail_infer, _fail_impl)


def fail(x, message="injected"):
    """An op that raises while running (fault injection)."""
    return build(FAIL, [x], dict(message=message))


def test_op_error_carries_its_origin(runtime):
    x = mv.ones(3)
    bad = build(FAIL, [x], dict(message="injected"))  # this line is the one reported
    line = test_op_error_carries_its_origin.__code__.co_firstlineno + 2
    with pytest.raises(mv.OpError) as info:
        bad.to_numpy()
    err = info.value
    assert err.op == "test_fail" and err.device == bad.device
    assert err.created_at == f"test_errors.py:{line}"
    assert isinstance(err.__cause__, RuntimeError) and "injected" in str(err)
    assert isinstance(err.node_id, int)


def test_failure_poisons_dependents_only_and_runtime_stays_usable(runtime):
    _, devices = runtime
    x = mv.ones(4)
    bad = fail(x)
    downstream = [bad + 1]
    with mv.device(devices[-1]):
        downstream.append((bad * 2).sum())  # across devices too
    independent = (x * 3).sum()
    for y in downstream:
        with pytest.raises(mv.OpError, match="injected"):
            y.wait(timeout=30)
    assert float(independent) == 12.0
    mv.wait_for_all(timeout=30)  # the failure was reported by the waits above
    assert float(mv.ones(2).sum()) == 2.0


def test_wait_for_all_raises_the_first_unreported_failure_once(runtime):
    x = mv.ones(2)
    first, second = fail(x, "first"), fail(x, "second")
    with pytest.raises(mv.OpError, match="first") as info:
        mv.wait_for_all(timeout=30)
    assert any("1 more" in note for note in getattr(info.value, "__notes__", []))
    mv.wait_for_all(timeout=30)  # reported: not raised again
    with pytest.raises(mv.OpError, match="second"):
        second.wait()  # the stored error is still raised where it is needed
    del first, second
    assert_settled(x)


def test_reported_failures_are_not_raised_again_by_wait_for_all(runtime):
    bad = fail(mv.ones(2))
    with pytest.raises(mv.OpError):
        bad.wait(timeout=30)
    mv.wait_for_all(timeout=30)


def test_failed_values_free_everything(runtime):
    bad = fail(mv.ones(1000))
    worse = bad @ mv.ones(1000)
    del bad, worse
    with pytest.raises(mv.OpError):
        mv.wait_for_all(timeout=30)
    assert_settled()


def test_shape_errors_raise_at_the_building_line(engine):
    a, b = mv.ones((2, 3)), mv.ones((4, 5))
    with pytest.raises(mv.ShapeError, match="inner dimensions") as info:
        a @ b
    assert any("test_errors.py" in note for note in info.value.__notes__)
    with pytest.raises(mv.ShapeError, match="broadcast"):
        a + b
    with pytest.raises(mv.ShapeError):
        a.reshape(7)
    with pytest.raises(mv.ShapeError):
        a.sum(axis=2)
    with pytest.raises(IndexError):
        a[5]
    with pytest.raises(mv.ShapeError):
        mv.concatenate([a, b])
    with pytest.raises(ValueError):  # ShapeError is a ValueError
        mv.zeros((-1, 2))
    assert_settled(a, b)  # the refused ops left nothing behind


def test_bad_operands_and_dtypes(engine):
    a = mv.ones(3)
    with pytest.raises(TypeError):
        a + "text"
    with pytest.raises(TypeError):
        mv.exp({"not": "an array"})
    with pytest.raises(mv.ShapeError, match="dtype"):
        mv.zeros(3, dtype=object)
    with pytest.raises(mv.ShapeError):
        mv.array(["a", None])
    with pytest.raises(mv.ShapeError, match="negative integer powers"):
        mv.arange(3) ** -1
    with pytest.raises(IndexError, match="out of bounds"):
        a[[0, 9]]
    with pytest.raises(IndexError, match="integer"):
        a[[0.5]]
    with pytest.raises(mv.ShapeError, match="could not convert"):
        a[0] = "x"


def test_bad_device_ids(engine):
    with pytest.raises(mv.DeviceError):
        mv.set_device(7)
    with pytest.raises(mv.DeviceError):
        mv.set_device("cpu0")
    with pytest.raises(mv.DeviceError):
        mv.ones(2).to(3)
    with pytest.raises(mv.DeviceError):
        mv.device_info(-1)


def test_arrays_of_a_shut_down_runtime_are_refused():
    x = mv.ones(2)
    assert float(x.sum()) == 2.0
    mv.shutdown()
    with pytest.raises(mv.MinervaError, match="shut down"):
        x + 1


def test_a_long_poisoned_chain_fails_without_recursion(engine):
    x = fail(mv.ones(2))
    for _ in range(3000):  # deeper than Python's recursion limit
        x = x + 1
    with pytest.raises(mv.OpError, match="injected"):
        x.wait(timeout=60)
    assert float(mv.ones(2).sum()) == 2.0
