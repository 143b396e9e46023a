"""The memory stores seen through the runtime: every strategy gives the same results, the
accounting is exact after ``wait_for_all``, pooling really reuses blocks, ``release_all``
empties the cache, and ``MINERVA_MEM_POOL`` / ``MINERVA_MEM_LIMIT`` are read at start.

Limits, the out-of-memory ladder and the gated-device safety test are in
``test_memory_limits.py``.
"""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from minerva.current import get_system
from tests.conftest import ENGINES, assert_settled, start_engine
from tests.support.nn_fixtures import run_op

STRATEGIES = ("pooled", "round", "naive")
WAIT = 30.0


@pytest.fixture(params=[(s, e) for s in STRATEGIES for e in ENGINES],
                ids=lambda p: f"{p[0]}-{p[1]}")
def two_devices(request):
    """A runtime with each strategy and engine, two CPU devices; ``(strategy, devices)``."""
    strategy, engine = request.param
    start_engine(engine, mem_pool=strategy, default_dtype="float32")
    devices = [mv.create_cpu_device() for _ in range(2)]
    mv.set_device(devices[0])
    return strategy, devices


def inputs(rng) -> dict:
    """The host inputs of the program."""
    f32 = np.float32
    return {"a": rng.standard_normal((6, 8)).astype(f32),
            "b": rng.standard_normal((8, 5)).astype(f32),
            "v": rng.standard_normal(8).astype(f32),
            "img": rng.standard_normal((2, 3, 6, 6)).astype(f32),
            "w": rng.standard_normal((4, 3, 3, 3)).astype(f32),
            "labels": rng.integers(0, 5, size=6).astype(np.int64)}


def core_program(xp, a, b, v, on_other):
    """Elementwise ops, matmul, reductions, reshapes, slices and joins, written once for
    ``xp`` = minerva or NumPy. ``on_other(f)`` runs ``f`` on the second device (minerva) and
    brings its result back, so values cross devices both ways."""
    e = (a * 2.0 + v) - xp.exp(a) / (xp.abs(a) + 1.0)
    out = {"elementwise": xp.where(a > 0, e, xp.tanh(a)), "matmul": a @ b}
    out["sum0"] = xp.sum(e, axis=0)
    out["max1"] = xp.max(e, axis=1, keepdims=True)
    out["mean"] = xp.mean(e)
    out["reshape_t"] = xp.reshape(a, (4, 12)).T
    out["slice"] = e[1:5, 2:7]
    out["concat"] = xp.concatenate([a, e], axis=0)
    out["stack"] = xp.stack([a, e, a], axis=1)
    out["other"] = on_other(lambda: (a @ b) * 3.0 - out["sum0"][:5])
    out["back"] = out["other"] + a @ b
    return out


def nn_program(logits, labels, img, w, e):
    """A few mv.nn ops chained on minerva arrays."""
    conv = mv.nn.conv2d(img, w, pad=1)
    return {"softmax": mv.nn.softmax(logits), "ce": mv.nn.cross_entropy(logits, labels),
            "ce_backward": mv.nn.cross_entropy_backward(logits, labels),
            "relu_backward": mv.nn.relu_backward(e, logits),
            "pool": mv.nn.max_pool2d(mv.relu(conv), 2)}


def nn_reference(logits, labels, img, w, e):
    """``nn_program`` with each kernel run eagerly on fresh NumPy buffers."""
    conv = run_op(np, "conv2d", img, w, stride=(1, 1), pad=(1, 1))
    return {"softmax": run_op(np, "softmax", logits, axis=-1),
            "ce": run_op(np, "cross_entropy", logits, labels, reduction="mean"),
            "ce_backward": run_op(np, "cross_entropy_backward", logits, labels,
                                  reduction="mean"),
            "relu_backward": e * (logits > 0),
            "pool": run_op(np, "max_pool2d", np.maximum(conv, 0), kernel=(2, 2),
                           stride=None, pad=(0, 0))}


def run_minerva(host: dict, other_device: int) -> dict:
    """The whole program on minerva; NArrays by name."""
    a, b, v, img, w, labels = (mv.array(host[k]) for k in ("a", "b", "v", "img", "w",
                                                            "labels"))

    def on_other(function):
        with mv.device(other_device):
            return function()

    out = core_program(mv, a, b, v, on_other)
    out.update(nn_program(out["matmul"], labels, img, w, out["matmul"] - 0.5))
    out["moved"] = out["stack"].to(other_device)
    return out


def run_numpy(host: dict) -> dict:
    """The same program on NumPy; arrays by name."""
    out = core_program(np, host["a"], host["b"], host["v"], lambda f: f())
    out.update(nn_reference(out["matmul"], host["labels"], host["img"], host["w"],
                            out["matmul"] - np.float32(0.5)))
    out["moved"] = out["stack"]
    return out


def test_every_strategy_and_engine_computes_what_numpy_computes(two_devices, rng):
    """Exactly NumPy's values under each strategy and engine: so all six are identical."""
    host = inputs(rng)
    got = run_minerva(host, two_devices[1][1])
    want = run_numpy(host)
    assert got.keys() == want.keys()
    for name, array in got.items():
        values = array.to_numpy(timeout=WAIT)
        expected = np.asarray(want[name])
        assert values.dtype == expected.dtype and values.shape == expected.shape, name
        np.testing.assert_array_equal(values, expected, err_msg=name)


def test_in_use_bytes_equal_the_held_arrays_then_zero(two_devices, rng):
    """After wait_for_all, in use = bytes of the arrays still held (and their copies)."""
    out = run_minerva(inputs(rng), two_devices[1][1])
    assert_settled(*out.values())
    kept = [out[name] for name in ("other", "moved", "pool", "ce")]
    out.clear()
    assert_settled(*kept)
    assert mv.memory_stats()["in_use_bytes"] >= sum(x.nbytes for x in kept) > 0
    kept.clear()
    assert_settled()
    for dev in two_devices[1]:
        stats = mv.memory_stats(dev)
        assert stats["in_use_bytes"] == 0 and stats["n_live_blocks"] == 0
        assert stats["n_allocs"] == stats["n_frees"] > 0


def step_loop(x, n_steps: int):
    """``n_steps`` steps of two elementwise ops that each make a (64, 64) value."""
    for _ in range(n_steps):
        x = x * 0.5 + 1.0
    return x.wait(timeout=WAIT)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_tiny_chain_hands_each_dead_block_to_the_next_output(engine_and, strategy):
    """The lean direct path: a value that died gives its block to the next tiny output of
    its size (counted as a free, an alloc and a pool hit); never under ``naive``, whose
    frees go back to the system."""
    start(engine_and, strategy)
    store = get_system().devices.get(0).store
    x = mv.zeros(4)
    for _ in range(3):
        x = x + 1.0
    mv.wait_for_all(timeout=WAIT)
    before, recycled = mv.memory_stats(0), store.n_recycled
    for _ in range(50):
        x = x + 1.0
    mv.wait_for_all(timeout=WAIT)
    after = mv.memory_stats(0)
    handed = store.n_recycled - recycled   # (a dispatcher may apply a release itself)
    assert handed == 0 if strategy == "naive" else 40 <= handed <= 50
    assert after["n_allocs"] - before["n_allocs"] == 50
    assert after["n_frees"] - before["n_frees"] == 50
    assert after["in_use_bytes"] == before["in_use_bytes"]
    assert after["n_allocs"] - after["n_frees"] == after["n_live_blocks"]
    if strategy != "naive":
        assert after["n_mallocs"] == before["n_mallocs"]
        assert after["n_pool_hits"] - before["n_pool_hits"] == 50
    np.testing.assert_array_equal(x.to_numpy(timeout=WAIT), np.full(4, 53.0, "f4"))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_tiny_writes_update_the_buffer_in_place_without_a_block(engine_and, strategy):
    """The lean path's writes (``x += 1``, ``x[i] = v``, ``out=``): each makes the next
    version of the storage in the buffer it had, taking no block and freeing none, with
    NumPy's values; the version names the line of the write."""
    start(engine_and, strategy)
    x, rows = mv.zeros(4), mv.zeros((6, 4))
    expected = np.zeros((6, 4), rows.dtype)
    mv.wait_for_all(timeout=WAIT)
    before, version = mv.memory_stats(0), x._storage.current.version
    for i in range(6):
        x += 1.0
        rows[i] = x
        mv.multiply(rows[i], 2.0, out=rows[i])
        expected[i] = 2.0 * (i + 1)
    after = mv.memory_stats(0)
    assert x._storage.current.version == version + 6
    assert after["n_allocs"] == before["n_allocs"] and after["n_frees"] == before["n_frees"]
    np.testing.assert_array_equal(rows.to_numpy(timeout=WAIT), expected)
    line = _line_of("        x += 1.0")
    assert x._storage.current.created_at[1] == line


@pytest.mark.parametrize("strategy", ["pooled", "round"])
def test_a_loop_is_served_from_the_pool(engine_and, strategy):
    """In steady state every alloc of a loop is a pool hit; mallocs stop growing."""
    start(engine_and, strategy)
    x = step_loop(mv.ones((64, 64)), 5)
    mv.wait_for_all(timeout=WAIT)
    before = mv.memory_stats(0)
    x = step_loop(x, 50)
    mv.wait_for_all(timeout=WAIT)
    after = mv.memory_stats(0)
    assert after["n_allocs"] - before["n_allocs"] == 100
    assert after["n_pool_hits"] - before["n_pool_hits"] >= 95
    assert after["n_mallocs"] - before["n_mallocs"] <= 5
    assert after["n_pool_hits"] + after["n_mallocs"] == after["n_allocs"]
    np.testing.assert_array_equal(x.to_numpy(timeout=WAIT), np.full((64, 64), 2.0, "f4"))


def test_the_naive_strategy_never_hits_nor_caches(engine_and):
    """Under ``naive`` every alloc is a malloc and every free a release."""
    start(engine_and, "naive")
    x = step_loop(mv.ones((64, 64)), 20)
    for _ in range(3):
        x = step_loop(x, 5)
        assert mv.memory_stats()["cached_bytes"] == 0
    mv.wait_for_all(timeout=WAIT)
    stats = mv.memory_stats(0)
    assert stats["n_pool_hits"] == 0 and stats["cached_bytes"] == 0
    assert stats["n_mallocs"] == stats["n_allocs"] == 1 + 2 * 35
    assert stats["n_releases"] == stats["n_frees"] == stats["n_allocs"] - 1
    assert mv.release_all() == 0


@pytest.mark.parametrize("strategy", ["pooled", "round"])
def test_release_all_empties_the_cache(engine_and, strategy):
    """release_all gives back every cached byte; held arrays keep their blocks."""
    start(engine_and, strategy)
    held = step_loop(mv.ones((64, 64)), 10)
    side = [mv.ones(n) for n in (100, 3000, 70_000)]
    side.clear()
    assert_settled(held)
    cached = mv.memory_stats()["cached_bytes"]
    assert cached > 0
    assert mv.release_all() == cached
    stats = mv.memory_stats(0)
    assert stats["cached_bytes"] == 0 and stats["in_use_bytes"] == held.nbytes
    assert stats["reserved_bytes"] == stats["n_live_blocks"] * 16384 == 16384
    assert mv.release_all() == 0
    np.testing.assert_array_equal((held + 1).to_numpy(timeout=WAIT), held.to_numpy() + 1)


@pytest.fixture(params=ENGINES)
def engine_and(request) -> str:
    """An engine name; the test starts the runtime itself with ``start``."""
    return request.param


def start(engine: str, strategy: str) -> None:
    """A runtime with one CPU device (id 0) and ``strategy``."""
    start_engine(engine, mem_pool=strategy, default_dtype="float32")
    mv.set_device(mv.create_cpu_device())


@pytest.mark.parametrize("text, limit", [("512K", 512 << 10), ("1.5M", 3 << 19),
                                         ("8G", 8 << 30), ("1048576", 1 << 20),
                                         ("64KiB", 64 << 10), ("2mb", 2 << 20)])
def test_mem_limit_is_read_from_the_environment(monkeypatch, text, limit):
    """``MINERVA_MEM_LIMIT`` sets every device's limit at start."""
    monkeypatch.setenv("MINERVA_MEM_LIMIT", text)
    devices = [mv.create_cpu_device() for _ in range(2)]
    assert [mv.memory_stats(d)["limit_bytes"] for d in devices] == [limit, limit]
    assert mv.memory_stats()["limit_bytes"] == 2 * limit


def test_an_environment_limit_is_enforced(monkeypatch):
    """With ``MINERVA_MEM_LIMIT=512K`` a 1 MiB array fails; a 256 KiB one does not."""
    monkeypatch.setenv("MINERVA_MEM_LIMIT", "512K")
    with pytest.raises(mv.OutOfMemoryError, match="524288 bytes"):
        mv.zeros(1 << 18, dtype=np.float32).wait(timeout=WAIT)
    assert float(mv.ones(1 << 16, dtype=np.float32).sum()) == 1 << 16


@pytest.mark.parametrize("text", ["lots", "12Q", "-5M", ""])
def test_a_bad_mem_limit_is_rejected_at_start(monkeypatch, text):
    """A value that is not a size stops the start with a message naming the variable."""
    monkeypatch.setenv("MINERVA_MEM_LIMIT", text or " M ")
    with pytest.raises(ValueError, match="MINERVA_MEM_LIMIT"):
        mv.init()


@pytest.mark.parametrize("strategy, cached", [("pooled", 3072), ("round", 4096),
                                              ("naive", 0)])
def test_mem_pool_is_read_from_the_environment(monkeypatch, strategy, cached):
    """``MINERVA_MEM_POOL`` picks the rounding: a freed 3000-byte array caches this much."""
    monkeypatch.setenv("MINERVA_MEM_POOL", strategy)
    mv.zeros(750, dtype=np.float32).wait(timeout=WAIT)
    mv.wait_for_all(timeout=WAIT)
    assert mv.memory_stats()["cached_bytes"] == cached


def _line_of(text: str) -> int:
    """The line of this file that starts with ``text``."""
    with open(__file__) as source:
        return next(i for i, line in enumerate(source, 1) if line.startswith(text))


def test_a_big_fresh_output_waits_its_turn_while_ops_are_in_flight():
    """Above ``direct.AHEAD_BYTES`` a fresh output is made on the calling thread only
    while nothing is in flight: behind a pending op an upload of 256 KiB takes no block
    until its turn (the program may run far ahead), a 4 KiB one is made at once."""
    from minerva.builder import build
    from tests.support.gates import gated_op
    mv.init(inline_bytes=1 << 20)
    mv.set_device(mv.create_cpu_device())
    op, gate = gated_op("test_gated_ahead")
    pending = build(op, [mv.zeros(4)])
    try:
        before = mv.memory_stats(0)["in_use_bytes"]
        small = mv.array(np.ones(512))            # 4 KiB: at once
        made = mv.memory_stats(0)["in_use_bytes"]
        big = mv.array(np.ones(32768)) + 1.0      # 256 KiB: queued behind the pending op
        assert small._storage.current.done and not big._storage.current.done
        assert small.nbytes <= made - before < 32768 * 8
    finally:
        gate.set()
    np.testing.assert_array_equal(big.to_numpy(timeout=WAIT), np.full(32768, 2.0))
    pending.wait(timeout=WAIT)
