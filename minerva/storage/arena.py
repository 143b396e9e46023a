"""Segments of chunks and the per-stream free indexes: best fit, split and merge.

A chunk (memory obtained from an allocator in one piece) is cut into *segments*, byte ranges
linked to their neighbours by offset (``prev``/``next``). A segment is live (a Block handed
out) or free (waiting in the free index of its stream). A free index is a ``SortedList`` of
``(size, chunk_id, offset, segment)``: best fit is one bisect, ties go to the oldest chunk and
the lowest offset. All segments of a chunk belong to the stream the chunk was made for.

The :class:`Arena` is not thread-safe: its owner (:class:`~minerva.storage.pooled.
PooledDataStore`) calls it only under its lock.
"""
from __future__ import annotations

from typing import Any, Iterator

from sortedcontainers import SortedList

from minerva.storage.base import Block


class Segment(Block):
    """A byte range of a chunk linked to its neighbours; a live Block, or free when ``free``.

    A live segment is the Block the store hands out; the arena never changes its fields
    after that (its range becomes a separate free segment when it is freed).
    """

    __slots__ = ("chunk_id", "prev", "next", "free")

    def __init__(self, chunk, offset, size, nbytes, stream, chunk_id, free):
        Block.__init__(self, chunk, offset, size, nbytes, stream)
        self.chunk_id = chunk_id
        self.prev = None
        self.next = None
        self.free = free


def _key(seg: Segment) -> tuple:
    return (seg.size, seg.chunk_id, seg.offset, seg)


class Arena:
    """The free segments of one store, one free index per stream; ``cached_bytes`` is the
    sum of their sizes. Not thread-safe: the owning store's lock guards every call."""

    def __init__(self):
        self._indexes: dict[Any, SortedList] = {}
        self.cached_bytes = 0

    def take(self, size: int, nbytes: int, stream: Any) -> Segment | None:
        """A live segment of ``size`` bytes cut from the front of the smallest free segment
        of ``stream`` that fits (the rest stays free); None when none fits."""
        index = self._indexes.get(stream)
        if not index:
            return None
        at = index.bisect_left((size,))
        if at == len(index):
            return None
        free = index.pop(at)[3]
        block = Segment(free.chunk, free.offset, size, nbytes, stream, free.chunk_id, False)
        prev = block.prev = free.prev
        if prev is not None:
            prev.next = block
        if free.size > size:
            free.offset += size
            free.size -= size
            free.prev = block
            block.next = free
            index.add(_key(free))
        else:
            nxt = block.next = free.next
            if nxt is not None:
                nxt.prev = block
        self.cached_bytes -= size
        return block

    def give_back(self, block: Segment) -> None:
        """Make the live ``block``'s range free again, merged with free neighbours."""
        index = self._indexes.get(block.stream)
        if index is None:
            index = self._indexes[block.stream] = SortedList()
        prev, nxt = block.prev, block.next
        block.prev = block.next = None
        if prev is not None and prev.free:
            index.remove(_key(prev))
            seg = prev
            seg.size += block.size
        else:
            seg = Segment(block.chunk, block.offset, block.size, 0, block.stream,
                          block.chunk_id, True)
            seg.prev = prev
            if prev is not None:
                prev.next = seg
        if nxt is not None and nxt.free:
            index.remove(_key(nxt))
            seg.size += nxt.size
            nxt = nxt.next
        seg.next = nxt
        if nxt is not None:
            nxt.prev = seg
        index.add(_key(seg))
        self.cached_bytes += block.size

    def take_whole_chunks(self) -> list[Segment]:
        """Remove the free segments that span a whole chunk; the caller returns their chunks
        to the system."""
        whole = []
        for index in self._indexes.values():
            spans = [key for key in index if key[3].prev is None and key[3].next is None]
            for key in spans:
                index.remove(key)
                whole.append(key[3])
        self.cached_bytes -= sum(seg.size for seg in whole)
        return whole

    def free_segments(self) -> Iterator[Segment]:
        """Every free segment, of every stream."""
        for index in self._indexes.values():
            for key in index:
                yield key[3]
