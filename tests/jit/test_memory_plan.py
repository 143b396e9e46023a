"""The memory plan of a jit segment (minerva/jit/memory.py): in-place writes replay as early
as their values allow, and locals take arena offsets largest first, never sharing a byte
with a local living at the same time; replays keep NumPy's numbers."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from minerva.jit import memory


def _overlap(a, b) -> bool:
    return not (a[1] < b[0] or b[1] < a[0])


@pytest.mark.parametrize("by_size", [True, False], ids=["by_size", "issue_order"])
@pytest.mark.parametrize("seed", range(20))
def test_offsets_never_share_bytes_between_locals_living_at_once(seed, by_size,
                                                                 monkeypatch):
    if not by_size:
        monkeypatch.setattr(memory, "MAX_BY_SIZE", 0)
    rng = np.random.default_rng(seed)
    lives = []
    for _ in range(int(rng.integers(1, 40))):
        first = int(rng.integers(0, 30))
        lives.append((first, first + int(rng.integers(0, 8)), 256 * int(rng.integers(1, 9))))
    placed, total = memory.offsets(lives)
    most_live = max(sum(size for f, l, size in lives if f <= i <= l) for i in range(40))
    assert most_live <= total <= sum(size for *_, size in lives)
    for i, a in enumerate(lives):
        assert 0 <= placed[i] and placed[i] + a[2] <= total
        for j, b in enumerate(lives[:i]):
            if _overlap(a, b):
                assert placed[i] + a[2] <= placed[j] or placed[j] + b[2] <= placed[i]


@pytest.mark.parametrize("by_size", [True, False], ids=["by_size", "issue_order"])
def test_a_larger_local_takes_the_bytes_of_two_dead_ones(by_size, monkeypatch):
    # a and b die before c is made: c (as large as both) lies over them (merged ranges)
    if not by_size:
        monkeypatch.setattr(memory, "MAX_BY_SIZE", 0)
    placed, total = memory.offsets([(0, 1, 256), (0, 1, 256), (2, 3, 512)])
    assert total == 512 and placed[2] == 0


def test_many_long_lived_locals_are_placed_quickly():
    # 20,000 locals, each living until the last step: issue order, one after the other
    n = 20_000
    placed, total = memory.offsets([(k, n, 256) for k in range(n)])
    assert total == n * 256 and sorted(placed) == [256 * k for k in range(n)]


def _updates(x, w1, w2):
    g2 = x @ w2                  # both gradients are made before the updates
    g1 = x @ w1
    w2 -= 0.5 * g2
    w1 -= 0.5 * g1
    return g1.sum()


def test_an_update_replays_before_the_next_gradient_is_made(engine):
    rng = np.random.default_rng(0)
    host = [rng.standard_normal((64, 64)).astype(np.float32) for _ in range(3)]
    x, w1, w2 = (mv.array(h) for h in host)
    step = mv.jit(lambda a: _updates(a, w1, w2))
    want = [h.copy() for h in host]
    for _ in range(3):
        got = step(x)
        expected = _updates(*want)
        np.testing.assert_array_equal(got.to_numpy(), expected)
    np.testing.assert_array_equal(w1.to_numpy(), want[1])
    np.testing.assert_array_equal(w2.to_numpy(), want[2])
    # replayed as g2, 0.5 * g2, w2 -= .., g1, ...: g2 and its product die before g1 is
    # made, so the arena holds two 16 KiB locals at once (three in the recorded order)
    assert step.stats()["plan_bytes"] == 2 * 64 * 64 * 4


def test_a_write_never_moves_above_a_step_that_reads_what_it_writes(engine):
    w = mv.array(np.arange(6, dtype=np.float64))

    def fn(x):
        before = w * x           # reads w before the write: must see the old values
        w[...] += 1.0
        return before, w * x

    step = mv.jit(fn)
    host_w = np.arange(6, dtype=np.float64)
    x = mv.array(np.full(6, 2.0))
    for _ in range(3):
        before, after = step(x)
        want_before = host_w * 2.0
        host_w += 1.0
        np.testing.assert_array_equal(before.to_numpy(), want_before)
        np.testing.assert_array_equal(after.to_numpy(), host_w * 2.0)
