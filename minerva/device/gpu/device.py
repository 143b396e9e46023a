"""GPU devices: ops run with CuPy on a device's own streams, launched ahead of completion.

A :class:`GpuDevice` owns, on one physical GPU (``physical``):

- a **compute stream** and a **copy stream**, both non-blocking;
- a **launcher thread** that takes submitted ops (oldest first), allocates their outputs
  from the device's store, orders them after the launched work they read (stream order on
  one stream, ``cudaStreamWaitEvent`` across the two), queues their kernels (compute
  stream, through ``layer.launch``) or transfers (copy stream, :mod:`gpu_copies`), records
  one event per op, and reports the op *launched* to the scheduler, which starts the ops on
  this device that were waiting only for it: a chain of dependent kernels is queued back
  to back, without a host round trip between them;
- a **settler thread** (:mod:`minerva.device.gpu.completion`) that learns in bulk which
  launched ops are done and reports them completed (the host, other devices and frees wait
  for that);
- its own **store** over the GPU's memory. Outputs are allocated for the stream that writes
  them; the store keeps one free list per stream, so a block freed after work on one stream
  is reused only by later work of that same stream. Temporaries CuPy allocates inside an op
  come from the same store (``gpu_temporaries``).

Errors: an error raised while queuing fails the op alone (reported when its event
completed, so the work it queued is done before anything it touched is freed). A CUDA
error that poisons the context (``CudaLayer.sticky_error``: illegal address, launch
failure, or any error raised while the context is lost, a cuBLAS status included) marks
the device *failed*: its pending and later ops fail with a DeviceError saying the process
must restart to use this GPU again; other devices keep working. On a lost context any CUDA
call may raise — leaving a thread's binding too — so every failure path still reports
each op, the launcher and settler threads end, and ``shutdown`` returns within its timeout.

The naive engine calls :meth:`run_inline`: the op is queued from the caller's thread, which
then waits for it.
"""
from __future__ import annotations

import threading
import time

from minerva.common.errors import DeviceError
from minerva.common.logging import get_logger
from minerva.device.base import Device
from minerva.device.gpu.completion import Settler
from minerva.device.gpu import fused
from minerva.device.gpu.copies import CopyPaths
from minerva.device.gpu.launching import COMPUTE_STREAM, STREAMS, Launching
from minerva.device.gpu.records import HeldBuffers, Launched
from minerva.device.gpu.temporaries import TemporaryAllocator
from minerva.device.ready import STOP, ReadyQueue

log = get_logger("minerva.device")
STOP_TIMEOUT = 10.0
"""Seconds ``shutdown`` waits for the device's threads when not told."""


class GpuDevice(Launching, Device):
    """One logical GPU: streams, a launcher thread, a settler thread and a store.

    ``_writers`` maps each live block to the record of the op that last wrote it (ops that
    read the block are ordered after that op; copies from this device wait on its event).
    It takes no lock: entries are set by the launching thread and removed by ``free``;
    single dict operations are atomic in CPython. ``held`` keeps host buffers a transfer
    may still use (``HeldBuffers``, with its own lock).
    """

    kind = "gpu"
    output_stream = COMPUTE_STREAM
    launches_ahead = True

    def __init__(self, device_id: int, store, hooks, listener, layer, ordinal: int,
                 physical: int, n_virtual: int = 0):
        super().__init__(device_id, store, hooks, listener)
        self.layer = layer
        self.xp = layer.xp
        self.ordinal = ordinal
        self.physical = physical
        self.n_virtual = n_virtual
        self.failed: DeviceError | None = None
        self.streams = {name: layer.new_stream(physical) for name in STREAMS}
        self.tracks = {name: f"stream:{name}" for name in STREAMS}
        self.temporaries = TemporaryAllocator(store, layer, COMPUTE_STREAM)
        if hasattr(store.allocator, "fence"):
            store.allocator.fence = self._fence
        self.copies = CopyPaths(self)
        self._writers: dict = {}
        self._last_done = dict.fromkeys(STREAMS, 0)
        self.held = HeldBuffers(layer)
        self._inbox = ReadyQueue()
        prefix = f"minerva-gpu{device_id}"
        self._settler = Settler(f"{prefix}-done", layer, STREAMS, self._report,
                                self._settle_failure)
        self._launcher = threading.Thread(target=self._launch_loop, daemon=True,
                                          name=f"{prefix}-launcher")
        self._launcher.start()
        self._launcher_id = self._launcher.ident

    # ---- the Device interface --------------------------------------------------------------

    def submit(self, op) -> None:
        """Queue ``op`` for the launcher thread; returns at once."""
        if threading.get_ident() == self._launcher_id:
            self._inbox.put_own(op)  # a consumer of the op just launched
        else:
            self._inbox.put(op)

    def run_inline(self, op, track: str | None = None) -> BaseException | None:
        """Queue ``op`` from the calling thread and wait for it (the naive engine)."""
        if self.failed is not None:
            return self.failed
        try:
            with self._bound(self.streams[COMPUTE_STREAM]):
                if op.op_def.deferred:
                    return super().run_inline(op, track)
                record = self._launch(op)
        except Exception as err:  # the GPU cannot be bound: the op never ran
            return self._launch_error(err)
        return self._settle_now(record)

    def urge(self, delta: int) -> None:
        """A thread waits for this device's work: settle completions promptly."""
        self._settler.urge(delta)

    def expedite(self) -> None:
        """Settle the work launched so far soon."""
        self._settler.expedite()

    def flush_launched(self, timeout: float | None) -> bool:
        """Settle the work launched so far and wait for that (not on the settler thread)."""
        return self._settler.flush(timeout)

    def free(self, block) -> None:
        """Return a dead value's block to the store (its stream's free list)."""
        self._writers.pop(block, None)
        super().free(block)

    def fusion_backend(self):
        """Generated CuPy ElementwiseKernels (``minerva.device.gpu.fused``)."""
        return fused.backend(self)

    def view(self, array, view):
        """``view`` (shape, strides, offset in bytes) of a whole device buffer ``array``;
        a view reading it as another dtype (``ops.views.ReadAs``) of the same itemsize."""
        dtype = getattr(view[1], "dtype", None)
        if dtype is not None and dtype != array.dtype:
            if dtype.itemsize != array.dtype.itemsize:
                raise TypeError("a view reading a GPU buffer as a dtype of another itemsize "
                                "is not supported; copy it to a CPU device first")
            array = array.view(dtype)
        return self.layer.strided(array, *view)

    def event_of(self, block):
        """The event of the op that last wrote ``block`` (None if unknown)."""
        record = self._writers.get(block)
        return None if record is None else record.event

    def order_after(self, data, stream_name: str, record: Launched) -> None:
        """Order work about to be queued on ``stream_name`` for ``record`` after the op that
        writes ``data`` (a value of this device): nothing on the same stream or once that
        op settled, else the stream waits for its event."""
        writer = self._writers.get(data.block)
        if (writer is None or writer.settled or writer.stream_name == stream_name
                or writer.event is None or writer in record.deps):
            return
        self.layer.wait(self.streams[stream_name], writer.event)
        record.deps.append(writer)

    def to_host(self, array, view=None):
        """A NumPy copy of a computed buffer of this device, or of its ``view`` (gathered
        into a contiguous buffer on the GPU first), through pinned memory."""
        if view is None:
            return self.copies.read_back(array)
        stream, xp = self.streams[COMPUTE_STREAM], self.xp
        with self._bound(stream):
            source = self.view(array, view)
            packed = xp.empty(source.shape, source.dtype)
            self.layer.launch(stream, lambda: xp.copyto(packed, source))
            gathered = self.layer.new_event(self.physical)
            self.layer.record(gathered, stream)
        return self.copies.read_back(packed, event=gathered)

    def copy_out(self, data, out) -> bool:
        """Copy data node ``data`` of this device into host array ``out`` now (a CPU
        device's copy op calls this): device to host through pinned memory."""
        self.copies.read_back(data.array, out, self.event_of(data.block))
        return True

    def hold(self, buffers: list, stream_names) -> None:
        """Keep host ``buffers`` a transfer on ``stream_names`` may still use until those
        streams pass this moment (forever when that cannot be marked: None)."""
        events: list = [None]  # None never passes
        if stream_names is not None:
            try:
                events = self._mark(stream_names)
            except Exception:  # a failed GPU: keep the buffers for the process's life
                pass
        self.held.hold(buffers, events)

    def info(self) -> dict:
        """Kind, ordinals, name, memory of the GPU and of this device's store, copies."""
        try:
            free, total = self.layer.mem_info(self.physical)
            name = self.layer.device_name(self.physical)
        except Exception:  # a failed GPU
            free = total = 0
            name = f"GPU {self.physical}"
        stats = self.memory_stats()
        if self.n_virtual:
            name = f"{name} (virtual GPU {self.ordinal} of {self.n_virtual} on GPU {self.physical})"
        return {"kind": "gpu", "ordinal": self.ordinal, "physical_ordinal": self.physical,
                "virtual": bool(self.n_virtual), "device_id": self.device_id, "name": name,
                "memory_total": total, "memory_free": free,
                "memory_in_use": stats["in_use_bytes"], "memory_limit": stats["limit_bytes"],
                "streams": list(STREAMS), "copies": self.copies.snapshot(),
                "failed": None if self.failed is None else str(self.failed),
                "completions": {"batches_polled": self._settler.n_polled,
                                "waits": self._settler.n_waited}}

    def memory_stats(self) -> dict:
        """This device's store statistics (temporaries CuPy dropped are freed first)."""
        self.temporaries.drain()
        return self.store.stats()

    def release_all(self) -> int:
        """Return the store's wholly free chunks, and the allocator's idle slabs, to the
        GPU."""
        self.temporaries.drain()
        released = self.store.release_all()
        trim = getattr(self.store.allocator, "trim", None)
        if trim is not None:
            trim()
        return released

    def shutdown(self, timeout: float | None = STOP_TIMEOUT) -> None:
        """Stop the launcher after the ops already queued, then the settler after their
        completions, all within ``timeout`` seconds; then return cached memory to the GPU
        (kept when a thread did not stop: work still queued may use it)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self._inbox.put(STOP)
        self._launcher.join(timeout)
        launcher_stopped = not self._launcher.is_alive()
        if not launcher_stopped:
            log.warning("gpu_launcher_did_not_stop", device=self.device_id)
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if self._settler.stop(left) and launcher_stopped:
            self.release_all()
        else:
            log.warning("gpu_memory_kept", device=self.device_id,
                        reason="work may still be queued")
