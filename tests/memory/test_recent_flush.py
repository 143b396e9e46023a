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
