"""The pooled DataStore: best fit, split and merge over chunks from an injected allocator.

Memory comes from the allocator in *chunks*; a chunk is cut into *segments* (byte ranges)
linked to their neighbours by offset. A segment is either live (a Block the store handed out)
or free (cached in the free index of its stream); :mod:`minerva.storage.arena` keeps them.

- alloc: round the request (see :mod:`minerva.storage.strategies`); take the smallest free
  segment of the request's stream that fits, cutting the live block from its front and
  leaving the rest free; on a miss, malloc a chunk of exactly the rounded size.
- free: the block's range becomes free and merges with free neighbours in its chunk.
- a miss that would pass ``limit_bytes``, or that the allocator refuses with MemoryError,
  climbs the out-of-memory ladder: release cached chunks and retry; call the reclaimer and
  retry while it says it may have freed something (at most :data:`RECLAIM_ROUNDS` rounds and
  :data:`RECLAIM_SECONDS` in all); then raise :class:`OutOfMemoryError`.

Fast path: a freed block first waits, unmerged, on a stack of *recent* blocks of its stream
and size; a request of that exact size takes the newest one back in O(1) (steady-state loops
allocate the same sizes over and over). A request of another size takes the best fit of
the arena as it is; when nothing there fits, the recent blocks go back to the arena, merged,
before a new chunk is made once they hold more than ``recent_slack`` bytes
(:data:`RECENT_SLACK`; fewer wait for their own sizes: a loop's values held through a step
come back in the sizes they went), and always before a release or at the limit. A recycled
Block object is handed out again with ``nbytes`` set to the new request; otherwise a Block
handed out is never changed by the store (free segments are separate objects); a freed
Block must not be freed again (ValueError).
"""
from __future__ import annotations

import heapq
import operator
import threading
import time
from typing import Any

from minerva.common.logging import get_logger

from minerva.common.errors import OutOfMemoryError
from minerva.common.hooks import NULL_HOOKS
from minerva.storage.arena import Arena, Segment
from minerva.storage.base import Block, DataStore
from minerva.common.text import format_bytes
from minerva.storage.strategies import get_strategy

log = get_logger("minerva.storage")

RECLAIM_ROUNDS = 4
"""At most this many reclaimer calls for one request."""

RECLAIM_SECONDS = 5.0
"""At most this much time spent in the reclaimer for one request."""

RECENT_SLACK = 1 << 20
"""By default, recent blocks up to this many bytes wait for their own sizes rather than
merge into the arena at a miss (``_flush_due``; a store's ``recent_slack``)."""

OOM_REPORT_BLOCKS = 5
"""An out-of-memory message names this many of the largest live blocks."""


class PooledDataStore(DataStore):
    """A device's memory pool over ``allocator`` (see the module docstring for the algorithm).

    Thread safety: one ``threading.Lock`` guards all pool state — the per-stream free
    indexes, the neighbour links of every segment, the set of live blocks and every counter.
    The allocator (malloc and free), the reclaimer and the hooks are always called without
    it, so a reclaimer may wait for threads that call :meth:`free`.

    Its state lives in slots, which the C lean path (``minerva._lean``, store.c) reads and
    writes by offset under the same lock.
    """

    __slots__ = ("allocator", "strategy", "limit_bytes", "device_id", "hooks", "_reclaim",
                 "_round", "_caches", "_lock", "_arena", "_recent", "_recent_bytes", "_live",
                 "_n_chunks_made", "_in_use", "_peak", "_reserved", "_peak_reserved",
                 "_n_allocs", "_n_frees", "_n_hits", "_n_mallocs", "_n_releases", "_n_ooms",
                 "recycles", "n_recycled", "recent_slack")

    def __init__(self, allocator, strategy="pooled", limit_bytes: int | None = None,
                 device_id: int = 0, hooks=NULL_HOOKS, recent_slack: int = RECENT_SLACK):
        self.allocator = allocator
        self.strategy = get_strategy(strategy)
        self.limit_bytes = _check_limit(limit_bytes)
        self.device_id = device_id
        self.hooks = hooks
        self._reclaim = None
        self._round = self.strategy.round_size
        self._caches = self.strategy.caches
        self._lock = threading.Lock()
        self._arena = Arena()
        self._recent: dict[Any, list[Segment]] = {}   # by recent_key(stream, size)
        self._recent_bytes = 0
        self._live: set[Segment] = set()
        self._n_chunks_made = 0
        self._in_use = self._peak = self._reserved = self._peak_reserved = 0
        self._n_allocs = self._n_frees = self._n_hits = 0
        self._n_mallocs = self._n_releases = self._n_ooms = 0
        self.recycles = self._caches
        self.recent_slack = recent_slack
        self.n_recycled = 0   # counted in n_allocs, n_frees and n_pool_hits

    # ---- the DataStore interface -------------------------------------------------------

    def alloc(self, nbytes: int, stream: Any = None) -> Block:
        """A block of at least ``nbytes`` bytes for ``stream`` (None on CPU devices).

        ``block.nbytes`` is ``nbytes``; ``block.size`` is the rounded size (a zero-byte
        request gets one granule). Raises OutOfMemoryError after the out-of-memory ladder.
        """
        if type(nbytes) is not int:
            nbytes = operator.index(nbytes)
        if nbytes < 0:
            raise ValueError(f"cannot allocate a negative number of bytes: {nbytes}")
        size = self._round(nbytes)
        with self._lock:
            stack = self._recent.get(recent_key(stream, size)) if self._caches else None
            if stack:  # the fast path: the newest freed block of this size and stream
                block = stack.pop()
                self._recent_bytes -= size
                block.nbytes = nbytes
            else:
                block = self._arena.take(size, nbytes, stream) if self._caches else None
                if block is None and self._flush_due():
                    self._flush_recent()
                    block = self._arena.take(size, nbytes, stream)
            if block is not None:
                self._n_hits += 1
                in_use = self._record_alloc(block)
        if block is None:
            block, in_use = self._grow(size, nbytes, stream)
        if self.hooks.active:
            self.hooks.mem_alloc(self.device_id, block, in_use)
        return block

    def alloc_array(self, nbytes: int, shape: tuple, dtype: Any, ladder: bool = True):
        """``(block, array)``: ``alloc(nbytes)`` viewed as ``shape`` and ``dtype`` — in one
        call when the newest freed block of that size is at hand (a tiny op's output).
        Without the ``ladder`` (a caller holding the engine's lock, which the reclaimer
        needs): the cache or a new chunk within the limit, else ``(None, None)``."""
        size = self._round(nbytes)
        with self._lock:
            stack = self._recent.get(size) if self._caches else None   # stream None
            if stack:
                block = stack.pop()
                self._recent_bytes -= size
                block.nbytes = nbytes
                self._n_hits += 1
                in_use = self._record_alloc(block)
            else:
                block = None
        if block is None:
            if ladder:
                return self._viewed(self.alloc(nbytes), nbytes, shape, dtype)
            got = self._attempt(size, nbytes, None, [])
            if got is None:
                return None, None
            block, in_use = got
        if self.hooks.active:
            self.hooks.mem_alloc(self.device_id, block, in_use)
        return self._viewed(block, nbytes, shape, dtype)

    def _viewed(self, block: Block, nbytes: int, shape: tuple, dtype: Any):
        """``(block, its array of shape and dtype)``, the view kept on the block."""
        key = (shape, dtype)
        if block.view_key != key:
            block.view = self.allocator.view(block.chunk, block.offset, nbytes, shape, dtype)
            block.view_key = key
        return block, block.view

    def free(self, block: Block) -> None:
        """Give ``block`` back: cached for its stream (merged with free neighbours), or under
        the ``naive`` strategy returned to the system at once."""
        chunk = None
        with self._lock:
            try:
                self._live.remove(block)
            except KeyError:
                raise ValueError(f"{block!r} is not a live block of this store "
                                 "(freed twice, or from another store)") from None
            self._in_use -= block.nbytes
            self._n_frees += 1
            in_use = self._in_use
            if self._caches:
                key = recent_key(block.stream, block.size)
                stack = self._recent.get(key)
                if stack is None:
                    self._recent[key] = [block]
                else:
                    stack.append(block)
                self._recent_bytes += block.size
            else:
                chunk = block.chunk
        if chunk is not None:
            self._return_chunks([chunk], block.size)
        if self.hooks.active:
            self.hooks.mem_free(self.device_id, block, in_use)

    def array(self, block: Block, shape: tuple, dtype: Any) -> Any:
        """``block`` viewed as an array of ``shape`` and ``dtype`` (through the allocator;
        the view made last for this block is reused when it fits)."""
        key = (shape, dtype)
        if block.view_key == key:
            return block.view
        view = block.view = self.allocator.view(block.chunk, block.offset, block.nbytes,
                                                shape, dtype)
        block.view_key = key
        return view

    def release_all(self) -> int:
        """Return every wholly free chunk to the allocator; the number of bytes returned.

        Chunks with a live block in them stay, with their free parts still cached.
        """
        with self._lock:
            self._flush_recent()
            whole = self._arena.take_whole_chunks()
        released = sum(seg.size for seg in whole)
        if whole:
            self._return_chunks([seg.chunk for seg in whole], released)
        if released:
            log.debug("mem.release", device_id=self.device_id, bytes=released,
                      n_chunks=len(whole))
        return released

    def stats(self) -> dict:
        """Exact counters (see doc/memory.md): the seven DataStore keys plus
        ``reserved_bytes``, ``peak_reserved_bytes``, ``n_mallocs``, ``n_releases``,
        ``n_live_blocks`` and ``n_ooms``."""
        with self._lock:
            return {
                "in_use_bytes": self._in_use, "peak_bytes": self._peak,
                "cached_bytes": self._cached_bytes(), "limit_bytes": self.limit_bytes,
                "n_allocs": self._n_allocs + self.n_recycled,
                "n_frees": self._n_frees + self.n_recycled,
                "n_pool_hits": self._n_hits + self.n_recycled,
                "reserved_bytes": self._reserved,
                "peak_reserved_bytes": self._peak_reserved, "n_mallocs": self._n_mallocs,
                "n_releases": self._n_releases, "n_live_blocks": len(self._live),
                "n_ooms": self._n_ooms,
            }

    def segments(self) -> list[tuple]:
        """A consistent snapshot of every segment, for tests and debugging: sorted tuples
        ``(chunk_id, offset, size, is_free, stream)``."""
        with self._lock:
            self._flush_recent()
            segs = list(self._live)
            segs.extend(self._arena.free_segments())
            return sorted(((s.chunk_id, s.offset, s.size, s.free, s.stream) for s in segs),
                          key=operator.itemgetter(0, 1))

    def _return_chunks(self, chunks, nbytes):
        """Give ``chunks`` (``nbytes`` in all) back to the allocator, without the lock; they
        count as reserved until the allocator has them, so the limit holds at every moment."""
        for chunk in chunks:
            self.allocator.free(chunk)
        with self._lock:
            self._reserved -= nbytes
            self._n_releases += len(chunks)

    # ---- allocation --------------------------------------------------------------------

    def _attempt(self, size, nbytes, stream, errors):
        """One try: the stream's cache, else a new chunk within the limit. ``(block,
        in_use)`` or None; a MemoryError from the allocator is appended to ``errors``."""
        with self._lock:
            if self._caches:   # the merged free space first, as ``alloc``; then the recent
                block = self._arena.take(size, nbytes, stream)
                if block is None and self._flush_due():
                    self._flush_recent()
                    block = self._arena.take(size, nbytes, stream)
                if block is not None:
                    self._n_hits += 1
                    return block, self._record_alloc(block)
            if self.limit_bytes is not None and self._reserved + size > self.limit_bytes:
                return None
            self._reserved += size
        try:
            chunk = self.allocator.malloc(size)
        except MemoryError as exc:
            errors.append(exc)
            with self._lock:
                self._reserved -= size
            return None
        with self._lock:
            block = self._new_chunk_block(chunk, size, nbytes, stream)
            return block, self._record_alloc(block)

    def _flush_due(self) -> bool:
        """After a miss of the recent stacks and the arena: whether the recent blocks go
        back to the arena first, merged, to serve the request — when they hold more than
        ``recent_slack`` bytes. Else a new chunk is made and they wait for requests of
        their own sizes: a loop's values held through a step come back as they went,
        without a merge and a cut each step. A limit to keep flushes them all first (the
        out-of-memory ladder's release)."""
        return self._recent_bytes > self.recent_slack

    def _flush_recent(self) -> None:
        """Return every recent block to the arena (merged with its free neighbours); the
        stacks go too, so a program whose sizes keep changing (gauss's shrinking rows) does
        not walk the empty stacks of every size it ever freed at each flush."""
        if self._recent_bytes:
            give_back = self._arena.give_back
            for stack in self._recent.values():
                for block in stack:
                    give_back(block)
            self._recent.clear()
            self._recent_bytes = 0

    def _cached_bytes(self) -> int:
        return self._arena.cached_bytes + self._recent_bytes

    def _new_chunk_block(self, chunk, size, nbytes, stream):
        """A live block covering the whole new ``chunk`` (its bytes already reserved)."""
        self._n_chunks_made += 1
        self._n_mallocs += 1
        self._peak_reserved = max(self._peak_reserved, self._reserved)
        return Segment(chunk, 0, size, nbytes, stream, self._n_chunks_made, False)

    def _record_alloc(self, block):
        """Count ``block`` as live; the new in-use bytes."""
        self._live.add(block)
        self._n_allocs += 1
        in_use = self._in_use = self._in_use + block.nbytes
        if in_use > self._peak:
            self._peak = in_use
        return in_use

    # ---- the out-of-memory ladder ------------------------------------------------------

    def _grow(self, size, nbytes, stream):
        """After a cache miss: a new chunk, else the ladder — release the cache and retry,
        reclaim and retry — else raise OutOfMemoryError. Returns ``(block, in_use)``."""
        errors: list[MemoryError] = []
        got = self._attempt(size, nbytes, stream, errors)
        if got is None and (self.limit_bytes is None or size <= self.limit_bytes):
            self.release_all()
            got = self._attempt(size, nbytes, stream, errors)
            if got is None:
                got = self._reclaim_and_retry(size, nbytes, stream, errors)
        if got is None:
            cause = errors[-1] if errors else None
            raise self._out_of_memory(size, nbytes, cause) from cause
        return got

    def _reclaim_and_retry(self, size, nbytes, stream, errors):
        """Let the runtime's pending deletes finish, then retry; bounded in rounds and time."""
        reclaim = self._reclaim
        if reclaim is None:
            return None
        deadline = time.monotonic() + RECLAIM_SECONDS
        for round_no in range(1, RECLAIM_ROUNDS + 1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            log.info("mem.reclaim", device_id=self.device_id, request_bytes=size,
                     round=round_no)
            more = reclaim(remaining)
            got = self._attempt(size, nbytes, stream, errors)
            if got is None:
                self.release_all()
                got = self._attempt(size, nbytes, stream, errors)
            if got is not None or not more:
                return got
        return None

    def _out_of_memory(self, size, nbytes, cause):
        """The OutOfMemoryError for a request of ``nbytes`` (``size`` after rounding)."""
        with self._lock:
            self._n_ooms += 1
            largest = heapq.nlargest(OOM_REPORT_BLOCKS, self._live,
                                     key=operator.attrgetter("nbytes"))
            state = (self._in_use, self._cached_bytes(), self._reserved, len(self._live))
        message = _oom_message(self, size, nbytes, state, largest, cause)
        log.warning("mem.oom", device_id=self.device_id, request_bytes=nbytes,
                    limit_bytes=self.limit_bytes, in_use_bytes=state[0],
                    cached_bytes=state[1])
        return OutOfMemoryError(message)


def recent_key(stream, size: int):
    """The key of the recent stack of ``stream`` and ``size``: the size alone for a CPU
    device's one queue (``stream`` None: an int key is the cheapest to look up)."""
    return size if stream is None else (stream, size)


def _both(nbytes: int) -> str:
    return f"{format_bytes(nbytes)} ({nbytes} bytes)"


def _oom_message(store, size, nbytes, state, largest, cause) -> str:
    """What was asked, what the limit is, where the memory is, and the largest live blocks."""
    in_use, cached, reserved, n_live = state
    limit = "no limit" if store.limit_bytes is None else f"limit {_both(store.limit_bytes)}"
    lines = [
        f"device {store.device_id} out of memory: cannot allocate {format_bytes(nbytes)} "
        f"({nbytes} bytes, {size} after rounding by strategy '{store.strategy.name}')",
        f"{limit}; in use {_both(in_use)} in {n_live} live block{'' if n_live == 1 else 's'}; "
        f"cached {_both(cached)}; reserved {_both(reserved)}",
    ]
    if cause is not None:
        lines.append(f"the allocator refused: {type(cause).__name__}: {cause}")
    if largest:
        lines.append("largest live blocks:")
        lines.extend(f"  {format_bytes(b.nbytes)}: {b.label or '(no label)'}"
                     for b in largest)
    return "\n".join(lines)


def _check_limit(limit_bytes):
    if limit_bytes is None:
        return None
    limit = operator.index(limit_bytes)
    if limit < 0:
        raise ValueError(f"limit_bytes must be >= 0 or None, got {limit_bytes!r}")
    return limit
