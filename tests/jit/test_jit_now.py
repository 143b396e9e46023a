"""A plan of one segment replayed on the calling thread in one step (``minerva.jit.now``):
the same bits as NumPy and eager minerva over many calls (random chains, fused and
unfused), the results kept for reuse computed anew only where no handle holds them
(handles, views, containers, ``y = step(y)`` loops), inputs pending and written in place,
two devices, traces (fresh results), errors and floating-point reports at their lines,
``check=True``, autograd around a call, the bytes kept."""
from __future__ import annotations

import gc
import os
import sys
import warnings

import numpy as np
import pytest

import minerva as mv
from minerva.builder import build
from minerva.jit import now
from tests.conftest import assert_settled
from tests.jit.test_jit_inline import HOLD, GATE, program_inputs, random_program
from tests.support.jit_fixtures import assert_same
from tests.support.trace_checks import traced_replays

HERE = os.path.basename(__file__)
pytestmark = pytest.mark.skipif(not hasattr(sys, "getrefcount"),
                                reason="results are kept for reuse by reference count")


def line_of(marker: str) -> int:
    """The line of this file holding ``marker`` (once, besides this search)."""
    with open(__file__, encoding="utf-8") as source:
        lines = [i for i, text in enumerate(source, 1) if marker in text]
    assert len(lines) == 2, lines
    return lines[0]


def tiny(x):
    """A chain of element-wise ops with exact float results at every fusion level."""
    for k in range(12):
        x = x * 1.0001 + 0.5
        x = abs(x) - 0.25 if k % 2 else x / 1.5 - 0.125
    return x


def the_now_replay(jitted):
    """The NowReplay of ``jitted``'s only plan."""
    (plan,) = jitted._plans.values()
    assert plan.main.now, "the plan replays on the caller in one step"
    return plan.main.now


# ---- values: NumPy's and eager minerva's bits over many calls ------------------------------

@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("fuse", [False, "exact", True])
def test_random_chains_give_numpys_and_eager_bits_at_every_call(engine, seed, fuse):
    program = random_program(seed)
    hosts = program_inputs(seed, np.float64 if seed % 2 else np.float32)
    args = [mv.array(h) for h in hosts]
    jitted = mv.jit(lambda a, b, c: program(mv, a, b, c), fuse=fuse)
    eager = program(mv, *args)
    want = program(np, *hosts)
    jitted(*args)        # the recording: an eager run
    first = None
    for _ in range(6):   # replays: fresh results twice, then kept ones
        got = jitted(*args)
        first = first or [g.to_numpy() for g in got]
        for w, e, g, f in zip(want, eager, got, first):
            assert_same(f, g)            # every call the same bits
            if fuse is True:   # numexpr's exp may differ in the last bits (doc/jit.md)
                np.testing.assert_allclose(g.to_numpy(), e.to_numpy(), rtol=1e-5)
            else:
                assert_same(e, g)
                assert_same(w, g)
    assert jitted.stats()["n_replays"] == 6


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_dropped_result_is_computed_anew_in_its_buffer_and_a_held_one_never(engine,
                                                                              dtype):
    host = np.linspace(-1, 1, 7, dtype=dtype)
    x = mv.array(host)
    jitted = mv.jit(tiny)
    jitted(x).wait(timeout=30)
    storages = [jitted(x)._storage for _ in range(2)]   # the storages, not the handles
    del storages                                          # (so nothing but the plan)
    held, seen = [], set()
    for k in range(8):
        y = jitted(x)
        seen.add(id(y._storage))
        if k % 3 == 0:
            held.append(y)                 # held in a list: never reused
        assert_same(tiny(host), y)
    assert len(seen) < 8                   # dropped results were reused...
    assert len({id(h._storage) for h in held}) == len(held)   # ...held ones never twice
    for h in held:
        assert_same(tiny(host), h)


def test_results_held_by_views_or_as_inputs_stay_as_they_were(engine):
    host = np.arange(6.0)
    jitted = mv.jit(lambda x: x * 2.0 + 1.0)
    y = mv.array(host)
    views, values = [], []
    for _ in range(8):          # y = step(y): the last result is the next input
        y = jitted(y)
        views.append(y[1:])     # a view of each result holds its storage
        host = host * 2.0 + 1.0
        values.append(host[1:])
        assert_same(host, y)
    for view, value in zip(views, values):
        assert_same(value, view)


def test_a_loop_feeding_its_result_back_reuses_the_one_before(engine):
    host = np.linspace(0, 1, 5)
    jitted = mv.jit(lambda y: (y * 0.5 + 0.25) * y)
    y = mv.array(host)
    ids = []
    for _ in range(10):
        y = jitted(y)
        ids.append(id(y._storage))
        host = (host * 0.5 + 0.25) * host
        assert_same(host, y)
    assert len(set(ids[3:])) == 2      # two storages in turn once the plan keeps them


def test_the_kept_results_are_counted_and_freed_with_the_function(engine):
    x = mv.ones(16, dtype=np.float32)
    jitted = mv.jit(tiny)
    for _ in range(5):
        jitted(x)
    assert jitted.stats()["kept_bytes"] == 2 * x.nbytes
    held = jitted(x)
    assert jitted.stats()["kept_bytes"] == x.nbytes   # one of the two has a handle
    mv.wait_for_all(timeout=30)
    assert mv.memory_stats()["in_use_bytes"] == 3 * x.nbytes
    del jitted
    assert_settled(x, held)   # without the collector


def test_big_results_are_not_kept(engine):
    x = mv.ones(now.KEEP_BYTES // 8 + 1)
    jitted = mv.jit(lambda x: x * 2.0 + 1.0)
    for _ in range(4):
        assert_same(np.full(x.shape, 3.0), jitted(x))
    assert jitted.stats()["kept_bytes"] == 0
    assert not the_now_replay(jitted).keeps


# ---- inputs pending, writes, several results ------------------------------------------------

def test_a_pending_input_takes_the_dag_path_between_calls_on_the_caller():
    mv.init(engine="dag")
    jitted = mv.jit(lambda x: (x + 1.0) * 3.0)
    x = mv.ones(4)
    for _ in range(4):
        assert_same(np.full(4, 6.0), jitted(x))
    GATE.clear()
    try:
        pending = build(HOLD, [x * 2.0])
        result = jitted(pending)
        assert not result._storage.current.done   # submitted: it waits for its input
    finally:
        GATE.set()
    assert_same(np.full(4, 9.0), result)
    for _ in range(3):   # and back on the caller, reusing what it kept
        assert_same(np.full(4, 6.0), jitted(x))


def test_in_place_writes_and_several_results_follow_numpy(engine):
    rng = np.random.default_rng(5)
    w0, grads = rng.standard_normal(5), [rng.standard_normal(5) for _ in range(8)]
    w, m = mv.array(w0), mv.zeros(5)

    def step(g):
        m.__imul__(0.9)
        m.__iadd__(g)
        w.__isub__(0.1 * m)
        return (w * w).sum(), {"m2": m * 2.0, "g": g}
    jitted = mv.jit(step)
    host_w, host_m = w0.copy(), np.zeros(5)
    g_arrays = [mv.array(g) for g in grads]
    for g, ga in zip(grads, g_arrays):
        host_m *= 0.9
        host_m += g
        host_w -= 0.1 * host_m
        loss, extra = jitted(ga)
        assert_same(np.sum(host_w * host_w), loss)
        assert_same(host_m * 2.0, extra["m2"])
        assert extra["g"]._storage is ga._storage   # an argument returned is itself
    assert_same(host_w, w)
    assert_same(host_m, m)


def test_two_devices_each_replay_their_plan_on_the_caller(runtime):
    _engine, devices = runtime
    host = np.linspace(-1, 1, 6)
    jitted = mv.jit(lambda x: x * 3.0 - 1.0)
    per_device = {}
    for _ in range(4):
        for device in devices:
            with mv.device(device):
                x = mv.array(host)
                y = jitted(x)
                assert y.device == device
                assert_same(host * 3.0 - 1.0, y)
                per_device.setdefault(device, set()).add(id(y._storage))
    assert jitted.stats()["n_signatures"] == len(devices)


# ---- traces, errors, floating-point reports, check=True, autograd --------------------------

def test_a_trace_sees_fresh_results_and_each_replay(engine, tmp_path):
    jitted = mv.jit(lambda x: (x * 2.0 + 1.0) * x, fuse=False)
    x = mv.ones(4)
    for _ in range(4):
        jitted(x).wait(timeout=30)
    results = []
    _trace, replays = traced_replays(lambda: results.extend(jitted(x) for _ in range(3)),
                                     str(tmp_path / "t.json"))
    assert len(replays) == 3
    assert len({id(r._storage) for r in results}) == 3
    for r in results:
        assert_same(np.full(4, 3.0), r)


def test_an_error_at_a_kept_call_names_the_step_and_the_next_calls_recover(engine):
    def f(x, index):
        return x[index] * 2.0   # out of range at a later call
    jitted = mv.jit(f)
    x = mv.arange(5.0)
    good = mv.array([1, 2])
    for _ in range(4):
        assert_same(np.array([2.0, 4.0]), jitted(x, good))
    bad = jitted(x, mv.array([1, 7]))
    with pytest.raises(mv.OpError, match=f"{HERE}:{line_of('# out of range at a later')}"):
        bad.wait(timeout=30)
    del bad
    for _ in range(4):
        assert_same(np.array([2.0, 4.0]), jitted(x, good))


def test_floating_point_warnings_of_a_kept_call_name_the_calling_line(engine):
    jitted = mv.jit(lambda x: 1.0 / x, fuse=False)
    x = mv.array([0.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(4):
            jitted(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = jitted(x)   # the kept call's line
    assert [str(w.message) for w in caught] == ["divide by zero encountered in jit_replay"]
    assert (os.path.basename(caught[0].filename), caught[0].lineno) == \
        (HERE, line_of("# the kept call's line"))
    assert_same(np.array([np.inf, 0.5]), result)


def test_a_raising_error_state_fails_a_kept_call_at_the_steps_line(engine):
    def f(x):
        return (x + 1.0) / x   # divides by zero here
    jitted = mv.jit(f)
    x = mv.array([0.0, 1.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(4):
            jitted(x)
    with np.errstate(divide="raise"):
        failed = jitted(x)
    with pytest.raises(mv.OpError, match=f"{HERE}:{line_of('# divides by zero here')}"):
        failed.wait(timeout=30)


def test_check_true_compares_kept_calls_with_eager(engine):
    host = np.linspace(-2, 2, 9, dtype=np.float32)
    x = mv.array(host)
    jitted = mv.jit(tiny, check=True)
    for _ in range(5):
        assert_same(tiny(host), jitted(x))
    assert jitted.stats()["n_checks"] == 4


def test_autograd_around_a_kept_call_sees_the_ops(engine):
    host = np.linspace(0.5, 1.5, 4)
    jitted = mv.jit(lambda w: (w * w * 3.0).sum())
    w = mv.array(host)
    for _ in range(4):
        jitted(w)
    value, grad = mv.autograd.value_and_grad(jitted)(w)
    assert_same(np.sum(host * host * 3.0), value)
    assert_same(host * 6.0, grad)
    assert jitted.stats()["n_eager"] == 1
    for _ in range(3):
        assert_same(np.sum(host * host * 3.0), jitted(w))


def test_after_many_kept_calls_the_dag_holds_only_what_is_held(engine):
    x = mv.ones(8)
    jitted = mv.jit(lambda x: x * 2.0)
    for _ in range(20):
        jitted(x)
    kept = jitted.stats()["kept_bytes"]
    mv.wait_for_all(timeout=30)
    assert kept == 2 * x.nbytes
    assert mv.memory_stats()["in_use_bytes"] == x.nbytes + kept
    del jitted
    gc.collect()
    assert_settled(x)
