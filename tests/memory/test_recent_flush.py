"""The pooled store's recent-block stacks after a flush: a program whose sizes keep
changing (gauss's shrinking rows) leaves no empty stack per size behind, and the blocks
flushed are reused (merged) as before."""
from __future__ import annotations

from tests.memory.test_storage_pool import new_store


def test_flush_drops_the_stacks_of_every_size_and_reuses_the_blocks():
    store, fake = new_store()
    sizes = [4096 * k for k in range(1, 41)]
    whole = store.alloc(sum(sizes))
    store.free(whole)
    parts = [store.alloc(n) for n in sizes]   # one chunk, cut in 40 sizes
    for part in parts:
        store.free(part)                       # 40 stacks of recent blocks
    assert len(store._recent) == len(sizes)
    again = store.alloc(sum(sizes))           # no stack of that size: a flush, merged
    assert again.chunk is whole.chunk and fake.mallocs == [sum(sizes)]
    assert store._recent == {}                # no empty stack per size is kept
    store.free(again)
    assert store.alloc(sizes[3]).chunk is whole.chunk
    assert store.stats()["in_use_bytes"] == sizes[3]


def test_recent_blocks_within_the_slack_wait_for_their_own_size():
    store, fake = new_store(recent_slack=3 * 4096)
    held = [store.alloc(4096) for _ in range(3)]
    for block in held:
        store.free(block)                     # 12 KiB recent: within the slack
    other = store.alloc(8192)                 # a miss: a new chunk, no merge
    assert fake.mallocs == [4096] * 3 + [8192]
    assert [store.alloc(4096).chunk for _ in range(3)] == [b.chunk for b in reversed(held)]
    store.free(other)
    for block in held:
        store.free(block)                     # 20 KiB recent: over the slack
    cut = store.alloc(6000)                   # a miss: the recent blocks go back first
    assert store._recent == {} and len(fake.mallocs) == 4
    assert cut.chunk is other.chunk and store.stats()["in_use_bytes"] == 6000
