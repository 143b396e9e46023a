"""``mv.jit`` at run time: JitErrors (host reads while recording, NumPy-generator draws,
arguments that cannot be signed, copies made outside the seam, divergences caught by
``check=True``); a replay failing at run time; replays running asynchronously; the DAG
and the memory after replays (the arena counted while the function lives); traces; jitted
calls inside autograd recordings and other jitted functions; a new runtime."""
from __future__ import annotations

import gc
import os
import time

import numpy as np
import pytest

import minerva as mv
from tests.conftest import assert_settled
from tests.support.jit_fixtures import assert_same
from minerva.builder import build
from minerva.current import get_system
from minerva.ops import registry
from tests.support.trace_checks import traced_replays
from tests.support.gates import gated_op

HERE = os.path.basename(__file__)


def line_of(marker: str) -> int:
    """The line of this file holding ``marker`` (once)."""
    with open(__file__, encoding="utf-8") as source:
        lines = [i for i, text in enumerate(source, 1) if marker in text]
    assert len(lines) == 2, lines  # the marker, and the search for it
    return lines[0]


# ---- JitError ---------------------------------------------------------------------------

READS = [lambda x: float(x.sum()), lambda x: int(x[0]), lambda x: bool(x[0] > 0),
         lambda x: x.to_numpy(), lambda x: x.wait(), lambda x: x.item(0),
         lambda x: np.asarray(x), lambda x: str(x), lambda x: x.tolist()]


@pytest.mark.parametrize("read", READS, ids=range(len(READS)))
def test_a_host_read_while_recording_names_the_users_line(engine, read):
    f = mv.jit(lambda x: read(x * 2.0))
    x = mv.ones(3)
    for _ in range(2):   # nothing was kept: the second call records, and fails, again
        with pytest.raises(mv.JitError, match=f"{HERE}:{read.__code__.co_firstlineno}"):
            f(x)
    assert f.stats()["n_records"] == 0
    assert float(x.sum()) == 3.0   # reads are allowed again after the recording


def test_a_numpy_generator_draw_while_recording(engine):
    f = mv.jit(lambda x: x + mv.random.rand(3))
    with pytest.raises(mv.JitError, match="mv.random"):
        f(mv.ones(3))


@pytest.mark.parametrize("value", [[1, 2], {"a": 1}, np.ones(2), (1, mv.ones(2)), {1}])
def test_an_argument_that_is_no_narray_and_not_hashable(engine, value):
    f = mv.jit(lambda x, v: x)
    with pytest.raises(mv.JitError, match="argument 1 .* neither an NArray nor hashable"):
        f(mv.ones(2), value)


def test_copies_to_another_device_inside_replay_fresh_values(engine):
    mv.set_device(mv.create_cpu_device())
    other = mv.create_cpu_device()

    def f(x):
        with mv.device(other):
            return x[1:].to(other) * 2.0
    jitted = mv.jit(f, check=True)
    for value in (1.0, 5.0, 7.0):
        result = jitted(mv.full(3, value))
        assert result.device == other and result.to_numpy().tolist() == [2 * value] * 2
    assert jitted.stats()["n_checks"] == 2


def test_an_array_made_outside_the_seam_while_recording_is_refused(engine):
    engine_ = mv.ones(1)._storage.engine

    def f(x):
        (storage,) = engine_.submit(registry.get("copy"), {}, [x._storage], [x._spec],
                                    x.device, None)
        return mv.NArray(storage, None, x._spec) * 2.0  # made outside the seam
    with pytest.raises(mv.JitError, match=f"{HERE}:{line_of('# made outside the seam')}"):
        mv.jit(f)(mv.ones(3))


COUNTER = [0]
TOTAL = [None]


def test_check_mode_catches_python_state_and_a_rebound_global(engine):
    def counted(x):
        COUNTER[0] += 1
        return x * float(COUNTER[0])
    checked = mv.jit(counted, check=True)
    checked(mv.ones(3))
    with pytest.raises(mv.JitError, match="result 0 of the replay differs"):
        checked(mv.ones(3))

    def rebinding(x):
        TOTAL[0] = TOTAL[0] + x   # rebinds instead of writing in place
        return TOTAL[0] * 1.0
    TOTAL[0] = mv.zeros(3)
    checked = mv.jit(rebinding, check=True)
    checked(mv.ones(3))
    with pytest.raises(mv.JitError, match="differs from the eager run"):
        checked(mv.ones(3))


def test_check_mode_passes_a_function_that_replays_faithfully(engine):
    w = mv.ones((4, 4))

    def f(x):
        w[...] = w @ x * 0.5 + mv.randn((4, 4)) * 1e-3
        return w.sum(axis=0)
    checked = mv.jit(f, check=True)
    for _ in range(3):
        checked(mv.full((4, 4), 0.25))
    assert checked.stats()["n_checks"] == 2


# ---- a replay failing at run time ---------------------------------------------------------

def test_a_failing_replay_raises_at_wait_naming_the_line_and_later_calls_work(engine):
    def f(x, index):
        y = x * 2
        z = y[index]   # out of range only at the second call
        return z + 1
    jitted = mv.jit(f)
    x = mv.arange(5)
    assert jitted(x, mv.array([1, 2])).to_numpy().tolist() == [3, 5]
    bad = jitted(x, mv.array([1, 7]))   # builds: the index is only known when it runs
    with pytest.raises(mv.OpError, match=f"{HERE}:{line_of('# out of range only')}") as info:
        bad.wait(timeout=30)
    assert "IndexError" in str(info.value) and "jit_replay" in str(info.value)
    assert jitted(x, mv.array([4, 0])).to_numpy().tolist() == [9, 1]


# ---- asynchrony, the DAG, memory ----------------------------------------------------------

HOLD, GATE = gated_op("jit_test_hold")


@pytest.mark.parametrize("engine_name", ["dag", "dag-queued"])
def test_replays_return_at_once_and_overlap_with_other_work(engine_name):
    mv.init(engine="dag", dispatch="queued" if engine_name == "dag-queued" else "inline")
    mv.set_device(mv.create_cpu_device())
    other = mv.create_cpu_device()
    jitted = mv.jit(lambda x: build(HOLD, [x + 1.0]) * 2.0)
    system = get_system()
    n = system.devices.get(system.current_device()).inline_limit // 8 + 1
    x = mv.ones(n)   # over the inline limit: the replay runs on the device's thread
    GATE.set()
    assert jitted(x).to_numpy().tolist() == [4.0] * n
    GATE.clear()
    try:
        start = time.perf_counter()
        held = jitted(x)
        assert time.perf_counter() - start < 5
        with mv.device(other):
            assert float((mv.ones(8) * 3.0).sum()) == 24.0  # runs while the replay waits
        assert not held._storage.current.done
    finally:
        GATE.set()
    assert held.to_numpy().tolist() == [4.0] * n


def test_after_replays_the_dag_is_empty_and_the_arena_is_freed_with_the_function(engine):
    x = mv.ones(1000, dtype=np.float32)
    jitted = mv.jit(lambda x: ((x * 2.0 + 1.0) * x).sum(), fuse=False)  # two slots
    assert float(jitted(x)) == 3000.0     # the recording's result is not kept
    assert_settled(x)
    results = [jitted(x) for _ in range(3)]
    plan_bytes = jitted.stats()["plan_bytes"]
    assert plan_bytes == 2 * 4096
    assert jitted.stats()["kept_bytes"] == 0   # the results kept for reuse: all held
    del results
    mv.wait_for_all(timeout=30)
    stats = mv.dag_stats()
    assert stats["n_op_nodes"] == 0 and stats["n_pending"] == 0
    kept = jitted.stats()["kept_bytes"]
    assert kept == 2 * 4     # the last two results (float32 scalars), held by the plan alone
    assert mv.memory_stats()["in_use_bytes"] == x.nbytes + plan_bytes + kept
    del jitted
    gc.collect()
    assert_settled(x)


# ---- traces -----------------------------------------------------------------------------------

def test_a_trace_shows_one_jit_replay_slice_per_segment_replay(engine, tmp_path):
    mv.set_device(mv.create_cpu_device())
    other = mv.create_cpu_device()

    def f(x):
        y = x * 2.0
        with mv.device(other):
            z = y + 1.0
        return z * y
    jitted = mv.jit(f)
    x = mv.ones(4)
    jitted(x).wait(timeout=30)
    _, replays = traced_replays(lambda: [jitted(x) for _ in range(3)],
                                str(tmp_path / "t.json"))
    assert len(replays) == 3 * jitted.stats()["n_segments"] == 9
    assert all(e["args"]["created_at"].startswith(HERE + ":") for e in replays)
    assert len({e["pid"] for e in replays}) == 2   # one track per device


# ---- other listeners at the seam, runtimes ----------------------------------------------

def test_a_jitted_call_inside_an_autograd_recording_is_differentiated(engine):
    f = mv.jit(lambda x: (x * x).sum())
    f(mv.ones(3))
    f(mv.ones(3))
    w = mv.array([1.0, 2.0, 3.0])
    w.attach_grad()
    with mv.autograd.record():
        loss = f(w)
    loss.backward()
    assert w.grad.to_numpy().tolist() == [2.0, 4.0, 6.0]
    assert f.stats()["n_eager"] == 1


def test_a_jitted_function_called_inside_another_one(engine):
    inner = mv.jit(lambda x: x * 3.0)
    inner(mv.ones(2))
    outer = mv.jit(lambda x: inner(x + 1.0).sum())
    for value in (1.0, 2.0, 5.0):
        assert float(outer(mv.full(2, value))) == 2 * 3.0 * (value + 1.0)
    assert outer.stats()["n_replays"] == 2


def test_an_arguments_gradient_buffer_is_part_of_the_signature(engine):
    def f(x):
        with mv.autograd.record():
            loss = (x * x).sum()
        loss.backward()
        return loss
    jitted = mv.jit(f)
    a, b = mv.ones(3), mv.full(3, 2.0)
    for x in (a, b):
        x.attach_grad()
        jitted(x)
    assert a.grad.to_numpy().tolist() == [2.0] * 3
    assert b.grad.to_numpy().tolist() == [4.0] * 3
    with pytest.raises(mv.autograd.AutogradError):
        jitted(mv.ones(3))   # no gradient buffer: records, and fails as eagerly


def test_a_new_runtime_records_again():
    jitted = mv.jit(lambda x: x * 2.0 + 1.0)
    for _ in range(2):
        mv.init()
        for value in (1.0, 2.0):
            assert_same(mv.full(3, 2 * value + 1.0), jitted(mv.full(3, value)))
        mv.shutdown()
    assert jitted.stats()["n_records"] == 2 and jitted.stats()["n_replays"] == 2
