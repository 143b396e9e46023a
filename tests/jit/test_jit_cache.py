"""``mv.jit``'s plan cache: arguments that are views of one shape, dtype and strides share a
plan whatever their offset (each replay reads its call's own offset), told apart by how
they alias one another; a plan that reads an argument's storage through another handle
keeps to its offsets; the cache is bounded (least recently used, ``max_plans``), its
evictions counted and their memory freed; dropping the function frees its plans and its
captures at once, without the garbage collector."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import minerva as mv
from tests.conftest import assert_settled
from tests.support.jit_fixtures import assert_same
from minerva.jit import MAX_PLANS

RNG = np.random.default_rng(17)
BATCH = 32


def mini_batches(n_rows: int, step: int = BATCH):
    """Start rows of the mini-batches ``data[i:i+BATCH]`` of ``n_rows`` rows."""
    return range(0, n_rows - BATCH + 1, step)


# ---- views share a plan -------------------------------------------------------------------

def forward(x, w):
    """Element-wise ops, views of the argument (slices, a transpose, a reshape), a
    reduction: NumPy's numbers bitwise, on NumPy or minerva arrays."""
    y = x * w + 0.5
    z = y[1:] - y[:-1] * 2.0
    t = (z.T[::2] * 3.0).reshape(-1)
    return z.sum(axis=0), t, y[5]


VIEWS = {                                    # start row -> a mini-batch, on either side
    "rows": lambda d, i: d[i:i + BATCH],
    "rows, every other column": lambda d, i: d[i:i + BATCH, ::2],
    "reversed rows": lambda d, i: d[::-1][i:i + BATCH],
    "columns of the transpose": lambda d, i: d.T[:, i:i + BATCH].T,
}


@pytest.mark.parametrize("view", VIEWS.values(), ids=VIEWS.keys())
def test_mini_batch_views_share_one_plan_and_give_numpys_numbers(engine, view):
    data = RNG.standard_normal((20 * BATCH, 16)).astype(np.float32)
    w = RNG.standard_normal(view(data, 0).shape[1]).astype(np.float32)
    device_data, device_w = mv.array(data), mv.array(w)
    jitted = mv.jit(lambda x: forward(x, device_w))
    starts = mini_batches(len(data), 23)
    for i in starts:
        got = jitted(view(device_data, i))
        eager = forward(view(device_data, i), device_w)
        for want_np, want_eager, have in zip(forward(view(data, i), w), eager, got):
            assert_same(want_np, have)
            assert_same(want_eager, have)
    stats = jitted.stats()
    assert (stats["n_records"], stats["n_replays"]) == (1, len(starts) - 1)
    assert stats["n_signatures"] == 1


def test_a_training_step_over_mini_batch_views_is_bitwise_the_eager_step(engine):
    data = RNG.standard_normal((8 * BATCH, 12)).astype(np.float32)
    labels = RNG.integers(0, 5, len(data))
    init = (RNG.standard_normal((12, 5)) * 0.3).astype(np.float32)

    def train(jit: bool):
        w = mv.array(init)
        w.attach_grad()

        def step(x, y):
            with mv.autograd.record():
                loss = mv.nn.cross_entropy(mv.tanh(x @ w), y)
            loss.backward()
            with mv.autograd.pause():
                w[...] -= 0.1 * w.grad
            return loss
        step = mv.jit(step) if jit else step
        xs, ys = mv.array(data), mv.array(labels)
        losses = [step(xs[i:i + BATCH], ys[i:i + BATCH]) for i in mini_batches(len(data))]
        return losses, w, step

    eager_losses, eager_w, _ = train(False)
    losses, w, jitted = train(True)
    for want, got in zip(eager_losses + [eager_w, eager_w.grad], losses + [w, w.grad]):
        assert_same(want, got)
    assert (jitted.stats()["n_records"], jitted.stats()["n_replays"]) == (1, 7)


@pytest.mark.parametrize("check", [False, True])
def test_a_replay_writes_through_its_own_views_offset(engine, check):
    def update(x, v):
        x += v                 # in place, through the argument's view
        x[0] = -1.0            # an item write through a view of it
        return x[1:3] * 1.0, x[2:]   # a copy, and a view of the argument
    data = RNG.standard_normal((40, 3)).astype(np.float32)
    v = RNG.standard_normal((4, 3)).astype(np.float32)
    device_data, device_v = mv.array(data), mv.array(v)
    jitted = mv.jit(update, check=check)
    for i in (0, 8, 3, 36, 17):
        want = update(data[i:i + 4], v)
        got = jitted(device_data[i:i + 4], device_v)
        for a, b in zip(want, got):
            assert_same(a, b)
        got[1][0] = 7.0        # the returned view is a view of this call's rows
        data[i + 2] = 7.0
        assert_same(data, device_data)
    assert (jitted.stats()["n_records"], jitted.stats()["n_replays"]) == (1, 4)


def aliased(a, b):
    """A result that depends on whether ``a`` and ``b`` share elements."""
    a *= 2.0
    return b + 1.0


@pytest.mark.parametrize("gap", [0, 2, 4, 6])
def test_arguments_viewing_one_storage_are_told_from_independent_ones(engine, gap):
    data = RNG.standard_normal((64, 2)).astype(np.float32)
    device_data = mv.array(data)
    jitted = mv.jit(aliased)
    for i in (0, 10, 5, 40):
        want = aliased(data[i:i + 4], data[i + gap:i + gap + 4])
        got = jitted(device_data[i:i + 4], device_data[i + gap:i + gap + 4])
        assert_same(want, got)
        apart = [RNG.standard_normal((4, 2)).astype(np.float32) for _ in range(2)]
        got = jitted(*[mv.array(a) for a in apart])
        assert_same(aliased(*apart), got)
    assert_same(data, device_data)
    stats = jitted.stats()
    assert (stats["n_records"], stats["n_signatures"]) == (2, 2)   # aliased, independent


def test_a_whole_array_and_a_view_of_it_as_arguments(engine):
    data = RNG.standard_normal((12, 2)).astype(np.float32)
    device_data = mv.array(data)
    view_first = mv.jit(lambda x, whole: aliased(x, whole))
    whole_first = mv.jit(lambda whole, x: aliased(whole, x))
    for i in (0, 4, 8, 4):
        want = aliased(data[i:i + 4], data)
        assert_same(want, view_first(device_data[i:i + 4], device_data))
        assert_same(data, device_data)
        want = aliased(data, data[i:i + 4])
        assert_same(want, whole_first(device_data, device_data[i:i + 4]))
        assert_same(data, device_data)


def test_a_plan_reading_the_arguments_storage_through_a_capture_keeps_its_offset(engine):
    data = RNG.standard_normal((24, 3)).astype(np.float32)
    device_data = mv.array(data)
    whole = mv.jit(lambda x: x * 2.0 + device_data.sum(axis=0))
    first_rows = mv.jit(lambda x: x + device_data[0:4])
    for i in (0, 4, 8, 0, 4, 20):
        assert_same(data[i:i + 4] * 2.0 + data.sum(axis=0), whole(device_data[i:i + 4]))
        assert_same(data[i:i + 4] + data[0:4], first_rows(device_data[i:i + 4]))
    for jitted in (whole, first_rows):
        stats = jitted.stats()
        assert (stats["n_records"], stats["n_replays"]) == (4, 2)


def test_thousands_of_offsets_record_one_plan(engine):
    n = 3000
    data = np.arange(n + 4, dtype=np.float32) / 7.0
    total = np.zeros(4, dtype=np.float32)
    device_data, device_total = mv.array(data), mv.array(total)

    def accumulate(x):
        device_total[...] += x * 2.0
    jitted = mv.jit(accumulate)
    for i in range(n):
        jitted(device_data[i:i + 4])
        total[...] += data[i:i + 4] * 2.0
    assert_same(total, device_total)
    stats = jitted.stats()
    assert (stats["n_records"], stats["n_replays"], stats["n_signatures"]) == (1, n - 1, 1)
    assert stats["n_evictions"] == 0


# ---- the bound --------------------------------------------------------------------------

def chain(x):
    return ((x * 2.0 + 1.0) * x).sum()


def use(jitted, x) -> None:
    """Two calls: the first records or replays, the second replays (making the arena)."""
    for _ in range(2):
        assert float(jitted(x)) == 3.0 * x.size


def arena_bytes(*sizes) -> int:
    """The arenas of ``chain``'s plans over ``n * 300`` float32: two slots of n*1200 B."""
    return sum(2 * -(-n * 1200 // 256) * 256 for n in sizes)


def test_the_cache_keeps_the_most_recently_used_plans_and_frees_the_others(engine):
    jitted = mv.jit(chain, max_plans=3, fuse=False)   # unfused: each plan has two slots
    arrays = {n: mv.ones(n * 300, dtype=np.float32) for n in range(1, 9)}
    held = sum(a.nbytes for a in arrays.values())
    for n in (1, 2, 3, 1, 4, 5):              # 1 used again: 2 and 3 are evicted
        use(jitted, arrays[n])
    stats = jitted.stats()
    assert (stats["n_records"], stats["n_replays"]) == (5, 7)
    assert (stats["n_signatures"], stats["n_evictions"]) == (3, 2)
    assert stats["plan_bytes"] == arena_bytes(1, 4, 5)
    mv.wait_for_all(timeout=30)
    kept = jitted.stats()["kept_bytes"]   # the dropped results of the replays, for reuse:
    assert kept == 4 * 4                  # two of plan 1's, one of 4's and of 5's (float32)
    assert mv.memory_stats()["in_use_bytes"] == held + arena_bytes(1, 4, 5) + kept
    jitted(arrays[1])                          # kept: replays
    use(jitted, arrays[2])                     # evicted: records again, evicts 4
    stats = jitted.stats()
    assert (stats["n_records"], stats["n_replays"], stats["n_evictions"]) == (6, 9, 3)
    assert stats["plan_bytes"] == arena_bytes(5, 1, 2)
    for n in range(6, 9):                      # beyond the bound: plan_bytes stays bounded
        use(jitted, arrays[n])
    mv.wait_for_all(timeout=30)
    stats = jitted.stats()
    assert (stats["n_signatures"], stats["n_evictions"]) == (3, 6)
    assert stats["plan_bytes"] == arena_bytes(6, 7, 8)
    assert stats["kept_bytes"] == 3 * 4   # one replay of each plan held
    assert mv.memory_stats()["in_use_bytes"] == held + arena_bytes(6, 7, 8) + 3 * 4
    del jitted
    assert_settled(*arrays.values())


def test_the_default_bound(engine):
    jitted = mv.jit(chain)
    assert jitted.max_plans == MAX_PLANS
    for n in range(1, MAX_PLANS + 4):
        jitted(mv.ones(n, dtype=np.float32))
    stats = jitted.stats()
    assert (stats["n_signatures"], stats["n_evictions"]) == (MAX_PLANS, 3)
    assert mv.jit(max_plans=2)(chain).max_plans == 2     # the decorator's form


@pytest.mark.parametrize("bound", [0, -1, 2.5, "8", True, None])
def test_a_bad_bound_is_refused(engine, bound):
    with pytest.raises(ValueError, match="max_plans"):
        mv.jit(chain, max_plans=bound)


# ---- what dropping the function frees ------------------------------------------------------

def jitted_with_captures(devices):
    """A jitted step whose closure alone holds its captured arrays (read and written), with
    a segment on each of ``devices``."""
    weights = mv.array(RNG.standard_normal(64).astype(np.float32))
    counter = mv.zeros(64, dtype=np.float32)

    def step(x):
        counter[...] += 1.0
        total = x * weights
        for device in devices[1:]:
            with mv.device(device):
                total = total + 1.0
        return total.sum()
    return mv.jit(step)


@pytest.mark.parametrize("n_devices", [1, 2])
@pytest.mark.parametrize("n_calls", [1, 2, 5])
def test_dropping_the_function_frees_its_plans_and_captures_without_gc(engine, n_calls,
                                                                      n_devices):
    devices = [mv.create_cpu_device() for _ in range(n_devices)]
    mv.set_device(devices[0])
    step = jitted_with_captures(devices)
    x = mv.ones(64, dtype=np.float32)
    losses = [step(x) for _ in range(n_calls)]
    mv.wait_for_all(timeout=30)
    del step, losses
    assert_settled(x)
    del x
    assert_settled()


class Model:
    """An object keeping its own jitted step: a reference cycle (model, step, model)."""

    def __init__(self):
        self.w = mv.array(RNG.standard_normal(16).astype(np.float32))
        self.step = mv.jit(self.forward)

    def forward(self, x):
        self.w[...] *= 0.5
        return (x * self.w).sum()


def test_a_function_in_a_cycle_with_its_captures_is_freed_by_the_collector(engine):
    model = Model()
    x = mv.ones(16, dtype=np.float32)
    for _ in range(3):
        model.step(x)
    del model
    gc.collect()
    assert_settled(x)
