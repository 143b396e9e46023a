"""``mv.jit``: a jitted function gives its eager results bitwise — element-wise chains,
matmul, reductions, views, item writes, in-place updates of arguments and of captured
arrays (closures, globals, attributes), any result structure, several devices, a whole
autograd training step — under every engine; random ops draw fresh values per replay,
following the seed; signatures and stats. Errors, memory, asynchrony and traces are in
test_jit_runtime.py; random programs in test_jit_programs.py."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import minerva as mv
from tests.support.jit_fixtures import assert_same, assert_trees_same, upload

N_CALLS = 4
RNG = np.random.default_rng(7)
W = RNG.standard_normal((6, 4)).astype(np.float32)
B = RNG.standard_normal(4).astype(np.float32)


def run_both(make, calls, check=False):
    """``make()`` gives ``(fn, state)``: a fresh function and the arrays it updates. The
    function runs eagerly and jitted, each from its own equal state, on every call of
    ``calls`` (tuples of NumPy arrays, uploaded anew for each side, and plain values);
    every result, argument and state array must be bitwise equal after every call: the
    plan fuses only the exact kernels (``fuse="exact"``; the transcendental functions of
    numexpr may differ from NumPy's in the last bits, tests/jit/test_fusion.py). The
    jitted function is returned."""
    eager, eager_state = make()
    fn, jit_state = make()
    jitted = mv.jit(fn, check=check, fuse="exact")
    for call in calls:
        args_eager, args_jit = upload(call), upload(call)
        assert_trees_same(eager(*args_eager), jitted(*args_jit))
        for a, b in zip(args_eager + eager_state, args_jit + jit_state):
            if isinstance(a, mv.NArray):
                assert_same(a, b)
    stats = jitted.stats()
    assert stats["n_records"] == 1 and stats["n_replays"] == len(calls) - 1
    return jitted


def batches(shape, n=N_CALLS, dtype=np.float32, seed=0):
    """``n`` calls of one random array each."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape).astype(dtype),) for _ in range(n)]


# ---- what a function computes -----------------------------------------------------------

def test_element_wise_chains_matmul_reductions_and_views(engine):
    def make():
        w = mv.array(W)

        def f(x):
            y = mv.tanh(x @ w + B) * 2.0 - 0.5
            z = (y.T[1:3] ** 2).reshape(-1)          # views: .T, a slice, reshape
            s = y.sum(axis=0) + y.max(axis=1, keepdims=True).mean()
            u = mv.exp(-abs(y[::2, ::-1])) / (1.0 + y[::2].T.T)
            return y, z, s, u.argmax(axis=1), y.reshape(4, 2, -1)[1:, 0]
        return f, [w]
    run_both(make, batches((8, 6)))


def test_item_writes_with_basic_advanced_and_mask_indices(engine):
    def make():
        def f(x, index, mask):
            x[0] = 1.5                               # basic
            x[1:3, ::2] += x[5:7, 1::2]              # basic, overlapping reads
            x[index] = x[index] * 2.0                # integer array
            x[[0, 2], 1] -= 1.0                      # list index (a constant)
            x[mask] = 0.0                            # mask argument
            t = x * 1.0
            t[t > 1.0] = -1.0                        # mask made inside
            t[index, 0] = t[index, 1]
            return t
        return f, []
    rng = np.random.default_rng(3)
    calls = [(rng.standard_normal((8, 4)), rng.integers(0, 8, 3), rng.random((8, 4)) < 0.3)
             for _ in range(N_CALLS)]
    run_both(make, calls)


STATE = {}


def test_in_place_updates_of_arguments_closures_globals_and_attributes(engine):
    class Model:
        def __init__(self):
            self.w = mv.array(W)

    def make():
        model, closed = Model(), mv.zeros(4, dtype=np.float32)
        key = len(STATE)                             # the eager side's, then the jitted's
        STATE[key] = mv.zeros((), dtype=np.float32)

        def f(x, y):
            x *= 0.5                                 # an argument
            model.w -= (x.T @ (x @ model.w)) * 1e-3  # an attribute
            closed[...] = closed * 0.9 + y           # a closure
            total = STATE[key]                       # a global, through a dict
            total += y.sum()
            model.w[0, :] = closed                   # a write through a view
            return None
        return f, [model.w, closed, STATE[key]]

    rng = np.random.default_rng(1)
    calls = [(rng.standard_normal((5, 6)).astype(np.float32),
              rng.standard_normal(4).astype(np.float32)) for _ in range(N_CALLS)]
    STATE.clear()
    jitted = run_both(make, calls)
    assert jitted(*upload(calls[0])) is None


Pair = collections.namedtuple("Pair", "first second")


def test_results_may_be_tuples_lists_dicts_namedtuples_or_none(engine):
    def make():
        w = mv.array(W)

        def f(x, kind):
            y = x @ w
            if kind == "tuple":
                return y, (y.sum(), [y.T, None]), 3
            if kind == "list":
                return [y[0], y[1:]]
            if kind == "dict":
                return {"y": y, "nested": {"s": y.sum(axis=1)}, "w": w, "x": x}
            if kind == "namedtuple":
                return Pair(y, y * 2.0)
            return None
        return f, [w]

    x = np.ones((3, 6), np.float32)
    calls = [(x * i, kind) for kind in ("tuple", "list", "dict", "namedtuple", "none")
             for i in range(2)]
    eager, _ = make()
    jitted = mv.jit(make()[0])
    for call in calls:
        want, got = eager(*upload(call)), jitted(*upload(call))
        assert type(want) is type(got)
        assert_trees_same(want, got)
    assert jitted.stats()["n_records"] == 5 and jitted.stats()["n_replays"] == 5


def test_segments_on_several_devices(engine):
    devices = [mv.create_cpu_device() for _ in range(3)]
    mv.set_device(devices[0])

    def make():
        with mv.device(devices[1]):
            acc = mv.zeros(4, dtype=np.float32)      # a capture on device 1
        w = mv.array(W)

        def f(x):
            y = x @ w
            with mv.device(devices[1]):
                z = mv.sqrt(abs(y)) + y.sum(axis=0)
                acc[...] += z.sum(axis=0)            # written on its own device
            with mv.device(devices[2]):
                u = z * y
                w[1:3] -= 1e-3 * (x.T @ u)[1:3]      # a write runs where w lives
            return u.sum(), z
        return f, [acc, w]

    jitted = run_both(make, batches((5, 6)))
    assert jitted.stats()["n_segments"] == 4
    result, z = jitted(*upload(batches((5, 6), 1)[0]))
    assert (result.device, z.device) == (devices[0], devices[1])


def test_a_whole_training_step_with_autograd_dropout_and_sgd(engine):
    rng = np.random.default_rng(5)
    sizes, n = (12, 16, 5), 8
    init = [(rng.standard_normal((a, b)) * 0.3).astype(np.float32)
            for a, b in zip(sizes, sizes[1:])]
    data = [(rng.standard_normal((n, sizes[0])).astype(np.float32), rng.integers(0, 5, n))
            for _ in range(N_CALLS + 1)]

    def train(jit: bool):
        mv.random.seed(11)
        ws = [mv.array(w) for w in init]
        for w in ws:
            w.attach_grad()

        def step(x, y):
            with mv.autograd.record():
                h = mv.nn.dropout(mv.relu(x @ ws[0]), 0.25)
                loss = mv.nn.cross_entropy(h @ ws[1], y)
            loss.backward()
            with mv.autograd.pause():
                for w in ws:
                    w -= 0.1 * w.grad
            return loss
        step = mv.jit(step) if jit else step
        losses = [step(*upload(call)) for call in data]
        return losses + ws + [w.grad for w in ws]

    for want, got in zip(train(False), train(True)):
        assert_same(want, got)


# ---- random draws ------------------------------------------------------------------------

def noisy(x):
    return mv.nn.dropout(x, 0.5) + mv.randn(x.shape, dtype=np.float32)


def draws(fn, n=N_CALLS, seed=3):
    mv.random.seed(seed)
    x = mv.ones(16, dtype=np.float32)
    return [fn(x).to_numpy() for _ in range(n)]


def test_random_ops_draw_fresh_values_at_each_replay(engine):
    values = draws(mv.jit(noisy))
    for i in range(len(values)):
        for j in range(i):
            assert not np.array_equal(values[i], values[j])


def test_random_draws_follow_the_seed_as_eager_ones_do(engine):
    eager = draws(noisy)
    for jitted in (draws(mv.jit(noisy)), draws(mv.jit(noisy)), draws(mv.jit(noisy, check=True))):
        for want, got in zip(eager, jitted):
            assert_same(want, got)
    assert not np.array_equal(draws(mv.jit(noisy), seed=4)[1], eager[1])


def test_an_explicit_dropout_seed_stays_fixed(engine):
    fixed = mv.jit(lambda x: mv.nn.dropout(x, 0.5, seed=42))
    x = mv.ones(64)
    assert_same(fixed(x), fixed(x))


# ---- signatures ---------------------------------------------------------------------------

def test_a_new_signature_records_again_and_an_old_one_replays(engine):
    mv.set_device(mv.create_cpu_device())
    other = mv.create_cpu_device()
    f = mv.jit(lambda x, y, scale: (x * scale + y).sum(axis=0))
    x, y = mv.ones((3, 4)), mv.ones((3, 4))
    calls = [(x, y, 2.0),                                # 1 record
             (x * 3.0, y, 2.0),                          # replay: new values
             (mv.ones((5, 4)), mv.ones((5, 4)), 2.0),    # 2 shape
             (x.astype(np.float32), y.astype(np.float32), 2.0),  # 3 dtype
             (x.to(other), y.to(other), 2.0),            # 4 device
             (x, y, 3.0),                                # 5 a value
             (x, x, 2.0),                                # 6 one array twice
             (mv.ones((3, 8))[:, ::2], y, 2.0),          # 7 a view
             (x, y, 2.0)]                                # replay
    for args in calls:
        want = (args[0] * args[2] + args[1]).sum(axis=0)
        got = f(*args)
        assert_same(want, got)
        assert got.device == want.device
    with mv.device(other):                               # 8 the current device
        assert f(x, y, 2.0).device == other
    stats = f.stats()
    assert (stats["n_records"], stats["n_replays"], stats["n_signatures"]) == (8, 2, 8)


def test_stats_count_ops_segments_and_the_plan_bytes(engine):
    def f(x):
        a = x * 2.0               # three tmps of 4000 bytes, in two arena slots: ``c``
        b = a + 1.0               # takes ``a``'s slot, dead by then
        c = b * b
        v = c.reshape(10, 100).T  # views are no ops
        return v.sum()
    jitted = mv.jit(f, fuse=False)   # the unfused plan (fusion: tests/jit/test_fusion.py)
    x = mv.ones(1000, dtype=np.float32)
    for _ in range(3):
        assert float(jitted(x)) == 9000.0
    assert jitted.stats() == {"n_records": 1, "n_replays": 2, "n_checks": 0, "n_eager": 0,
                              "n_signatures": 1, "n_evictions": 0, "n_ops": 4,
                              "n_segments": 1, "n_fused": 0, "n_fused_kernels": 0,
                              "plan_bytes": 2 * 4096,
                              "kept_bytes": 2 * 4}   # both replays' results, dropped


def test_drawn_and_explicit_seeds_mix(engine):
    mixed = mv.jit(lambda x: mv.nn.dropout(x, 0.5, seed=7) + mv.nn.dropout(x, 0.5))
    x = mv.ones(256)
    first, second = mixed(x), mixed(x)
    fixed = mv.nn.dropout(x, 0.5, seed=7).to_numpy()
    for result in (first, second):
        drawn = result.to_numpy() - fixed
        assert set(np.unique(drawn)) <= {0.0, 2.0}
    assert not np.array_equal(first.to_numpy(), second.to_numpy())


def test_an_array_kept_from_the_recording_is_warned_about(engine, monkeypatch):
    import sys
    jit_function = sys.modules["minerva.jit.function"]  # mv.jit is the function, not the package
    warnings = []

    class Log:
        def warning(self, event, **fields):
            warnings.append((event, fields))
    monkeypatch.setattr(jit_function, "log", Log())
    kept = []

    def step(x):
        state = x * 2.0
        kept.append(state)  # made while recording, held by Python: replays can't update it
        return x + 1.0
    mv.jit(step)(mv.ones(2))
    assert [event for event, _ in warnings] == ["jit_kept_array"]
    assert warnings[0][1]["made_at"].startswith("test_jit.py:")
