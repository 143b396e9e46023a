"""Small jit replays run at once on the calling thread (``Engine.run_nested_now``): the
same bits as eager minerva, NumPy and the replay on the device's thread (random chains,
in-place updates, views as arguments), the same errors (at the step's line, written arrays
poisoned), floating-point warnings at the calling line, traces on the caller's track, two
devices; big replays and replays of pending inputs still go to the device's thread."""
from __future__ import annotations

import gc
import os
import threading
import warnings

import numpy as np
import pytest

import minerva as mv
from minerva.builder import build
from minerva.current import get_system
from minerva.jit.segment import NOW_STEPS
from minerva.ops import registry
from tests.conftest import assert_settled, start_engine
from tests.support.gates import gated_op
from tests.support.jit_fixtures import assert_same
from tests.support.trace_checks import traced_replays

HERE = os.path.basename(__file__)
THREADS: list = []


def _where_infer(x):
    return (x,)


def _where_impl(xp, x, *, out):
    THREADS.append(threading.get_ident())
    out[...] = x


WHERE = registry.register("jit_inline_test_where", _where_infer, _where_impl)
"""A copy that notes the thread its kernel ran on."""
HOLD, GATE = gated_op("jit_inline_test_hold")


def noted(x):
    """``x`` copied by the op that notes its thread."""
    return build(WHERE, [x])


def line_of(marker: str) -> int:
    """The line of this file holding ``marker`` (once)."""
    with open(__file__, encoding="utf-8") as source:
        lines = [i for i, text in enumerate(source, 1) if marker in text]
    assert len(lines) == 2, lines  # the marker, and the search for it
    return lines[0]


def replayed_on(jitted, *args):
    """``(result, thread idents)`` of one call of ``jitted`` (a replay)."""
    mv.wait_for_all(timeout=30)
    THREADS.clear()
    result = jitted(*args)
    mv.wait_for_all(timeout=30)
    return result, list(THREADS)


def inline_limit() -> int:
    """The current device's ``inline_limit``: the bytes a replay on the caller may touch."""
    system = get_system()
    return system.devices.get(system.current_device()).inline_limit


def off_the_caller(device_id=None) -> None:
    """Make the device run nothing on the calling thread (the reference: the DAG path)."""
    system = get_system()
    device_id = system.current_device() if device_id is None else device_id
    system.devices.get(device_id).inline_limit = 0


# ---- random element-wise chains ---------------------------------------------------------

BINARY = ("add", "subtract", "multiply", "maximum", "minimum", "safe_divide", "where")
UNARY = ("negative", "absolute", "square", "sqrt_abs", "scalar_mul", "scalar_rsub",
         "scalar_div", "exp_small")


def random_program(seed: int):
    """A chain of 5 to 40 element-wise ops over three tiny arrays (broadcast rows, a
    column, scalars), written once for NumPy and minerva (``ns``)."""
    rng = np.random.default_rng(seed)
    ops = []
    for k in range(int(rng.integers(5, 41))):
        names = BINARY if rng.random() < 0.5 else UNARY
        ops.append((names[int(rng.integers(len(names)))], int(rng.integers(k + 3)),
                    int(rng.integers(k + 3)), float(rng.choice([0.5, 1.25, -2.0, 3.0]))))

    def program(ns, a, b, c):
        values = [a, b, c]
        for name, i, j, scalar in ops:
            values.append(_apply(ns, name, values[i], values[j], scalar))
        return values[-1], values[-2] * 1.0
    return program


def _apply(ns, name, x, y, scalar):
    table = {
        "add": lambda: x + y, "subtract": lambda: x - y, "multiply": lambda: x * y,
        "maximum": lambda: ns.maximum(x, y), "minimum": lambda: ns.minimum(x, y),
        "safe_divide": lambda: x / (abs(y) + 1.0), "where": lambda: ns.where(x > y, x, y),
        "negative": lambda: -x, "absolute": lambda: abs(x), "square": lambda: x * x,
        "sqrt_abs": lambda: ns.sqrt(abs(x)), "scalar_mul": lambda: x * scalar,
        "scalar_rsub": lambda: scalar - x, "scalar_div": lambda: x / scalar,
        "exp_small": lambda: ns.exp(ns.minimum(x, 2.0))}
    return table[name]()


def program_inputs(seed: int, dtype) -> list:
    rng = np.random.default_rng(seed + 1000)
    return [rng.standard_normal((3, 4)).astype(dtype),
            rng.standard_normal(4).astype(dtype),
            rng.standard_normal((3, 1)).astype(dtype)]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("fuse", [False, "exact"])
def test_random_chains_on_the_caller_give_numpys_and_eager_bits(engine, seed, fuse):
    program = random_program(seed)
    dtype = np.float32 if seed % 2 else np.float64
    host = program_inputs(seed, dtype)
    with np.errstate(all="ignore"):
        want = program(np, *host)
    arrays = [mv.array(a) for a in host]
    with np.errstate(all="ignore"):
        eager = program(mv, *arrays)
        jitted = mv.jit(lambda a, b, c: program(mv, a, b, c), fuse=fuse)
        jitted(*arrays)
        for _ in range(3):
            got = jitted(*arrays)
    for w, e, g in zip(want, eager, got):
        assert_same(w, e)
        assert_same(w, g)


@pytest.mark.parametrize("seed", range(6))
def test_fused_chains_give_the_same_bits_on_the_caller_and_on_the_device(seed):
    program = random_program(seed)
    host = program_inputs(seed, np.float32)
    results = []
    for on_caller in (True, False):
        mv.init()
        if not on_caller:
            off_the_caller()
        arrays = [mv.array(a) for a in host]
        jitted = mv.jit(lambda a, b, c: program(mv, a, b, c), fuse=True)
        with np.errstate(all="ignore"):
            jitted(*arrays)
            results.append([r.to_numpy() for r in jitted(*arrays)])
    for a, b in zip(*results):
        assert_same(a, b)


# ---- which thread runs a replay -----------------------------------------------------------

def test_a_small_replay_runs_on_the_calling_thread_and_a_big_one_on_the_device():
    mv.init(engine="dag")
    jitted = mv.jit(lambda x: noted(x * 2.0) + 1.0)
    big = inline_limit() // 8 + 1   # float64s: the input alone is over the limit
    for n, on_caller in ((16, True), (big, False)):
        x = mv.array(np.arange(n, dtype=np.float64))
        jitted(x).wait(timeout=30)
        result, threads = replayed_on(jitted, x)
        assert (threads == [threading.get_ident()]) == on_caller, (n, threads)
        assert_same(np.arange(n) * 2.0 + 1.0, result)


@pytest.mark.parametrize("n, n_steps", [(4, NOW_STEPS + 1), (8192, 300)])
def test_a_replay_of_many_steps_or_much_work_runs_on_the_device(n, n_steps):
    mv.init(engine="dag")

    def chain(x):
        for _ in range(n_steps - 1):
            x = x + 1.0
        return noted(x)
    jitted = mv.jit(chain, fuse=False)
    x = mv.zeros(n)
    jitted(x).wait(timeout=30)
    result, threads = replayed_on(jitted, x)
    assert threads and threads[0] != threading.get_ident()
    assert_same(np.full(n, n_steps - 1.0), result)


def test_a_replay_of_a_pending_input_returns_at_once_and_runs_on_the_device():
    mv.init(engine="dag")
    jitted = mv.jit(lambda x: noted(x + 1.0) * 3.0)
    x = mv.ones(4)
    jitted(x).wait(timeout=30)
    GATE.clear()
    try:
        pending = build(HOLD, [x])
        THREADS.clear()
        result = jitted(pending)
        assert not result._storage.current.done
    finally:
        GATE.set()
    assert_same(np.full(4, 6.0), result)
    assert THREADS and THREADS[0] != threading.get_ident()


def test_a_write_waiting_for_a_pending_reader_takes_the_device_path_in_order():
    mv.init(engine="dag")
    w = mv.ones(4)
    jitted = mv.jit(lambda g: w.__isub__(noted(g) * 0.5))
    jitted(mv.ones(4))
    GATE.clear()
    try:
        read = build(HOLD, [w])        # reads w's current value: pending
        jitted(mv.ones(4))             # writes w: waits for that reader
    finally:
        GATE.set()
    assert_same(np.full(4, 0.5), read)
    assert_same(np.zeros(4), w)


# ---- in-place updates, views -------------------------------------------------------------

@pytest.mark.parametrize("fuse", [False, "exact"])
def test_in_place_updates_of_captures_on_the_caller_follow_numpy(engine, fuse):
    rng = np.random.default_rng(3)
    w0, grads = rng.standard_normal(6), [rng.standard_normal(6) for _ in range(5)]
    w, m = mv.array(w0), mv.zeros(6)

    def step(g):
        m.__imul__(0.9)
        m.__iadd__(g)
        w.__isub__(0.1 * m)
        return (w * w).sum()
    jitted = mv.jit(step, fuse=fuse)
    host_w, host_m = w0.copy(), np.zeros(6)
    for g in grads:
        host_m *= 0.9
        host_m += g
        host_w -= 0.1 * host_m
        assert_same(np.sum(host_w * host_w), jitted(mv.array(g)))
    assert_same(host_w, w)
    assert_same(host_m, m)
    assert jitted.stats()["n_replays"] == 4
    del jitted   # and its arena
    gc.collect()
    assert_settled(w, m)


def test_views_as_arguments_move_with_each_call_and_write_through(engine):
    data = np.arange(40.0).reshape(10, 4)
    x = mv.array(data)

    def f(rows):
        rows += 1.0
        return rows * 2.0
    jitted = mv.jit(f)
    for i in range(8):
        got = jitted(x[i:i + 2])
        data[i:i + 2] += 1.0
        assert_same(data[i:i + 2] * 2.0, got)
    assert_same(data, x)
    assert jitted.stats()["n_records"] == 1


# ---- errors, floating-point reports ------------------------------------------------------

def test_an_error_in_a_replay_on_the_caller_names_the_step_and_poisons_what_it_writes(
        engine):
    w = mv.zeros(3)

    def f(x, index):
        w.__iadd__(1.0)
        return x[index] * 2.0   # out of range at the second call
    jitted = mv.jit(f)
    x = mv.arange(5.0)
    assert_same(np.array([2.0, 4.0]), jitted(x, mv.array([1, 2])))
    bad = jitted(x, mv.array([1, 7]))
    assert bad._storage.current.done    # it ran at once
    with pytest.raises(mv.OpError, match=f"{HERE}:{line_of('# out of range at the')}") as info:
        bad.wait(timeout=30)
    assert "IndexError" in str(info.value) and "jit_replay" in str(info.value)
    with pytest.raises(mv.OpError, match="IndexError"):
        w.to_numpy()
    with pytest.raises(mv.OpError, match="IndexError"):   # w stays poisoned, as eagerly
        jitted(x, mv.array([4, 0])).wait(timeout=30)


def test_floating_point_warnings_of_a_replay_on_the_caller_name_the_calling_line(engine):
    jitted = mv.jit(lambda x: 1.0 / x, fuse=False)
    x = mv.array([0.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jitted(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = jitted(x)   # the calling line
    assert [str(w.message) for w in caught] == ["divide by zero encountered in jit_replay"]
    assert (os.path.basename(caught[0].filename), caught[0].lineno) == \
        (HERE, line_of("# the calling line"))
    assert_same(np.array([np.inf, 0.5]), result)


def test_a_raising_error_state_fails_the_replay_at_the_steps_line(engine):
    def f(x):
        return (x + 1.0) / x   # divides by zero
    jitted = mv.jit(f)
    x = mv.array([0.0, 1.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        jitted(x)
        jitted(x)
    with np.errstate(divide="raise"):
        failed = jitted(x)
    with pytest.raises(mv.OpError, match=f"{HERE}:{line_of('# divides by zero')}") as info:
        failed.wait(timeout=30)
    assert isinstance(info.value.__cause__, FloatingPointError)


# ---- traces, devices ---------------------------------------------------------------------

def test_a_trace_shows_a_replay_on_the_callers_track_with_its_steps(engine, tmp_path):
    jitted = mv.jit(lambda x: (x * 2.0 + 1.0) * x, fuse=False)
    x = mv.ones(4)
    jitted(x).wait(timeout=30)
    trace, replays = traced_replays(lambda: [jitted(x) for _ in range(3)],
                                    str(tmp_path / "t.json"))
    assert len(replays) == 3
    assert all(e["args"]["created_at"].startswith(HERE + ":") for e in replays)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    if engine != "naive":
        assert {names[(e["pid"], e["tid"])] for e in replays} == {"cpu0:caller"}
    steps = [e for e in trace["traceEvents"] if e.get("cat") == "jit-step"]
    assert len(steps) == 3 * 3 and {e["name"] for e in steps} == \
        {"multiply_scalar", "add_scalar", "multiply"}


def test_a_function_over_two_devices_replays_each_segment_where_it_may(runtime):
    _engine, devices = runtime
    other = devices[-1]

    def f(x):
        y = noted(x * 2.0)
        with mv.device(other):
            z = (y + 1.0) * 3.0   # reads y from the first device: a copy, the DAG path
        return z, y - 1.0
    jitted = mv.jit(f)
    host = np.linspace(-1.0, 1.0, 6)
    x = mv.array(host)
    jitted(x)
    (z, y), threads = replayed_on(jitted, x)
    assert threads == [threading.get_ident()]   # the first segment ran on the caller
    assert_same((host * 2.0 + 1.0) * 3.0, z)
    assert_same(host * 2.0 - 1.0, y)
    assert z.device == other
    del jitted   # and its arenas
    gc.collect()
    assert_settled(x, z, y)
