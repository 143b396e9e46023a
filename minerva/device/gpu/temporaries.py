"""Temporaries an op's kernels allocate inside CuPy come from the GPU device's own store.

While a GPU device runs an op, CuPy's allocator hook is a :class:`TemporaryAllocator`: each
request becomes a block of the device's store on the stream the op runs on, so
``memory_stats`` counts temporaries too and the store's limit and out-of-memory ladder apply
to them. CuPy drops a temporary as soon as the Python object dies, usually while the kernels
using it are still queued; its block then goes back to the *same stream's* free list, where
only later work of that stream can reuse it — after the queued kernels, in stream order.

The block is not freed inside the finalizer (which may run during garbage collection at any
point, even while a store lock is held on the same thread): the finalizer appends it to a
lock-free queue, and :meth:`TemporaryAllocator.drain` frees what is queued. The device drains
after every op, and before it reads statistics or releases memory. A chunk the store hands
back to the allocator while a temporary in it may still be read is fenced there
(``DeviceAllocator.free``): reused only after the device's streams passed that moment.
"""
from __future__ import annotations

import collections
import threading
from typing import Any


class _Return:
    """Owner of one temporary's block: when CuPy lets go of it, queue the block."""

    __slots__ = ("block", "sink")

    def __init__(self, block, sink):
        self.block = block
        self.sink = sink

    def __del__(self):
        self.sink.append(self.block)


class _TemporaryLabel:
    """The label of a temporary's block (shown in out-of-memory messages), formatted only
    when shown."""

    __slots__ = ("op",)

    def __init__(self, op):
        self.op = op

    def __str__(self) -> str:
        if self.op is None:
            return "temporary"
        return f"temporary of op '{self.op.op_def.name}' created at {self.op.where}"


class TemporaryAllocator:
    """CuPy's allocator hook for one GPU device: ``allocator(nbytes)`` returns memory of a
    block of ``store`` on stream ``stream_key`` (through the store's ``DeviceAllocator``,
    which knows where in its slabs a chunk lies).

    No lock: the per-thread current op lives in a ``threading.local``, the queue of dropped
    blocks is a ``collections.deque`` (appends and pops are atomic) and the store has its own
    lock.
    """

    def __init__(self, store, layer, stream_key: Any):
        self.store = store
        self.layer = layer
        self.stream_key = stream_key
        self._dropped: collections.deque = collections.deque()
        self._local = threading.local()

    def running(self, op) -> None:
        """Name ``op`` (or None) as the op the calling thread is running, for labels."""
        self._local.op = op

    def __call__(self, nbytes: int) -> Any:
        block = self.store.alloc(nbytes, self.stream_key)
        block.label = _TemporaryLabel(getattr(self._local, "op", None))
        owner = _Return(block, self._dropped)
        return self.store.allocator.temporary(block.chunk, block.offset, nbytes, owner)

    @property
    def n_dropped(self) -> int:
        """Dropped temporaries whose blocks are not yet back in the store."""
        return len(self._dropped)

    def drain(self) -> int:
        """Free the blocks of every dropped temporary; how many."""
        dropped, free = self._dropped, self.store.free
        count = 0
        while dropped:
            try:
                block = dropped.popleft()
            except IndexError:  # another thread drained it meanwhile
                break
            block.label = ""
            free(block)
            count += 1
        return count
