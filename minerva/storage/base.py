"""The DataStore interface every device's memory pool implements, and the Block it hands out.

A store hands out :class:`Block` objects carved from *chunks* that an injected
:class:`Allocator` obtains from the system (host memory through NumPy, device memory through
CuPy). A block is a byte range ``[offset, offset + size)`` of one chunk; ``nbytes`` is what was
asked for, ``size`` what the strategy rounded it to. ``array(block, shape, dtype)`` turns a
block into an array of the allocator's kind that ops write into.
"""
from __future__ import annotations

import abc
from typing import Any, Callable, Protocol


class Block:
    """A byte range of one chunk, handed out by a DataStore until it is freed.

    ``view``/``view_key`` cache the last array view made of it (``(shape, dtype)``): a
    block served again for a value of the same shape reuses the view object. A block never
    changes its range, so the cached view stays valid for the block's whole life."""

    __slots__ = ("chunk", "offset", "size", "nbytes", "stream", "label", "view_key", "view")

    def __init__(self, chunk: Any, offset: int, size: int, nbytes: int, stream: Any = None):
        self.chunk = chunk
        self.offset = offset
        self.size = size
        self.nbytes = nbytes
        self.stream = stream
        self.label = ""
        self.view_key = None
        self.view = None

    def __repr__(self) -> str:
        return f"Block(offset={self.offset}, size={self.size}, nbytes={self.nbytes})"


class Allocator(Protocol):
    """Obtains raw chunks from the system and views blocks of them as arrays."""

    def malloc(self, nbytes: int) -> Any:
        """A new chunk of ``nbytes`` bytes; raises MemoryError when the system has none."""

    def free(self, chunk: Any) -> None:
        """Return ``chunk`` to the system."""

    def view(self, chunk: Any, offset: int, nbytes: int, shape: tuple, dtype: Any) -> Any:
        """An array of ``shape`` and ``dtype`` over ``nbytes`` bytes of ``chunk`` at ``offset``."""


class DataStore(abc.ABC):
    """A device's memory: hands out blocks, takes them back, and keeps exact statistics.

    ``recycles``: whether a dead value's block may pass straight to a new value of the
    same size without a free and an alloc (stores that cache freed blocks); such hand-overs
    are counted in ``n_recycled`` by the engine, under its lock."""

    recycles = False
    n_recycled = 0

    @abc.abstractmethod
    def alloc(self, nbytes: int, stream: Any = None) -> Block:
        """A block of at least ``nbytes`` bytes, usable on ``stream`` (None on CPU devices).

        Raises :class:`minerva.OutOfMemoryError` when the request cannot be met.
        """

    @abc.abstractmethod
    def free(self, block: Block) -> None:
        """Give ``block`` back; its bytes may be handed out again at once (same stream)."""

    @abc.abstractmethod
    def array(self, block: Block, shape: tuple, dtype: Any) -> Any:
        """``block`` viewed as an array of ``shape`` and ``dtype``."""

    def alloc_array(self, nbytes: int, shape: tuple, dtype: Any, ladder: bool = True):
        """``(block, array)``: a block for a CPU op's output and its view (stores may do
        it in one step); without the out-of-memory ``ladder``, ``(None, None)`` where it
        would be needed."""
        if not ladder:
            return None, None
        block = self.alloc(nbytes)
        return block, self.array(block, shape, dtype)

    @abc.abstractmethod
    def release_all(self) -> int:
        """Return every cached (free) chunk to the system; the number of bytes returned."""

    @abc.abstractmethod
    def stats(self) -> dict:
        """``in_use_bytes``, ``peak_bytes``, ``cached_bytes``, ``limit_bytes``, ``n_allocs``,
        ``n_frees``, ``n_pool_hits``."""

    def set_reclaimer(self, reclaim: Callable[[float], bool]) -> None:
        """Install ``reclaim(timeout)``: called under memory pressure to let pending deletes
        finish; returns True when it may have freed something."""
        self._reclaim = reclaim
