"""Row ranges are claimed by whichever thread is free: the op's own thread runs the ranges
a helper has not claimed (a helper that cannot run now delays nothing), the numbers and the
error raised do not depend on who ran which range, and splits that do not pay make the
next kernels run whole for a while (the gauge) without changing a single bit."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import minerva as mv
from minerva.device.cpu import split as cpu_split
from minerva.device.cpu.blas import BLAS
from minerva.ops import registry

pytestmark = pytest.mark.skipif(not BLAS.per_thread, reason="needs per-thread BLAS")

TIMEOUT = 30.0


def _rows_infer(x):
    return (x,)


def _negative_rows_impl(xp, x, *, out):
    bad = np.flatnonzero((x < 0).any(axis=tuple(range(1, x.ndim))))
    if bad.size:
        raise ValueError(f"negative row at {bad[0]} of this range")
    out[...] = x


NEGATIVE = registry.register("test_claims_negative_rows", _rows_infer, _negative_rows_impl)
NEGATIVE.row_split = (0,)


class _Gate:
    """A task that holds a helper thread until ``open``: stands for a helper that finds no
    free core."""

    def __init__(self):
        self.entered, self.released = threading.Event(), threading.Event()

    def work(self, helper: bool, steal: bool = True) -> None:
        self.entered.set()
        self.released.wait(TIMEOUT)


@pytest.fixture
def splitter():
    sp = cpu_split.RowSplitter("test-claims")
    yield sp
    sp.shutdown(TIMEOUT)


def _add():
    return registry.get("add")


def _operands(seed: int, rows: int = 64, cols: int = 4096):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((rows, cols)), rng.standard_normal((rows, cols))


def test_the_ops_thread_runs_every_range_a_busy_helper_has_not_claimed(splitter, monkeypatch):
    monkeypatch.setattr(cpu_split, "PAYS", 0.0)
    ran = []
    real = cpu_split._run_range
    monkeypatch.setattr(cpu_split, "_run_range",
                        lambda *args: (ran.append(threading.current_thread().name),
                                       real(*args))[1])
    gate = _Gate()
    splitter._helpers_for(1)[0].submit(gate)
    assert gate.entered.wait(TIMEOUT)
    a, b = _operands(0)
    out = np.empty_like(a)
    try:
        assert splitter.run(2, _add(), np, [a, b], out, {})   # returns with the helper held
    finally:
        gate.released.set()
    assert ran == [threading.current_thread().name] * (2 * cpu_split.RANGES_PER_THREAD)
    np.testing.assert_array_equal(out, a + b)


def test_the_lowest_failing_range_is_raised_whoever_ran_it(splitter, monkeypatch):
    monkeypatch.setattr(cpu_split, "PAYS", 0.0)
    x = np.abs(np.random.default_rng(1).standard_normal((64, 1 << 12)))
    x[40], x[63] = -1.0, -1.0                 # in the third and fourth of four ranges
    for steal in (True, False):
        monkeypatch.setattr(cpu_split, "CALLER_STEALS", steal)
        with pytest.raises(ValueError, match="negative row at 8 of this range"):
            splitter.run(2, NEGATIVE, np, [x], np.empty_like(x), {})


def test_splits_that_do_not_pay_back_off_and_one_that_pays_resets():
    gauge = cpu_split._Gauge()
    skips = []
    for _ in range(9):
        gauge.judge(cpu_ns=100, wall_ns=100)     # ranges one after the other
        skips.append(gauge.skip)
        while not gauge.wanted():
            pass
    assert skips == [1, 2, 4, 8, 16, 32, 64, 64, 64][:len(skips)]
    assert max(skips) == cpu_split.MAX_SKIP
    gauge.judge(cpu_ns=200, wall_ns=100)         # two at once: it pays
    assert gauge.skip == 0 and gauge.wanted()


def test_a_kernel_the_gauge_runs_whole_gives_the_same_bits(splitter):
    a, b = _operands(2)
    split_out, whole_out = np.empty_like(a), np.empty_like(a)
    assert splitter.run(2, _add(), np, [a, b], split_out, {})   # the first is split
    splitter.gauge.judge(cpu_ns=1, wall_ns=100)   # the last split did not pay
    assert not splitter.run(2, _add(), np, [a, b], whole_out, {})
    _add().impl(np, a, b, out=whole_out)         # the caller runs it whole
    np.testing.assert_array_equal(split_out, whole_out)


@pytest.fixture(params=["dag", "naive"])
def busy_machine(request, monkeypatch):
    """A runtime with a 2-thread CPU device whose splits are judged by a gauge that sees
    every other split as not paying (a machine whose second core comes and goes)."""
    n_judged = [0]
    real_judge = cpu_split._Gauge.judge

    def judge(self, cpu_ns, wall_ns):
        n_judged[0] += 1
        real_judge(self, 200 if n_judged[0] % 2 else 1, 100)
    monkeypatch.setattr(cpu_split._Gauge, "judge", judge)
    mv.shutdown()
    mv.init(engine=request.param)
    yield mv.create_cpu_device(threads=2)
    mv.shutdown()


def _program(xp, a, b):
    c = xp.sqrt(xp.abs(a)) * b + 1.5
    for _ in range(6):
        c = c * 0.5 + xp.sin(a) - b / 3.0
        c[::3] += a[::3]
    return c, (c * a).sum(axis=0)


def test_programs_on_a_busy_machine_match_numpy_bitwise(busy_machine):
    a, b = _operands(3, rows=128, cols=2048)
    want = _program(np, a, b)
    with mv.device(busy_machine):
        got = [g.to_numpy() for g in _program(mv, mv.array(a), mv.array(b))]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
