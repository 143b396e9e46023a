"""The store's allocator over one GPU: :class:`DeviceAllocator` takes the GPU's memory in large
*slabs* and hands the store ranges of them, so ``cudaMalloc`` runs rarely and ``cudaFree``
(which synchronizes the whole device) only when memory runs out, on ``mv.release_all`` and
at shutdown, for idle slabs. A range the store gives back is *fenced* until the device's
streams passed that moment (queued kernels may still read a temporary in it).
"""
from __future__ import annotations

import threading
import weakref
from typing import Any, Callable

from minerva.common.logging import get_logger
from minerva.device.gpu.layer import CudaLayer

log = get_logger("minerva.device")

ALIGN = 512
"""Ranges handed to the store start at multiples of this (the store's granule)."""
SLAB_ROUND = 2 << 20
SLAB_MIN = 32 << 20
"""The first slab of a device; each later one is as large as all before it together (up to
``SLAB_MAX``), so the number of ``cudaMalloc`` calls grows with the log of the memory used."""
SLAB_MAX = 1 << 30


def _round_up(n: int, to: int) -> int:
    return (n + to - 1) // to * to


class Slab:
    """One ``cudaMalloc``: ``memory`` (the layer's chunk) and its free ranges
    ``(offset, size)`` sorted by offset; ``n_live`` ranges are handed out."""

    __slots__ = ("memory", "nbytes", "free", "n_live")

    def __init__(self, memory: Any, nbytes: int):
        self.memory = memory
        self.nbytes = nbytes
        self.free: list[list[int]] = [[0, nbytes]]
        self.n_live = 0

    def take(self, size: int) -> int | None:
        """First fit: the offset of ``size`` bytes cut from a free range, or None."""
        for i, (offset, length) in enumerate(self.free):
            if length >= size:
                if length == size:
                    del self.free[i]
                else:
                    self.free[i] = [offset + size, length - size]
                self.n_live += 1
                return offset
        return None

    def give(self, offset: int, size: int) -> None:
        """Return a range, merged with free neighbours."""
        free = self.free
        i = 0
        while i < len(free) and free[i][0] < offset:
            i += 1
        free.insert(i, [offset, size])
        if i + 1 < len(free) and offset + size == free[i + 1][0]:
            free[i][1] += free.pop(i + 1)[1]
        if i > 0 and free[i - 1][0] + free[i - 1][1] == offset:
            free[i - 1][1] += free.pop(i)[1]
        self.n_live -= 1

    @property
    def idle(self) -> bool:
        """Whether nothing of it is handed out."""
        return self.n_live == 0


class Chunk:
    """What the store sees as a chunk: ``nbytes`` bytes of a slab at ``offset``."""

    __slots__ = ("slab", "offset", "nbytes")

    def __init__(self, slab: Slab, offset: int, nbytes: int):
        self.slab = slab
        self.offset = offset
        self.nbytes = nbytes

    def __repr__(self) -> str:
        return f"Chunk({self.nbytes} bytes at {self.offset} of a {self.slab.nbytes}-byte slab)"


class DeviceAllocator:
    """The store's :class:`~minerva.storage.base.Allocator` over one GPU's memory.

    Chunks the store asks for are ranges of slabs (large ``layer.malloc`` allocations). A
    chunk the store gives back may still be read by queued kernels (CuPy drops an op's
    temporaries while its kernels are queued), so it is *fenced*: ``fence()`` (set by the
    device) records an event on each of its streams, and the range is reused only once those
    completed. When the GPU has no memory left, the allocator waits for its fences, frees
    idle slabs, trims CuPy's own pools, collects garbage and tries once more before raising
    MemoryError. ``_lock`` guards the slabs, their free ranges and the fenced ranges;
    ``_freed`` (the sizes of slabs whose memory is gone, appended by finalizers, which
    must not take the lock) needs none.
    """

    kind = "cuda"

    def __init__(self, layer: CudaLayer, ordinal: int, cap: int | None = None):
        self.layer = layer
        self.ordinal = ordinal
        self.cap = cap
        """At most this many bytes per slab beyond the request (the store's limit)."""
        self.fence: Callable[[], list] | None = None
        self._slabs: list[Slab] = []
        self._fenced: list[tuple[Chunk, list]] = []
        self._lock = threading.Lock()
        self.n_slabs_made = 0
        self._freed: list[int] = []

    # ---- the Allocator protocol --------------------------------------------------------------

    def malloc(self, nbytes: int) -> Chunk:
        """``nbytes`` bytes of the GPU's memory (MemoryError when there is none, even after
        freeing what can be freed)."""
        size = _round_up(max(nbytes, 1), ALIGN)
        chunk = self._take(size, reuse_fenced=True)
        if chunk is None:
            chunk = self._grow(size)
        return chunk

    def free(self, chunk: Chunk) -> None:
        """Take a range back; it is reused once the device's streams passed this moment."""
        events = None
        if self.fence is not None:
            try:
                events = self.fence()
            except Exception as err:  # a GPU that failed: its queued work will never run
                log.warning("gpu_fence_failed", ordinal=self.ordinal, error=repr(err))
        with self._lock:
            if events:
                self._fenced.append((chunk, events))
            else:
                chunk.slab.give(chunk.offset, chunk.nbytes)

    def view(self, chunk: Chunk, offset: int, nbytes: int, shape: tuple, dtype: Any) -> Any:
        """``nbytes`` bytes of ``chunk`` at ``offset`` as an ``xp`` array."""
        return self.layer.view(chunk.slab.memory, chunk.offset + offset, nbytes, shape, dtype)

    def temporary(self, chunk: Chunk, offset: int, nbytes: int, owner: Any) -> Any:
        """CuPy's allocator-hook answer for ``nbytes`` bytes of ``chunk`` at ``offset``."""
        return self.layer.temporary(chunk.slab.memory, chunk.offset + offset, nbytes, owner)

    # ---- releasing -----------------------------------------------------------------------------

    def trim(self) -> int:
        """``cudaFree`` every idle slab (after its fences); the bytes given back."""
        self._wait_for_fences()
        with self._lock:
            idle = [slab for slab in self._slabs if slab.idle]
            self._slabs = [slab for slab in self._slabs if not slab.idle]
        for slab in idle:
            self._free_slab(slab)
        return sum(slab.nbytes for slab in idle)

    @property
    def n_slabs_freed(self) -> int:
        """Slabs whose memory went back to the GPU: let go of by ``trim`` and gone (under
        CuPy, once no array over them is left)."""
        return len(self._freed)

    def stats(self) -> dict:
        """Slabs held and their bytes, slabs made (``cudaMalloc``) and freed."""
        with self._lock:
            return {"n_slabs": len(self._slabs),
                    "slab_bytes": sum(s.nbytes for s in self._slabs),
                    "n_fenced": len(self._fenced), "n_slabs_made": self.n_slabs_made,
                    "n_slabs_freed": self.n_slabs_freed}

    # ---- inside ----------------------------------------------------------------------------

    def _take(self, size: int, reuse_fenced: bool) -> Chunk | None:
        with self._lock:
            chunk = self._take_locked(size)
            if chunk is None and reuse_fenced and self._fenced:
                if self._settle_fences_locked():
                    chunk = self._take_locked(size)
            return chunk

    def _take_locked(self, size: int) -> Chunk | None:
        for slab in self._slabs:
            offset = slab.take(size)
            if offset is not None:
                return Chunk(slab, offset, size)
        return None

    def _grow(self, size: int) -> Chunk:
        """A new slab with room for ``size`` bytes; else free what can be freed and try
        once more; else MemoryError."""
        with self._lock:
            held = sum(s.nbytes for s in self._slabs)
        first = max(_round_up(size, SLAB_ROUND), min(max(SLAB_MIN, held), SLAB_MAX))
        if self.cap:
            first = min(first, max(size, self.cap))
        for nbytes in dict.fromkeys((first, size)):
            try:
                return self._new_slab(nbytes, size)
            except MemoryError as err:
                error = err
        log.info("gpu_malloc_retry", ordinal=self.ordinal, request_bytes=size)
        self.trim()
        self.layer.trim()
        chunk = self._take(size, reuse_fenced=True)
        if chunk is not None:
            return chunk
        try:
            return self._new_slab(size, size)
        except MemoryError as err:
            raise MemoryError(f"{err} (after waiting for pending frees, freeing idle "
                              f"memory and CuPy's memory pools)") from error

    def _new_slab(self, nbytes: int, size: int) -> Chunk:
        memory = self.layer.malloc(self.ordinal, nbytes)
        weakref.finalize(memory, self._freed.append, nbytes)
        slab = Slab(memory, nbytes)
        offset = slab.take(size)
        with self._lock:
            self._slabs.append(slab)
            self.n_slabs_made += 1
        return Chunk(slab, offset, size)

    def _wait_for_fences(self) -> None:
        """Wait until every fenced range may be reused, and give them back."""
        with self._lock:
            fenced = list(self._fenced)
        for _, events in fenced:
            for event in events:
                try:
                    self.layer.synchronize(event)
                except Exception:  # a failed GPU: nothing of it runs any more
                    pass
        with self._lock:
            self._settle_fences_locked()

    def _settle_fences_locked(self) -> bool:
        """Give back fenced ranges whose events completed; True when any was."""
        still, given = [], False
        for chunk, events in self._fenced:
            if all(self._passed(event) for event in events):
                chunk.slab.give(chunk.offset, chunk.nbytes)
                given = True
            else:
                still.append((chunk, events))
        self._fenced = still
        return given

    def _passed(self, event) -> bool:
        try:
            return self.layer.query(event)
        except Exception:  # a failed GPU: nothing of it runs any more
            return True

    def _free_slab(self, slab: Slab) -> None:
        """Let go of an idle slab (counted in ``n_slabs_freed`` once its memory is gone)."""
        try:
            self.layer.free(slab.memory)
        except Exception as err:  # a failed GPU cannot free; the process will end
            log.warning("gpu_free_failed", ordinal=self.ordinal, error=repr(err))
        slab.memory = None
