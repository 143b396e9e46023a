"""A test double of the CUDA layer (``minerva.device.gpu.layer.CudaLayer``) that fails where
a GPU would.

Device memory is host bytes and kernels are NumPy, but work is *not* done when it is queued:

- **Streams run later, in order.** Kernels (``launch``), copies and event records are queued
  on their stream. With ``run="lazy"`` (the default) a stream runs only when the host waits
  on an event recorded on it (``synchronize``), up to that event, following the streams it
  was told to wait for (``wait``) and nothing else; ``free`` and a new pinned allocation
  synchronize the device, as ``cudaFree``/``cudaHostAlloc`` do. With ``run="background"``
  a GPU thread also runs queued work on its own (``delay`` seconds per item), the newest
  runnable stream first, so work that is not ordered runs in the wrong order. Either way a
  missing wait, an early free or a buffer reused too soon reads wrong data.
- **Waits block.** A wait for work that cannot run blocks, as ``cudaEventSynchronize`` does,
  with no timeout: tests bound it with their own timeouts and the engine's deadlines.
  ``close`` ends such waits (with a RuntimeError) so no thread outlives the test.
- **Devices own streams and events.** Recording an event of one GPU on another GPU's stream,
  or copying from a pointer of another GPU (without peer access) raises ``FakeCudaError``
  (invalid handle or value); launching on a stream of a GPU other than the thread's current
  one raises the RuntimeError CuPy raises. A thread is on GPU 0 and its legacy null stream
  (``null_stream``) until it is bound, as in CuPy; the streams ``new_stream`` makes are
  non-blocking, so the null stream and they do not wait for each other.
- **Errors are sticky.** ``fault(ordinal)`` makes the next kernel run on that GPU hit an
  illegal address (``poison`` does it at once): from then on every call for that GPU,
  every wait and query raise the same ``FakeCudaError`` (status 700), as CUDA does — also
  leaving a ``bind`` (CuPy restores the thread's previous stream and device with
  ``cudaGetDevice``/``cudaSetDevice``, which return the context's error); other GPUs keep
  working. A kernel may raise ``FakeCublasError`` (a cuBLAS status, as CuPy's
  ``CUBLASError``): on a lost context cuBLAS reports its own status
  (CUBLAS_STATUS_EXECUTION_FAILED 13, CUBLAS_STATUS_INTERNAL_ERROR 14), not CUDA's;
  ``context_error`` tells the context's own error.
- **Memory behaves.** ``malloc`` returns garbage-filled memory; ``free`` frees and poisons
  it at once (harsher than CuPy, whose memory lives on while an array over it does), and a
  chunk nothing refers to any more is freed as CuPy's is; pinned buffers return to a pool (and are poisoned) the moment the array handed out is dropped,
  and the next ``pinned`` call of that size gets the same memory back.
- **Copies are raw.** Copies move bytes between C-contiguous buffers; a non-contiguous
  source or destination is a bug in the caller (CUDA would copy the wrong bytes), so it
  raises.

Counters for tests: ``n_syncs`` (host waits, ``synchronize``), ``n_device_syncs`` (implicit
ones: ``free``, new pinned memory), ``n_mallocs``, ``n_frees``, ``n_pinned`` (``pinned``
calls), ``n_pinned_allocs``, ``n_trims``; ``calls`` logs copies, waits, launches and peer
calls; ``bound`` every ``bind``; ``kernels`` the ElementwiseKernels made
(``elementwise_kernel``: the jit's fused kernels, evaluated with NumPy by
``fake_elementwise``). ``complete(stream, count)`` runs a stream through its next
``count`` recorded events (all when None), for tests that release work step by step.
"""
from __future__ import annotations

import bisect
import collections
import contextlib
import itertools
import threading
import time
import weakref

import numpy as np

from minerva.device.gpu.layer import CudaLayer
from tests.support.fake_elementwise import FakeElementwiseKernel

INVALID_VALUE, INVALID_HANDLE, ILLEGAL_ADDRESS, LAUNCH_FAILURE = 1, 400, 700, 719
CUBLAS_EXECUTION_FAILED, CUBLAS_INTERNAL_ERROR = 13, 14
IDLE_WAIT_S = 0.01
"""How often a blocked wait looks again whether another thread let its work run."""
GARBAGE, POISON = 0xA5, 0xDD


class FakeCudaError(RuntimeError):
    """A CUDA error: ``status`` is the CUDA error code (as CuPy's CUDARuntimeError)."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{message} (simulated CUDA error {status})")
        self.status = status


class FakeCublasError(RuntimeError):
    """A cuBLAS error: ``status`` is a cuBLAS status (as CuPy's CUBLASError)."""

    def __init__(self, status: int, message: str = "cuBLAS call failed"):
        super().__init__(f"{message} (simulated cuBLAS status {status})")
        self.status = status


class FakeStream:
    """A stream of one GPU: its queued work, oldest first."""

    def __init__(self, ordinal, number, name=None):
        self.device_id = ordinal
        self.name = name or f"stream{number}@gpu{ordinal}"
        self.items: collections.deque = collections.deque()

    @property
    def pending(self) -> list:
        """Events recorded on this stream that have not run yet."""
        return [item[2] for item in self.items if item[1] == "record"]

    def __repr__(self):
        return self.name


class FakeEvent:
    """An event of one GPU: done when the stream ran past its last record."""

    def __init__(self, ordinal, number):
        self.ordinal = ordinal
        self.number = number
        self.stream = None
        self.recorded = False
        self.done = threading.Event()

    def __repr__(self):
        return f"event{self.number}@{self.stream}"


class FakeChunk:
    """Device memory of one malloc: host bytes, garbage at first."""

    def __init__(self, ordinal, nbytes):
        self.ordinal = ordinal
        self.bytes = np.full(nbytes, GARBAGE, np.uint8)
        self.freed = False
        self.address = self.bytes.__array_interface__["data"][0]

    @property
    def ptr(self):
        return self.address


class FakePointer:
    """What the allocator hook returns: a byte view that keeps its owner alive."""

    def __init__(self, chunk, offset, nbytes, owner):
        self.bytes = chunk.bytes[offset:offset + nbytes]
        self.owner = owner


class _Pinned(np.ndarray):
    """A pinned buffer handed out (its memory goes back to the pool when it dies)."""


class FakeCuda(CudaLayer):
    """The CUDA layer simulated on the host (see the module docstring).

    ``_lock`` guards the stream queues, the memory counters, the pinned pool, the address
    index and the logs; ``_drive`` (reentrant) is held while queued work runs, so one
    thread at a time runs GPU work.
    """

    xp = np
    cublas_error = FakeCublasError

    def __init__(self, n_devices=1, peer=True, mem_bytes=1 << 30, name="Fake GPU",
                 run="lazy", delay=0.0, pinned_syncs=True):
        assert run in ("lazy", "background")
        self.n_devices = n_devices
        self.peer = peer
        self.mem_bytes = mem_bytes
        self.name = name
        self.run = run
        self.delay = delay
        self.pinned_syncs = pinned_syncs
        self.used = [0] * n_devices
        self.calls: list[tuple] = []
        self.bound: list[tuple] = []
        self.kernels: list = []  # the ElementwiseKernels made (elementwise_kernel)
        self.n_syncs = self.n_device_syncs = self.n_mallocs = self.n_frees = 0
        self.n_pinned = self.n_pinned_allocs = self.n_trims = 0
        self.sticky: dict[int, FakeCudaError] = {}
        self._faults: dict[int, int] = {}
        self._numbers = itertools.count(1)
        self._seq = itertools.count()
        self._streams: list[FakeStream] = []
        self._pinned_free: dict[int, list] = {}
        self._peers_on: set = set()
        self._chunks: list = []  # (address, end, chunk), sorted
        self._local = threading.local()
        self._lock = threading.Lock()
        self._drive = threading.RLock()
        self._work = threading.Condition(self._lock)
        self._closed = False
        self._null = [self._add_stream(FakeStream(i, 0, f"null@gpu{i}"))
                      for i in range(n_devices)]
        self._gpu = None
        if run == "background":
            self._gpu = threading.Thread(target=self._gpu_loop, name="fake-gpu", daemon=True)
            self._gpu.start()

    def close(self) -> None:
        """Stop the background GPU thread (if any) and end the waits still blocked."""
        with self._work:
            self._closed = True
            self._work.notify_all()
        if self._gpu is not None:
            self._gpu.join(5)

    # ---- devices ---------------------------------------------------------------------------

    def device_count(self):
        return self.n_devices

    def device_name(self, ordinal):
        self._alive(ordinal)
        return f"{self.name} {ordinal}"

    def mem_info(self, ordinal):
        self._alive(ordinal)
        return self.mem_bytes - self.used[ordinal], self.mem_bytes

    # ---- streams, events, kernels ------------------------------------------------------------

    def new_stream(self, ordinal):
        self._alive(ordinal)
        return self._add_stream(FakeStream(ordinal, next(self._numbers)))

    def _add_stream(self, stream):
        with self._lock:
            self._streams.append(stream)
        return stream

    def null_stream(self, ordinal):
        """The legacy null stream of GPU ``ordinal`` (CuPy's ``Stream.null``)."""
        return self._null[ordinal]

    def new_event(self, ordinal):
        self._alive(ordinal)
        return FakeEvent(ordinal, next(self._numbers))

    def record(self, event, stream):
        self._alive(stream.device_id)
        if event.ordinal != stream.device_id:
            raise FakeCudaError(INVALID_HANDLE, f"cudaEventRecord: {event!r} of GPU "
                                f"{event.ordinal} recorded on {stream!r}")
        event.stream, event.recorded = stream, True
        event.done.clear()
        self._queue(stream, "record", event)

    def wait(self, stream, event):
        self._alive(stream.device_id)
        self._log("wait", stream, event)
        if event.recorded:
            self._queue(stream, "wait", event)

    def synchronize(self, event):
        with self._lock:
            self.n_syncs += 1
        self._alive(event.ordinal)
        while event.recorded and not event.done.is_set():
            with self._drive:
                self._run_to(event)
            if not event.done.is_set():
                self._alive(event.ordinal)
                self._blocked(event)
        self._alive(event.ordinal)

    def _blocked(self, event) -> None:
        """A wait whose work cannot run now: block (as CUDA, without a timeout) until another
        thread lets it run; ``close`` ends it."""
        with self._work:
            if self._closed:
                raise RuntimeError(f"the fake GPUs were closed while a wait for {event!r} "
                                   f"was blocked")
            self._work.wait(IDLE_WAIT_S)

    def query(self, event):
        self._alive(event.ordinal)
        return not event.recorded or event.done.is_set()

    def launch(self, stream, kernel):
        ordinal, current, allocator = self._binding()
        self._alive(stream.device_id)
        if stream.device_id != ordinal:  # what CuPy's Stream.__enter__ raises
            raise RuntimeError(f"The device that the stream is created on "
                               f"({stream.device_id}) does not match with the current "
                               f"device ({ordinal})")
        self._log("launch", stream, threading.current_thread().name)
        self._queue(stream, "kernel", (kernel, (ordinal, stream, allocator)))

    @contextlib.contextmanager
    def bind(self, ordinal, stream, allocator):
        self._alive(ordinal)
        if stream.device_id != ordinal:
            raise FakeCudaError(INVALID_HANDLE, f"{stream!r} made current on GPU {ordinal}")
        saved = getattr(self._local, "bound", None)
        self._local.bound = (ordinal, stream, allocator)
        with self._lock:
            self.bound.append((threading.current_thread().name, stream))
        try:
            yield
        finally:
            self._local.bound = saved
            self._alive(ordinal)  # CuPy restores the device and stream with CUDA calls

    def _binding(self) -> tuple:
        """``(current GPU, current stream, allocator hook)`` of the calling thread: GPU 0,
        its null stream and CuPy's own pool (None) until the thread is bound."""
        bound = getattr(self._local, "bound", None)
        return bound if bound is not None else (0, self._null[0], None)

    # ---- memory ----------------------------------------------------------------------------

    def malloc(self, ordinal, nbytes):
        self._alive(ordinal)
        with self._lock:
            if self.used[ordinal] + nbytes > self.mem_bytes:
                raise MemoryError(f"fake cudaMalloc: GPU {ordinal} has "
                                  f"{self.mem_bytes - self.used[ordinal]} bytes left")
            self.used[ordinal] += nbytes
            self.n_mallocs += 1
            chunk = FakeChunk(ordinal, nbytes)
            bisect.insort(self._chunks, (chunk.address, chunk.address + nbytes,
                                         next(self._numbers), weakref.ref(chunk)))
        # as CuPy's memory, a chunk nothing refers to any more is freed
        chunk.finalizer = weakref.finalize(chunk, self._forget, ordinal, nbytes,
                                           chunk.address)
        return chunk

    def free(self, chunk):
        self._alive(chunk.ordinal)
        self._sync_device(chunk.ordinal)  # cudaFree waits for the whole device
        with self._lock:
            assert not chunk.freed, "chunk freed twice"
            chunk.freed = True
            self.n_frees += 1
        chunk.finalizer()
        chunk.bytes[:] = POISON

    def _forget(self, ordinal, nbytes, address):
        """A chunk was freed, or nothing refers to it any more."""
        with self._lock:
            self.used[ordinal] -= nbytes
            self._chunks = [entry for entry in self._chunks if entry[3]() is not None]

    def trim(self):
        with self._lock:
            self.n_trims += 1
            self._pinned_free.clear()

    def elementwise_kernel(self, in_params, out_params, operation, name, preamble):
        """CuPy's ``ElementwiseKernel`` for the jit's fused kernels, evaluated with NumPy
        (``fake_elementwise``); every kernel made is kept in ``kernels``."""
        kernel = FakeElementwiseKernel(in_params, out_params, operation, name, preamble)
        with self._lock:
            self.kernels.append(kernel)
        return kernel

    def view(self, chunk, offset, nbytes, shape, dtype):
        assert not chunk.freed, "a view of freed device memory"
        return np.ndarray(shape, dtype, chunk.bytes, offset)

    def temporary(self, chunk, offset, nbytes, owner):
        return FakePointer(chunk, offset, nbytes, owner)

    def pinned(self, nbytes):
        with self._lock:
            self.n_pinned += 1
            free = self._pinned_free.get(nbytes)
            buffer = free.pop() if free else None
        if buffer is None:
            if self.pinned_syncs:
                self._sync_all()  # cudaHostAlloc
            with self._lock:
                self.n_pinned_allocs += 1
            buffer = np.full(nbytes, GARBAGE, np.uint8)
        array = buffer.view(_Pinned)
        weakref.finalize(array, self._pinned_back, buffer)
        return array

    def _pinned_back(self, buffer):
        buffer[:] = POISON
        with self._lock:
            self._pinned_free.setdefault(buffer.nbytes, []).append(buffer)

    # ---- copies ----------------------------------------------------------------------------

    def copy_h2d(self, dst, src, nbytes, stream):
        self._copy("h2d", stream, nbytes, dst, stream.device_id, src, None, nbytes)

    def copy_d2h(self, dst, src, nbytes, stream):
        self._copy("d2h", stream, nbytes, dst, None, src, stream.device_id, nbytes)

    def strided(self, array, shape, strides, offset):
        if 0 in shape:
            return np.ndarray(shape, array.dtype, array, 0)
        return np.ndarray(shape, array.dtype, array, offset, strides)

    def copy_d2d(self, dst, src, nbytes, stream):
        ordinal = stream.device_id
        self._copy("d2d", stream, nbytes, dst, ordinal, src, ordinal, nbytes)

    def copy_peer(self, dst, dst_ordinal, src, src_ordinal, nbytes, stream):
        if dst_ordinal != src_ordinal and (dst_ordinal, src_ordinal) not in self._peers_on:
            raise FakeCudaError(INVALID_VALUE, f"peer copy from GPU {src_ordinal} to "
                                f"{dst_ordinal} without peer access")
        self._copy("peer", stream, (src_ordinal, dst_ordinal), dst, dst_ordinal, src,
                   src_ordinal, nbytes)

    def enable_peer_access(self, ordinal, peer):
        self._log("enable_peer", None, (ordinal, peer))
        if self.peer or ordinal == peer:
            self._peers_on.add((ordinal, peer))
        return self.peer

    # ---- what tests use --------------------------------------------------------------------

    def current_allocator(self):
        """The allocator hook bound on this thread (what CuPy would call for a temporary)."""
        return self._binding()[2]

    def current_stream(self):
        """The stream current on this thread (a GPU's null stream when it is not bound)."""
        return self._binding()[1]

    def context_error(self, ordinal):
        """The sticky error of GPU ``ordinal``, or None."""
        return self.sticky.get(ordinal)

    def complete(self, stream, count=None):
        """Run ``stream`` through its next ``count`` recorded events (all when None)."""
        events = stream.pending
        events = events if count is None else events[:count]
        for event in events:
            with self._drive:
                self._run_to(event)
        return len(events)

    def open_gates(self, streams):
        """Run everything queued on ``streams``."""
        for stream in streams:
            self.complete(stream)

    def fault(self, ordinal, status=ILLEGAL_ADDRESS):
        """The next kernel run on GPU ``ordinal`` fails with a sticky error."""
        self._faults[ordinal] = status

    def poison(self, ordinal, status=ILLEGAL_ADDRESS):
        """GPU ``ordinal`` hits a sticky error now."""
        with self._lock:
            self.sticky.setdefault(ordinal, FakeCudaError(
                status, f"GPU {ordinal}: an illegal memory access was encountered"))
            for stream in self._streams:
                if stream.device_id == ordinal:
                    stream.items.clear()

    def of(self, kind):
        """The logged calls of one kind (``h2d``, ``d2h``, ``d2d``, ``peer``, ``wait``,
        ``launch``...)."""
        with self._lock:
            return [call for call in self.calls if call[0] == kind]

    # ---- running queued work -----------------------------------------------------------------

    def _queue(self, stream, kind, payload):
        executing = getattr(self._local, "executing", None)
        if executing is not None and executing is stream and kind != "record":
            self._execute(stream, (0, kind, payload))  # issued by a running kernel
            return
        with self._work:
            stream.items.append((next(self._seq), kind, payload))
            self._work.notify_all()

    def _run_to(self, event):
        """Run ``event``'s stream until ``event`` is done (``_drive`` held)."""
        stream = event.stream
        while not event.done.is_set() and stream.items and stream.device_id not in self.sticky:
            if not self._step(stream):
                return

    def _step(self, stream) -> bool:
        """Run the head of ``stream`` (first what it waits for); False when it cannot."""
        seq, kind, payload = stream.items[0]
        if kind == "wait" and not payload.done.is_set():
            if payload.stream.device_id in self.sticky:  # it will never come
                with self._lock:
                    stream.items.popleft()
                raise FakeCudaError(INVALID_VALUE, f"{stream!r} waited for an event of "
                                    f"failed GPU {payload.stream.device_id}")
            self._run_to(payload)
            if not payload.done.is_set():
                return False
        with self._lock:
            if stream.items and stream.items[0][0] == seq:
                stream.items.popleft()
            else:
                return True  # another thread ran it
        self._execute(stream, (seq, kind, payload))
        return True

    def _execute(self, stream, item) -> None:
        _, kind, payload = item
        if kind == "record":
            payload.done.set()
        elif kind == "copy":
            payload()
        elif kind == "kernel":
            self._run_kernel(stream, *payload)

    def _run_kernel(self, stream, kernel, bound) -> None:
        ordinal = stream.device_id
        status = self._faults.pop(ordinal, None)
        if status is not None:
            self.poison(ordinal, status)
            return
        saved = getattr(self._local, "bound", None), getattr(self._local, "executing", None)
        self._local.bound, self._local.executing = bound, stream
        try:
            with np.errstate(all="ignore"):  # as on the launcher: GPUs do not warn
                kernel()
        except Exception as err:  # a crashing kernel: the context is lost
            self.poison(ordinal, LAUNCH_FAILURE)
            self.sticky[ordinal].__cause__ = err
        finally:
            self._local.bound, self._local.executing = saved

    def _sync_device(self, ordinal) -> None:
        with self._lock:
            self.n_device_syncs += 1
            streams = [s for s in self._streams if s.device_id == ordinal]
        self._run_streams(streams)

    def _sync_all(self) -> None:
        with self._lock:
            self.n_device_syncs += 1
            streams = list(self._streams)
        self._run_streams(streams)

    def _run_streams(self, streams) -> None:
        with self._drive:
            for stream in streams:
                for event in stream.pending:
                    self._run_to(event)
                while stream.items and stream.device_id not in self.sticky:
                    if not self._step(stream):
                        break

    def _gpu_loop(self) -> None:
        while True:
            with self._work:
                if self._closed:
                    return
                stream = self._runnable_locked()
                if stream is None:
                    self._work.wait(0.01)
                    continue
            with self._drive:
                if stream.items and stream.device_id not in self.sticky:
                    try:
                        self._step(stream)
                    except FakeCudaError:
                        pass
            time.sleep(self.delay)

    def _runnable_locked(self):
        """The stream whose runnable head was queued last (unordered work runs late)."""
        best = None
        for stream in self._streams:
            if not stream.items or stream.device_id in self.sticky:
                continue
            seq, kind, payload = stream.items[0]
            if kind == "wait" and not payload.done.is_set():
                continue
            if best is None or seq > best[0]:
                best = (seq, stream)
        return None if best is None else best[1]

    # ---- checks and logs -----------------------------------------------------------------------

    def _alive(self, ordinal) -> None:
        error = self.sticky.get(ordinal)
        if error is not None:
            raise error

    def _copy(self, kind, stream, detail, dst, dst_gpu, src, src_gpu, nbytes) -> None:
        self._alive(stream.device_id)
        self._log(kind, stream, detail)
        dst_bytes = self._raw(dst, dst_gpu, "destination", nbytes)
        src_bytes = self._raw(src, src_gpu, "source", nbytes)

        def copy():
            dst_bytes[:nbytes] = src_bytes[:nbytes]
        self._queue(stream, "copy", copy)

    def _raw(self, array, ordinal, role, nbytes):
        """The bytes of a C-contiguous ``array`` (of GPU ``ordinal``, or host memory)."""
        if not array.flags.c_contiguous:
            raise FakeCudaError(INVALID_VALUE, f"a raw copy got a non-contiguous {role} "
                                f"(shape {array.shape}, strides {array.strides})")
        if array.nbytes < nbytes:
            raise FakeCudaError(INVALID_VALUE, f"a copy of {nbytes} bytes from/to a "
                                f"{array.nbytes}-byte {role}")
        chunk = self._chunk_of(array) if nbytes else None
        owner = None if chunk is None else chunk.ordinal
        if chunk is not None and chunk.freed:
            raise FakeCudaError(ILLEGAL_ADDRESS, f"a copy {role} in freed device memory")
        if owner != ordinal and not (owner is not None and ordinal is not None
                                     and (ordinal, owner) in self._peers_on):
            if owner is not None or ordinal is None:
                raise FakeCudaError(INVALID_VALUE, f"a copy {role} in memory of "
                                    f"{'the host' if owner is None else f'GPU {owner}'} "
                                    f"where {'the host' if ordinal is None else f'GPU {ordinal}'}"
                                    f" memory was expected")
        return array.reshape(-1).view(np.uint8)

    def _chunk_of(self, array):
        address = array.__array_interface__["data"][0]
        with self._lock:
            i = bisect.bisect_right(self._chunks, (address, float("inf"))) - 1
            if i >= 0:
                start, end, _, ref = self._chunks[i]
                if start <= address < end:
                    return ref()
        return None

    def _log(self, kind, stream, detail):
        with self._lock:
            self.calls.append((kind, stream, detail))


def gpu_runtime(monkeypatch, with_cpu: bool = False):
    """For a fixture (``yield from``): a runtime whose current device is a GPU device over a
    new CUDA double, after CPU device 0 when ``with_cpu``; yields the double, then shuts the
    runtime down."""
    import minerva as mv
    from minerva.device import gpu
    layer = FakeCuda()
    monkeypatch.setattr(gpu, "load_cuda_layer", lambda: layer)
    mv.init()
    if with_cpu:
        mv.create_cpu_device()
    mv.set_device(mv.create_gpu_device(0))
    yield layer
    mv.shutdown(timeout=30)
    layer.close()
