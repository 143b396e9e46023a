"""The pooled DataStore on a fake allocator that records mallocs and frees (no real memory)."""
from __future__ import annotations

import collections
import random
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minerva.common.config import MEM_POOLS
from minerva.common.errors import OutOfMemoryError
from minerva.common.hooks import HookBus
from minerva.storage import PooledDataStore, make_store, pooled
from minerva.storage.host import HostAllocator
from minerva.storage.pooled import RECLAIM_ROUNDS, RECLAIM_SECONDS
from minerva.common.text import format_bytes
from minerva.storage.strategies import GRANULE, ROUND_CUTOFF, STRATEGIES, get_strategy


class FakeChunk:
    """A token standing for a chunk of ``size`` bytes."""

    def __init__(self, size):
        self.size = size


class FakeAllocator:
    """Hands out FakeChunks, records every malloc and free; past ``capacity`` bytes
    outstanding, malloc raises MemoryError like a full device."""

    def __init__(self, capacity=None):
        self.capacity = capacity
        self.mallocs: list[int] = []
        self.freed: list[FakeChunk] = []
        self.live: set[FakeChunk] = set()
        self.peak = 0
        self._lock = threading.Lock()

    @property
    def outstanding(self):
        return sum(chunk.size for chunk in self.live)

    def malloc(self, nbytes):
        with self._lock:
            if self.capacity is not None and self.outstanding + nbytes > self.capacity:
                raise MemoryError(f"fake device full ({self.outstanding} bytes out)")
            chunk = FakeChunk(nbytes)
            self.mallocs.append(nbytes)
            self.live.add(chunk)
            self.peak = max(self.peak, self.outstanding)
            return chunk

    def free(self, chunk):
        with self._lock:
            self.live.remove(chunk)
            self.freed.append(chunk)

    def view(self, chunk, offset, nbytes, shape, dtype):
        return ("view", chunk, offset, nbytes, shape, dtype)


def new_store(strategy="pooled", capacity=None, recent_slack=0, **kwargs):
    """A store over a fake allocator; no recent block waits for its own size at a miss
    (``recent_slack=0``) unless asked: every miss sees the merged free space."""
    fake = FakeAllocator(capacity)
    return PooledDataStore(fake, strategy=strategy, recent_slack=recent_slack,
                           **kwargs), fake


def chunk_segments(store, block):
    return [s[1:4] for s in store.segments() if s[0] == block.chunk_id]


# ---- best fit, split, merge ------------------------------------------------------------

def test_best_fit_picks_smallest_fitting_block():
    store, fake = new_store()
    blocks = [store.alloc(n) for n in (8192, 2048, 4096)]
    for block in blocks:
        store.free(block)
    assert store.alloc(1500).chunk is blocks[1].chunk
    assert store.alloc(3000).chunk is blocks[2].chunk
    assert len(fake.mallocs) == 3


def test_split_leaves_remainder_free_and_reusable():
    store, fake = new_store()
    whole = store.alloc(8192)
    store.free(whole)
    small = store.alloc(2048)
    assert (small.chunk, small.offset, small.size) == (whole.chunk, 0, 2048)
    assert store.stats()["cached_bytes"] == 6144
    rest = store.alloc(6144)
    assert (rest.chunk, rest.offset) == (whole.chunk, 2048)
    assert store.stats()["cached_bytes"] == 0
    assert fake.mallocs == [8192] and store.stats()["n_pool_hits"] == 2


def test_free_merges_neighbours_so_a_large_request_fits_again():
    store, fake = new_store()
    store.free(store.alloc(8192))
    parts = [store.alloc(2048) for _ in range(4)]
    assert [p.offset for p in parts] == [0, 2048, 4096, 6144]
    store.free(parts[1])
    store.free(parts[3])
    other = store.alloc(4096)          # two separate 2 KiB holes: no fit, a new chunk
    assert other.chunk is not parts[0].chunk and len(fake.mallocs) == 2
    store.free(parts[2])               # joins both holes: 6 KiB free from offset 2048
    assert chunk_segments(store, parts[0]) == [(0, 2048, False), (2048, 6144, True)]
    big = store.alloc(6144)
    assert (big.chunk, big.offset) == (parts[0].chunk, 2048) and len(fake.mallocs) == 2
    store.free(big)
    store.free(parts[0])
    assert chunk_segments(store, parts[0]) == [(0, 8192, True)]
    assert store.release_all() == 8192   # the chunk holding `other` stays
    assert fake.freed == [parts[0].chunk] and fake.live == {other.chunk}


def test_release_all_keeps_partly_used_chunks():
    store, fake = new_store()
    store.free(store.alloc(4096))
    front, back = store.alloc(1024), store.alloc(1024)
    store.free(front)                  # free, live, free: neither free part is a whole chunk
    assert store.release_all() == 0 and fake.freed == []
    assert store.stats()["cached_bytes"] == 3072
    store.free(back)
    assert store.release_all() == 4096 and fake.freed == [back.chunk]


# ---- strategies ------------------------------------------------------------------------

@pytest.mark.parametrize("strategy, nbytes, size", [
    ("pooled", 0, 512), ("pooled", 1, 512), ("pooled", 512, 512), ("pooled", 513, 1024),
    ("pooled", 10**6, 1000448), ("naive", 0, 512), ("naive", 1000, 1024),
    ("naive", 10**6, 1000448), ("round", 0, 512), ("round", 513, 1024),
    ("round", 1025, 2048), ("round", 3000, 4096), ("round", 10**6, 1 << 20),
    ("round", 1 << 24, 1 << 24), ("round", (1 << 24) + 1, (1 << 24) + 4096),
    ("round", 10**8, 100003840),
])
def test_rounding_per_strategy(strategy, nbytes, size):
    store, fake = new_store(strategy)
    block = store.alloc(nbytes)
    assert (block.size, block.nbytes, fake.mallocs) == (size, nbytes, [size])


def test_strategy_names_match_config_and_unknown_names_fail():
    assert set(STRATEGIES) == set(MEM_POOLS)
    assert ROUND_CUTOFF == 1 << 24 and GRANULE == 512
    with pytest.raises(ValueError, match="unknown memory pool strategy 'best'"):
        get_strategy("best")


def test_naive_strategy_never_caches():
    store, fake = new_store("naive")
    first = store.alloc(1000)
    store.free(first)
    assert fake.freed == [first.chunk] and fake.live == set()
    second = store.alloc(1000)
    assert second.chunk is not first.chunk and fake.mallocs == [1024, 1024]
    stats = store.stats()
    assert (stats["cached_bytes"], stats["n_pool_hits"], stats["reserved_bytes"]) == (0, 0, 1024)
    assert store.release_all() == 0


def test_free_lists_are_per_stream():
    store, fake = new_store()
    on_one = store.alloc(4096, stream="s1")
    store.free(on_one)
    on_two = store.alloc(4096, stream="s2")
    assert on_two.chunk is not on_one.chunk and on_two.stream == "s2"
    again = store.alloc(4096, stream="s1")
    assert again.chunk is on_one.chunk and len(fake.mallocs) == 2


def test_zero_byte_requests_get_one_granule():
    store, _ = new_store()
    a, b = store.alloc(0), store.alloc(0)
    assert (a.size, a.nbytes) == (GRANULE, 0) and a.chunk is not b.chunk
    assert store.stats()["in_use_bytes"] == 0
    host = PooledDataStore(HostAllocator())
    empty = host.alloc(0)
    assert host.array(empty, (0,), np.float32).shape == (0,)


def test_bad_requests_and_bad_frees_are_rejected():
    store, _ = new_store()
    with pytest.raises(ValueError):
        store.alloc(-1)
    with pytest.raises(TypeError):
        store.alloc(1.5)
    block = store.alloc(100)
    store.free(block)
    with pytest.raises(ValueError, match="freed twice"):
        store.free(block)
    other, _ = new_store()
    with pytest.raises(ValueError, match="another store"):
        store.free(other.alloc(100))
    assert store.stats()["n_frees"] == 1


# ---- stats, hooks, arrays --------------------------------------------------------------

def test_stats_arithmetic_is_exact():
    store, _ = new_store()
    a, b = store.alloc(1000), store.alloc(3000)       # sizes 1024 and 3072, two chunks
    store.free(a)
    c = store.alloc(100)                              # 512 B cut from a's chunk
    assert store.stats() == {
        "in_use_bytes": 3100, "peak_bytes": 4000, "cached_bytes": 512, "limit_bytes": None,
        "n_allocs": 3, "n_frees": 1, "n_pool_hits": 1, "reserved_bytes": 4096,
        "peak_reserved_bytes": 4096, "n_mallocs": 2, "n_releases": 0, "n_live_blocks": 2,
        "n_ooms": 0}
    store.free(b)
    store.free(c)
    assert store.release_all() == 4096
    stats = store.stats()
    assert (stats["in_use_bytes"], stats["peak_bytes"], stats["cached_bytes"]) == (0, 4000, 0)
    assert (stats["reserved_bytes"], stats["n_frees"], stats["n_releases"]) == (0, 3, 2)


def test_hooks_hear_every_alloc_and_free():
    events = []

    class Listener:
        def mem_alloc(self, device_id, block, in_use):
            events.append(("alloc", device_id, block.nbytes, in_use))

        def mem_free(self, device_id, block, in_use):
            events.append(("free", device_id, block.nbytes, in_use))

    bus = HookBus()
    bus.subscribe(Listener())
    store = make_store(FakeAllocator(), "pooled", None, 2, bus)
    a = store.alloc(100)
    store.alloc(200)
    store.free(a)
    assert events == [("alloc", 2, 100, 100), ("alloc", 2, 200, 300), ("free", 2, 100, 200)]


def test_array_views_the_block_through_the_allocator():
    store, fake = new_store()
    store.free(store.alloc(4096))
    block = store.alloc(1000)
    second = store.alloc(64)
    assert store.array(second, (16,), "f4") == ("view", block.chunk, 1024, 64, (16,), "f4")
    host = PooledDataStore(HostAllocator())
    host.free(host.alloc(4096))
    x, y = host.alloc(2048), host.alloc(2048)
    host.array(x, (512,), np.float32)[:] = 1.0
    host.array(y, (512,), np.float32)[:] = 2.0
    assert (host.array(x, (512,), np.float32) == 1.0).all()


def test_make_store_builds_the_configured_store():
    store = make_store(FakeAllocator(), strategy="round", limit_bytes=1 << 20, device_id=5)
    assert isinstance(store, PooledDataStore)
    assert (store.strategy.name, store.limit_bytes, store.device_id) == ("round", 1 << 20, 5)
    assert store.stats()["limit_bytes"] == 1 << 20


# ---- limit and the out-of-memory ladder -------------------------------------------------

def test_limit_releases_cached_chunks_to_fit_a_request():
    store, fake = new_store(limit_bytes=8192)
    cached = store.alloc(4096)
    store.free(cached)
    store.alloc(8192)
    assert fake.freed == [cached.chunk] and fake.mallocs == [4096, 8192]
    stats = store.stats()
    assert (stats["reserved_bytes"], stats["cached_bytes"]) == (8192, 0)


def test_out_of_memory_message_names_request_limit_and_largest_blocks():
    store, _ = new_store(limit_bytes=8192, device_id=3)
    a = store.alloc(4096)
    a.label = "float32 (1024,) created at train.py:42"
    b = store.alloc(2048)
    b.label = "int64 (256,) created at model.py:7"
    with pytest.raises(OutOfMemoryError) as info:
        store.alloc(4000)
    assert isinstance(info.value, MemoryError)
    message = str(info.value)
    for part in ("device 3", "3.9 KiB (4000 bytes, 4096 after rounding", "limit 8.0 KiB (8192 bytes)",
                 "in use 6.0 KiB (6144 bytes)", "cached 0 B (0 bytes)"):
        assert part in message
    assert message.index("train.py:42") < message.index("model.py:7")
    assert store.stats()["n_ooms"] == 1 and store.stats()["in_use_bytes"] == 6144
    store.free(a)
    assert store.alloc(4000).size == 4096


def test_out_of_memory_lists_at_most_five_largest_blocks():
    store, _ = new_store(limit_bytes=64 * 1024)
    for kib in (1, 2, 3, 4, 5, 6, 7):
        store.alloc(kib * 1024).label = f"block of {kib} KiB"
    with pytest.raises(OutOfMemoryError) as info:
        store.alloc(60 * 1024)
    message = str(info.value)
    assert all(f"block of {kib} KiB" in message for kib in (3, 4, 5, 6, 7))
    assert "block of 1 KiB" not in message and "block of 2 KiB" not in message


def test_allocator_refusal_releases_cache_then_raises_with_cause():
    store, fake = new_store(capacity=8192)
    cached = store.alloc(4096)
    store.free(cached)
    store.alloc(8192)                  # the fake refuses at first; the cache is released
    assert fake.freed == [cached.chunk]
    with pytest.raises(OutOfMemoryError) as info:
        store.alloc(512)
    assert isinstance(info.value.__cause__, MemoryError)
    assert "no limit" in str(info.value) and "fake device full" in str(info.value)
    assert store.stats()["reserved_bytes"] == 8192 == fake.outstanding


def test_reclaimer_frees_blocks_that_satisfy_the_retry():
    store, fake = new_store(limit_bytes=8192)
    pending = store.alloc(8192)
    timeouts = []

    def reclaim(timeout):
        timeouts.append(timeout)
        store.free(pending)
        return True

    store.set_reclaimer(reclaim)
    block = store.alloc(8000)
    assert len(timeouts) == 1 and 0 < timeouts[0] <= RECLAIM_SECONDS
    assert block.chunk is pending.chunk and fake.mallocs == [8192]


@pytest.mark.parametrize("answer, n_calls", [(False, 1), (True, RECLAIM_ROUNDS)])
def test_reclaimer_is_bounded_and_stops_when_it_frees_nothing(answer, n_calls):
    store, _ = new_store(limit_bytes=8192)
    store.alloc(8192)
    calls = []
    store.set_reclaimer(lambda timeout: calls.append(timeout) or answer)
    with pytest.raises(OutOfMemoryError):
        store.alloc(512)
    assert len(calls) == n_calls


def test_request_above_the_limit_fails_without_reclaiming():
    store, fake = new_store(limit_bytes=4096)
    store.set_reclaimer(lambda timeout: pytest.fail("reclaimer called"))
    with pytest.raises(OutOfMemoryError, match="8.0 KiB"):
        store.alloc(8192)
    assert fake.mallocs == []


def test_reclaimer_rounds_stop_at_the_time_bound(monkeypatch):
    monkeypatch.setattr(pooled, "RECLAIM_SECONDS", 0.2)
    store, _ = new_store(limit_bytes=8192)
    store.alloc(8192)
    timeouts = []

    def slow_reclaim(timeout):
        timeouts.append(timeout)
        time.sleep(timeout)
        return True

    store.set_reclaimer(slow_reclaim)
    with pytest.raises(OutOfMemoryError):
        store.alloc(512)
    assert len(timeouts) == 1 and timeouts[0] <= 0.2


@pytest.mark.timeout(20)
def test_reclaimer_may_wait_for_frees_from_other_threads():
    store, _ = new_store(limit_bytes=8192)
    pending = store.alloc(8192)
    go, done = threading.Event(), threading.Event()

    def deleter():
        go.wait(10)
        store.free(pending)            # blocks forever if alloc holds the lock
        done.set()

    thread = threading.Thread(target=deleter, daemon=True)
    thread.start()
    store.set_reclaimer(lambda timeout: go.set() or done.wait(min(timeout, 10)))
    assert store.alloc(8192).chunk is pending.chunk
    thread.join(10)
    assert not thread.is_alive()


# ---- concurrency and invariants --------------------------------------------------------

def run_threads(store, n_threads, n_ops):
    errors = []

    def worker(seed):
        try:
            churn(seed)
        except BaseException as exc:      # reported below, in the test's thread
            errors.append(exc)

    def churn(seed):
        rng, live = random.Random(seed), []
        for _ in range(n_ops):
            if live and rng.random() < 0.5:
                store.free(live.pop(rng.randrange(len(live))))
                continue
            try:
                live.append(store.alloc(rng.randrange(0, 20000), stream=rng.choice((None, seed))))
            except OutOfMemoryError:
                pass
        for block in live:
            store.free(block)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(n_threads)]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        sys.setswitchinterval(old)
    assert not any(thread.is_alive() for thread in threads) and errors == []


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("limit", [None, 256 * 1024])
def test_threads_alloc_and_free_concurrently(strategy, limit):
    store, fake = new_store(strategy, limit_bytes=limit)
    run_threads(store, n_threads=8, n_ops=1500)
    stats = store.stats()
    assert stats["in_use_bytes"] == 0 and stats["n_allocs"] == stats["n_frees"]
    assert stats["reserved_bytes"] == stats["cached_bytes"] == fake.outstanding
    if limit is not None:
        assert fake.peak <= limit


def check_tiling(segments, fake):
    """Each chunk's segments cover it exactly (so no two blocks overlap), belong to one
    stream, and no two free segments touch (frees were merged)."""
    by_chunk = collections.defaultdict(list)
    for seg in segments:
        by_chunk[seg[0]].append(seg)
    chunk_sizes = []
    for segs in by_chunk.values():
        ends = [offset + size for _, offset, size, _, _ in segs]
        assert [seg[1] for seg in segs] == [0] + ends[:-1]
        assert len({seg[4] for seg in segs}) == 1
        assert not any(x[3] and y[3] for x, y in zip(segs, segs[1:]))
        chunk_sizes.append(ends[-1])
    assert sorted(chunk_sizes) == sorted(chunk.size for chunk in fake.live)


def check_invariants(store, fake, live, limit):
    stats, segments = store.stats(), store.segments()
    check_tiling(segments, fake)
    assert {seg[:3] for seg in segments if not seg[3]} == \
        {(b.chunk_id, b.offset, b.size) for b in live}
    assert stats["in_use_bytes"] == sum(b.nbytes for b in live)
    free_bytes = sum(seg[2] for seg in segments if seg[3])
    assert stats["cached_bytes"] == free_bytes
    assert stats["reserved_bytes"] == free_bytes + sum(b.size for b in live) == fake.outstanding
    assert limit is None or stats["reserved_bytes"] <= limit


SIZES = st.one_of(st.sampled_from([0, 1, 512, 1000, 2048, 4096, 8192]), st.integers(0, 40000))
OPS = st.lists(st.one_of(
    st.tuples(st.just("alloc"), SIZES, st.sampled_from([None, "s1"])),
    st.tuples(st.just("free"), st.integers(0, 1000), st.none()),
    st.tuples(st.just("release"), st.none(), st.none())), min_size=20, max_size=80)


@settings(max_examples=200, deadline=None)
@given(OPS, st.sampled_from(sorted(STRATEGIES)), st.sampled_from([None, 96 * 1024]))
def test_random_sequences_keep_invariants(ops, strategy, limit):
    store, fake = new_store(strategy, limit_bytes=limit)
    live = []
    for kind, number, stream in ops:
        if kind == "alloc":
            try:
                live.append(store.alloc(number, stream=stream))
            except OutOfMemoryError:
                assert limit is not None
        elif kind == "free" and live:
            store.free(live.pop(number % len(live)))
        elif kind == "release":
            store.release_all()
        check_invariants(store, fake, live, limit)
    rounding = get_strategy(strategy).round_size
    assert all(b.size == rounding(b.nbytes) for b in live)


def test_format_bytes():
    assert [format_bytes(n) for n in (0, 512, 1536, 3 << 20, 2 << 30)] == \
        ["0 B", "512 B", "1.5 KiB", "3.0 MiB", "2.0 GiB"]
