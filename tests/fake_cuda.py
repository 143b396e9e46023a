"""A test double of the CUDA layer (``minerva.device.cuda_layer.CudaLayer``), on the host.

Device arrays are NumPy arrays over host "chunks"; kernels and copies run at once, on the
thread that queues them; what is simulated is *when work counts as done*. Each stream keeps
its recorded events in order. With ``auto_complete`` (the default) an event completes when
it is recorded; otherwise it stays pending until the test calls :meth:`FakeCuda.complete`
(oldest first on each stream, as a real stream would) or :meth:`FakeCuda.open_gates`.

Everything the device asks for is logged so tests can assert it: ``calls`` (name and
arguments of every copy, wait and peer call), ``bound`` (thread name and stream of every
``bind``), ``n_pinned`` and the bytes in use per GPU. Knobs: ``n_devices``, ``peer``
(whether GPUs can reach each other), ``mem_bytes`` (per GPU; malloc raises MemoryError
past it), ``fail_events`` (events that complete with an error).
"""
from __future__ import annotations

import contextlib
import itertools
import threading

import numpy as np

from minerva.device.cuda_layer import CudaLayer

SYNC_TIMEOUT = 20.0
"""A test that forgets to complete an event fails after this long instead of hanging."""


class FakeStream:
    """A stream: its GPU and its events not yet completed, oldest first."""

    def __init__(self, ordinal, number):
        self.device_id = ordinal
        self.name = f"stream{number}@gpu{ordinal}"
        self.pending: list[FakeEvent] = []

    def __repr__(self):
        return self.name


class FakeEvent:
    """An event: done when its ``threading.Event`` is set; ``error`` makes waiting raise."""

    def __init__(self, ordinal, number):
        self.ordinal = ordinal
        self.number = number
        self.stream = None
        self.error = None
        self.done = threading.Event()

    def __repr__(self):
        return f"event{self.number}@{self.stream}"


class FakeChunk:
    """Device memory of one malloc: host bytes."""

    def __init__(self, ordinal, nbytes):
        self.ordinal = ordinal
        self.bytes = np.zeros(nbytes, np.uint8)
        self.freed = False


class FakePointer:
    """What the allocator hook returns: a byte view that keeps its owner alive."""

    def __init__(self, chunk, offset, nbytes, owner):
        self.bytes = chunk.bytes[offset:offset + nbytes]
        self.owner = owner


class FakeCuda(CudaLayer):
    """The CUDA layer simulated on the host (see the module docstring).

    ``_lock`` guards the streams' pending lists, the memory counters and the logs.
    """

    xp = np

    def __init__(self, n_devices=1, peer=True, mem_bytes=1 << 30, auto_complete=True,
                 name="Fake GPU"):
        self.n_devices = n_devices
        self.peer = peer
        self.mem_bytes = mem_bytes
        self.auto_complete = auto_complete
        self.name = name
        self.used = [0] * n_devices
        self.calls: list[tuple] = []
        self.bound: list[tuple] = []
        self.n_pinned = 0
        self.fail_events = False
        self._numbers = itertools.count(1)
        self._local = threading.local()
        self._lock = threading.Lock()

    # ---- devices ---------------------------------------------------------------------------

    def device_count(self):
        return self.n_devices

    def device_name(self, ordinal):
        return f"{self.name} {ordinal}"

    def mem_info(self, ordinal):
        return self.mem_bytes - self.used[ordinal], self.mem_bytes

    # ---- streams and events ----------------------------------------------------------------

    def new_stream(self, ordinal):
        return FakeStream(ordinal, next(self._numbers))

    def new_event(self, ordinal):
        return FakeEvent(ordinal, next(self._numbers))

    def record(self, event, stream):
        event.stream = stream
        if self.fail_events:
            event.error = RuntimeError("cudaErrorIllegalAddress (simulated)")
        with self._lock:
            if self.auto_complete:
                event.done.set()
            else:
                stream.pending.append(event)

    def wait(self, stream, event):
        self._log("wait", stream, event)

    def synchronize(self, event):
        if not event.done.wait(SYNC_TIMEOUT):
            raise RuntimeError(f"fake {event!r} never completed (did the test forget "
                               "fake.complete()?)")
        if event.error is not None:
            raise event.error

    @contextlib.contextmanager
    def bind(self, ordinal, stream, allocator):
        saved = getattr(self._local, "bound", None)
        self._local.bound = (ordinal, stream, allocator)
        with self._lock:
            self.bound.append((threading.current_thread().name, stream))
        try:
            yield
        finally:
            self._local.bound = saved

    # ---- memory ----------------------------------------------------------------------------

    def malloc(self, ordinal, nbytes):
        with self._lock:
            if self.used[ordinal] + nbytes > self.mem_bytes:
                raise MemoryError(f"fake cudaMalloc: GPU {ordinal} has "
                                  f"{self.mem_bytes - self.used[ordinal]} bytes left")
            self.used[ordinal] += nbytes
        return FakeChunk(ordinal, nbytes)

    def free(self, chunk):
        with self._lock:
            assert not chunk.freed, "chunk freed twice"
            chunk.freed = True
            self.used[chunk.ordinal] -= chunk.bytes.nbytes

    def view(self, chunk, offset, nbytes, shape, dtype):
        return np.ndarray(shape, dtype, chunk.bytes, offset)

    def temporary(self, chunk, offset, nbytes, owner):
        return FakePointer(chunk, offset, nbytes, owner)

    def pinned(self, nbytes):
        with self._lock:
            self.n_pinned += 1
        return np.empty(nbytes, np.uint8)

    # ---- copies ----------------------------------------------------------------------------

    def copy_h2d(self, dst, src, nbytes, stream):
        self._log("h2d", stream, nbytes)
        _bytes(dst)[:nbytes] = src[:nbytes]

    def copy_d2h(self, dst, src, nbytes, stream):
        self._log("d2h", stream, nbytes)
        dst[:nbytes] = _bytes(src)[:nbytes]

    def strided(self, array, shape, strides, offset):
        if 0 in shape:
            return np.ndarray(shape, array.dtype, array, 0)
        return np.ndarray(shape, array.dtype, array, offset, strides)

    def copy_d2d(self, dst, src, nbytes, stream):
        self._log("d2d", stream, nbytes)
        _bytes(dst)[:nbytes] = _bytes(src)[:nbytes]

    def copy_peer(self, dst, dst_ordinal, src, src_ordinal, nbytes, stream):
        self._log("peer", stream, (src_ordinal, dst_ordinal))
        _bytes(dst)[:nbytes] = _bytes(src)[:nbytes]

    def enable_peer_access(self, ordinal, peer):
        self._log("enable_peer", None, (ordinal, peer))
        return self.peer

    # ---- what tests use --------------------------------------------------------------------

    def current_allocator(self):
        """The allocator hook bound on this thread (what CuPy would call for a temporary)."""
        return self._local.bound[2]

    def current_stream(self):
        """The stream bound on this thread."""
        return self._local.bound[1]

    def complete(self, stream, count=None):
        """Complete the ``count`` oldest pending events of ``stream`` (all when None)."""
        with self._lock:
            done = stream.pending[:count] if count is not None else list(stream.pending)
            del stream.pending[:len(done)]
        for event in done:
            event.done.set()
        return len(done)

    def open_gates(self, streams):
        """Complete everything pending on ``streams`` and complete events at once from now."""
        self.auto_complete = True
        for stream in streams:
            self.complete(stream)

    def of(self, kind):
        """The logged calls of one kind (``h2d``, ``d2h``, ``d2d``, ``peer``, ``wait``...)."""
        with self._lock:
            return [call for call in self.calls if call[0] == kind]

    def _log(self, kind, stream, detail):
        with self._lock:
            self.calls.append((kind, stream, detail))


def _bytes(array):
    return array.reshape(-1).view(np.uint8)
