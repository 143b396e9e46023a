"""GPU devices: ops run with CuPy on a device's own streams; completion comes from events.

A :class:`GpuDevice` owns, on one physical GPU (``physical``):

- a **compute stream** and a **copy stream**, both non-blocking;
- a **launcher thread** that takes submitted ops in order, allocates their outputs from the
  device's store, queues their kernels (compute stream) or transfers (copy stream, see
  :mod:`minerva.device.gpu_copies`) and records one event per op. ``submit`` only puts the
  op in the launcher's queue, so dispatcher threads never wait for a GPU;
- one **completion thread** per stream (:mod:`minerva.device.gpu_completion`) that waits on
  the events in order and reports each finished op to the listener;
- its own **store** over the GPU's memory. Outputs are allocated for the stream that writes
  them (``compute`` or ``copy``); the store keeps one free list per stream, so a block freed
  after work on one stream is reused only by later work of that same stream. Temporaries
  CuPy allocates inside an op come from the same store (``gpu_temporaries``).

Several devices may share a physical GPU (``MINERVA_VIRTUAL_GPUS``); each has its own
streams, threads and store. The naive engine calls :meth:`run_inline`: the op is queued on
the compute stream from the caller's thread, which then waits for it.
"""
from __future__ import annotations

import threading
import time

import numpy as np

from minerva.common.errors import DeviceError
from minerva.common.logging import get_logger
from minerva.device.base import Device, detach_traceback
from minerva.device.gpu_completion import Launched, StreamWatcher
from minerva.device.gpu_copies import COPY_STREAM, CopyPaths
from minerva.device.gpu_temporaries import TemporaryAllocator
from minerva.device.ready import STOP, ReadyQueue

log = get_logger("minerva.device")
COMPUTE_STREAM = "compute"
STREAMS = (COMPUTE_STREAM, COPY_STREAM)
COPY_STREAM_OPS = frozenset({"copy", "from_host"})
"""Ops that only move bytes: they run on the copy stream."""



class GpuDevice(Device):
    """One logical GPU: streams, a launcher thread, completion threads and a store.

    ``_events`` maps each live output block to the event of the op that wrote it (copies
    from this device wait on it). It takes no lock: entries are set by the thread launching
    the op and removed by ``free`` after every reader finished; single dict operations are
    atomic in CPython.
    """

    kind = "gpu"
    output_stream = COMPUTE_STREAM

    def __init__(self, device_id: int, store, hooks, listener, layer, ordinal: int,
                 physical: int, n_virtual: int = 0):
        super().__init__(device_id, store, hooks, listener)
        self.layer = layer
        self.xp = layer.xp
        self.ordinal = ordinal
        self.physical = physical
        self.n_virtual = n_virtual
        self.streams = {name: layer.new_stream(physical) for name in STREAMS}
        self.tracks = {name: f"stream:{name}" for name in STREAMS}
        self.temporaries = TemporaryAllocator(store, layer, COMPUTE_STREAM)
        self.copies = CopyPaths(self)
        self._events: dict = {}
        self._last_done = dict.fromkeys(STREAMS, 0)
        self._inbox = ReadyQueue()
        prefix = f"minerva-gpu{device_id}"
        self._watchers = {name: StreamWatcher(f"{prefix}-{name}-done", self._complete)
                          for name in STREAMS}
        self._launcher = threading.Thread(target=self._launch_loop, daemon=True,
                                          name=f"{prefix}-launcher")
        self._launcher.start()

    # ---- the Device interface --------------------------------------------------------------

    def submit(self, op) -> None:
        """Queue ``op`` for the launcher thread; returns at once."""
        self._inbox.put(op)

    def run_inline(self, op) -> BaseException | None:
        """Queue ``op`` from the calling thread and wait for it (the naive engine)."""
        with self.layer.bind(self.physical, self.streams[COMPUTE_STREAM], self.temporaries):
            launched = self._launch(op)
        return self._settle(launched)

    def free(self, block) -> None:
        """Return a dead value's block to the store (its stream's free list)."""
        self._events.pop(block, None)
        super().free(block)

    def view(self, array, view):
        """``view`` (shape, strides, offset in bytes) of a whole device buffer ``array``."""
        return self.layer.strided(array, *view)

    def event_of(self, block):
        """The event of the op that wrote ``block`` (None if unknown)."""
        return self._events.get(block)

    def to_host(self, array, view=None):
        """A NumPy copy of a computed buffer of this device, or of its ``view`` (gathered
        into a contiguous buffer on the GPU first), through pinned memory."""
        if view is None:
            return self.copies.read_back(array)
        stream = self.streams[COMPUTE_STREAM]
        with self.layer.bind(self.physical, stream, self.temporaries):
            packed = self.xp.ascontiguousarray(self.view(array, view))
        gathered = self.layer.new_event(self.physical)
        self.layer.record(gathered, stream)
        return self.copies.read_back(packed, event=gathered)

    def copy_out(self, data, out) -> bool:
        """Copy data node ``data`` of this device into host array ``out`` now (a CPU
        device's copy op calls this): device to host through pinned memory."""
        self.copies.read_back(data.array, out, self.event_of(data.block))
        return True

    def info(self) -> dict:
        """Kind, ordinals, name, memory of the GPU and of this device's store, copies."""
        free, total = self.layer.mem_info(self.physical)
        stats = self.memory_stats()
        name = self.layer.device_name(self.physical)
        if self.n_virtual:
            name = f"{name} (virtual GPU {self.ordinal} of {self.n_virtual} on GPU {self.physical})"
        return {"kind": "gpu", "ordinal": self.ordinal, "physical_ordinal": self.physical,
                "virtual": bool(self.n_virtual), "device_id": self.device_id, "name": name,
                "memory_total": total, "memory_free": free,
                "memory_in_use": stats["in_use_bytes"], "memory_limit": stats["limit_bytes"],
                "streams": list(STREAMS), "copies": self.copies.snapshot()}

    def memory_stats(self) -> dict:
        """This device's store statistics (temporaries CuPy dropped are freed first)."""
        self.temporaries.drain()
        return self.store.stats()

    def release_all(self) -> int:
        """Return the store's wholly free chunks to the GPU."""
        self.temporaries.drain()
        return self.store.release_all()

    def shutdown(self, timeout: float | None = None) -> None:
        """Stop the launcher after the ops already queued, then the completion threads after
        their events; return cached memory to the GPU."""
        self._inbox.put(STOP)
        self._launcher.join(timeout)
        if self._launcher.is_alive():
            log.warning("gpu_launcher_did_not_stop", device=self.device_id)
        for watcher in self._watchers.values():
            watcher.stop(timeout)
        self.release_all()

    # ---- launching (launcher thread, or the caller in run_inline) --------------------------

    def _launch_loop(self) -> None:
        np.seterr(all="ignore")  # host-side NumPy in ops (random draws): no FP warnings
        try:
            with self.layer.bind(self.physical, self.streams[COMPUTE_STREAM],
                                 self.temporaries):
                self._serve()
        except Exception as err:  # the GPU cannot be used from this thread at all
            log.error("gpu_launcher_failed", device=self.device_id, error=repr(err))
            self._refuse_all(err)

    def _serve(self) -> None:
        get, launch, watchers = self._inbox.get, self._launch, self._watchers
        while True:
            op = get()
            if op is STOP:
                return
            if self.cancelled is not None:
                self.listener(op, self.cancelled)
                continue
            launched = launch(op)
            watchers[launched.stream_name].put(launched)

    def _launch(self, op) -> Launched:
        """Allocate ``op``'s outputs and queue its work on its stream, then record its
        event; an error raised on the way is kept for when the event completes."""
        t_launch = time.perf_counter_ns()
        stream_name = (COPY_STREAM if op.op_def.name in COPY_STREAM_OPS and op.views is None
                       else COMPUTE_STREAM)
        keep = error = None
        self.temporaries.running(op)
        try:
            if stream_name == COPY_STREAM:
                keep = self.copies.run(op)
            else:
                self.execute(op)
        except Exception as err:  # stored on the op's outputs by the engine
            error = detach_traceback(err)
        self.temporaries.running(None)
        self.temporaries.drain()
        event = self._record(op, stream_name)
        if event is None and error is None:
            error = DeviceError(f"GPU {self.physical}: could not record the completion "
                                f"event of op '{op.op_def.name}'")
        return Launched(op, stream_name, event, error, keep, t_launch)

    def _record(self, op, stream_name):
        """Record the op's event on its stream and note it for the blocks it wrote."""
        try:
            event = self.layer.new_event(self.physical)
            self.layer.record(event, self.streams[stream_name])
        except Exception as err:
            log.error("gpu_event_record_failed", device=self.device_id, error=repr(err))
            return None
        events = self._events
        for data in op.outputs:
            block = data.block if data.base is None else data.base.block
            if block is not None:
                events[block] = event
        return event

    def _refuse_all(self, err) -> None:
        """Report every op submitted from now on as failed (the launcher cannot run)."""
        while True:
            op = self._inbox.get()
            if op is STOP:
                return
            error = DeviceError(f"GPU {self.physical} cannot run ops: {err!r}")
            self.listener(op, error)

    # ---- completion (completion threads, or the caller in run_inline) ----------------------

    def _complete(self, launched: Launched) -> None:
        error = self._settle(launched)
        self.listener(launched.op, error)

    def _settle(self, launched: Launched) -> BaseException | None:
        """Wait for the op's event; announce its start and end on its stream's track.

        The start shown is when the GPU could first have begun it: the later of its launch
        and the previous completion on the same stream (a stream runs its work in order)."""
        error = launched.error
        if launched.event is not None:
            try:
                self.layer.synchronize(launched.event)
            except Exception as err:  # an asynchronous CUDA error
                error = error or DeviceError(f"GPU {self.physical} failed running op "
                                             f"'{launched.op.op_def.name}': {err}")
        t_done = time.perf_counter_ns()
        name = launched.stream_name
        t_start = max(launched.t_launch, self._last_done[name])
        self._last_done[name] = t_done
        launched.keep = None
        hooks, track = self.hooks, self.tracks[name]
        hooks.op_started(launched.op, self.device_id, track, t_start)
        hooks.op_finished(launched.op, self.device_id, track, t_done, error)
        return error
