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
- a **settler thread** (:mod:`minerva.device.gpu_completion`) that learns in bulk which
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

import contextlib
import threading
import time

import numpy as np

from minerva.common.errors import DeviceError
from minerva.common.logging import get_logger
from minerva.device.base import LAUNCHED_REPORT, Device, detach_traceback
from minerva.device.gpu_completion import Settler
from minerva.device.gpu_copies import COPY_STREAM, CopyPaths
from minerva.device.gpu_records import HeldBuffers, Launched, estimate_times
from minerva.device.gpu_temporaries import TemporaryAllocator
from minerva.device.ready import STOP, ReadyQueue

log = get_logger("minerva.device")
COMPUTE_STREAM = "compute"
STREAMS = (COMPUTE_STREAM, COPY_STREAM)
COPY_STREAM_OPS = frozenset({"copy", "from_host"})
"""Ops that only move bytes: they run on the copy stream."""
STOP_TIMEOUT = 10.0
"""Seconds ``shutdown`` waits for the device's threads when not told."""


class GpuDevice(Device):
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

    def view(self, array, view):
        """``view`` (shape, strides, offset in bytes) of a whole device buffer ``array``."""
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

    # ---- launching (launcher thread, or the caller in run_inline) --------------------------

    def _launch_loop(self) -> None:
        np.seterr(all="ignore")  # host-side NumPy in ops (random draws): no FP warnings
        try:  # only binding raises: serving never does, nor does leaving the binding
            with self._bound(self.streams[COMPUTE_STREAM]):
                self._serve()
        except Exception as err:  # the GPU cannot be used from this thread at all
            log.error("gpu_launcher_failed", device=self.device_id, error=repr(err))
            self._refuse_all(err)

    def _serve(self) -> None:
        """Launch each op until STOP; whatever raises fails that op only."""
        get, serve_one = self._inbox.get, self._serve_one
        while True:
            op = get()
            if op is STOP:
                return
            try:
                serve_one(op)
            except Exception as err:  # a bug: this op fails, the launcher goes on
                log.exception("gpu_launch_failed", device=self.device_id, op=repr(op))
                self._tell(op, self._launch_error(err))

    def _serve_one(self, op) -> None:
        refused = self.cancelled or self.failed
        if refused is not None:
            self._tell(op, refused)
        elif op.op_def.deferred:  # another thread reports it finished
            ordering = Launched(op, COMPUTE_STREAM, 0)
            for data in op.inputs:  # its thread follows the compute stream
                self.order_after(data, COMPUTE_STREAM, ordering)
            self.start_deferred(op)
        else:
            self._hand_over(self._launch(op))

    @contextlib.contextmanager
    def _bound(self, stream):
        """The calling thread bound to this GPU, ``stream`` and the temporaries' allocator
        for a ``with`` block. Leaving never raises: on a lost context restoring the
        thread's device and stream fails, and marks the device failed."""
        binding = self.layer.bind(self.physical, stream, self.temporaries)
        binding.__enter__()
        try:
            yield
        finally:
            try:
                binding.__exit__(None, None, None)
            except Exception as err:
                log.warning("gpu_unbind_failed", device=self.device_id, error=repr(err))
                self._launch_error(err)

    def _hand_over(self, record: Launched) -> None:
        """Give the record to the settler, then report the op launched (its consumers on
        this device start) unless queuing it failed."""
        op = record.op  # the settler may report it (and drop it) at once
        self._settler.put(record)
        if record.error is None and record.event is not None:
            if self._tell(op, LAUNCHED_REPORT):
                self._settler.demand(record)

    def _tell(self, op, exc):
        try:
            return self.listener(op, exc)
        except Exception:  # a bug in the scheduler must not kill the launcher
            log.exception("gpu_report_failed", device=self.device_id, op=repr(op))
            return False

    def _launch(self, op) -> Launched:
        """Allocate ``op``'s outputs, order it after what it reads, queue its work on its
        stream, then record its event; an error raised on the way stays in the record."""
        name = (COPY_STREAM if op.op_def.name in COPY_STREAM_OPS and op.views is None
                else COMPUTE_STREAM)
        record = Launched(op, name, time.perf_counter_ns())
        self.temporaries.running(op)
        try:
            if name == COPY_STREAM:
                self.copies.run(op, record)
            else:
                self._queue_kernel(op, record)
        except Exception as err:  # stored on the op's outputs by the engine
            self._keep_error(record, err)
        finally:
            self.temporaries.running(None)
            self.temporaries.drain()
        self._record(record)
        return record

    def _queue_kernel(self, op, record: Launched) -> None:
        arrays, out = self._operands(op)
        for data in op.inputs:
            self.order_after(data, COMPUTE_STREAM, record)
        impl, attrs, xp = op.op_def.impl, op.attrs, self.xp
        stream = self.streams[COMPUTE_STREAM]

        def kernel():
            try:
                check = impl(xp, *arrays, out=out, **attrs)
                if check is not None:  # a device-side check: read when the op settles
                    record.checks.append(self.copies.stage_flag(check, stream))
            except Exception as err:
                self._keep_error(record, err)
        self.layer.launch(stream, kernel)

    def _record(self, record: Launched) -> None:
        """Record the op's event on its stream and note the op as the writer of its
        blocks."""
        try:
            event = self.layer.new_event(self.physical)
            self.layer.record(event, self.streams[record.stream_name])
        except Exception as err:
            log.error("gpu_event_record_failed", device=self.device_id, error=repr(err))
            self._keep_error(record, err)
            if record.keep:
                self.held.hold(record.keep, [None])  # its end cannot be marked: never reuse
                record.keep = []
            return
        record.event = event
        writers = self._writers
        for data in record.op.outputs:
            block = data.block if data.base is None else data.base.block
            if block is not None:
                writers[block] = record

    def read_back_error(self, err: BaseException, nbytes: int) -> DeviceError:
        """The DeviceError to raise when reading ``nbytes`` back to the host failed."""
        sticky = self.layer.sticky_error(err, self.physical)
        if sticky is not None:
            return self._fail(sticky)
        return DeviceError(f"GPU {self.physical}: reading back {nbytes} bytes to the host "
                           f"failed: {err}")

    def _keep_error(self, record: Launched, err: BaseException) -> None:
        """Note ``err`` (raised launching ``record``'s op): the record's first error stays,
        but a sticky one fails the device whatever came before it."""
        error = self._launch_error(err)
        if record.error is None:
            record.error = error

    def _launch_error(self, err: BaseException) -> BaseException:
        sticky = self.layer.sticky_error(err, self.physical)
        if sticky is not None:
            return self._fail(sticky)
        return detach_traceback(err)

    def _fail(self, err: BaseException) -> DeviceError:
        """A sticky CUDA error: this GPU is lost to the process."""
        if self.failed is None:
            failed = DeviceError(
                f"GPU {self.physical} hit an unrecoverable CUDA error ({err}); errors of "
                f"this kind are sticky: this process cannot use GPU {self.physical} any "
                f"more (its pending and later ops fail with this error); restart the "
                f"process to use it again. Other devices keep working.")
            failed.__cause__ = detach_traceback(err)
            self.failed = failed
            log.error("gpu_failed", device=self.device_id, physical=self.physical,
                      error=str(err))
        return self.failed

    def _refuse_all(self, err) -> None:
        """Report every op submitted from now on as failed (the launcher cannot run)."""
        while True:
            op = self._inbox.get()
            if op is STOP:
                return
            error = DeviceError(f"GPU {self.physical} cannot run ops: {err!r}")
            self._tell(op, error)

    def _fence(self) -> list:
        """The allocator's fence: one event recorded now on each stream."""
        return self._mark(STREAMS)

    def _mark(self, stream_names) -> list:
        """One event recorded now on each of ``stream_names``."""
        events = []
        for name in stream_names:
            event = self.layer.new_event(self.physical)
            self.layer.record(event, self.streams[name])
            events.append(event)
        return events

    # ---- settling (settler thread, or the caller in run_inline) ----------------------------

    def _settle_failure(self, err: BaseException, record: Launched):
        """An error raised waiting for ``record``: ``(error, fatal)`` for the settler."""
        sticky = self.layer.sticky_error(err, self.physical)
        if sticky is not None:
            return self._fail(sticky), True
        name = record.op.op_def.name if record.op is not None else "?"
        return DeviceError(f"GPU {self.physical} failed running op '{name}': {err}"), False

    def _settle_now(self, record: Launched) -> BaseException | None:
        if record.event is not None:
            try:
                self.layer.synchronize(record.event)
            except Exception as err:
                error = self._settle_failure(err, record)[0]
                record.error = record.error or error
        record.settled = True
        error = record.outcome()
        self._times([record], time.perf_counter_ns(), record)
        self._let_go(record)
        return error

    def _report(self, records: list, t_seen: int, exact) -> None:
        """A batch the settler found done, in launch order: report each op."""
        for record in records:
            record.outcome()
        self._times(records, t_seen, exact)
        for record in records:
            op, error = record.op, record.error
            self._let_go(record)
            self._tell(op, error)
        self.held.release()
        self.temporaries.drain()  # temporaries dropped since the last op was launched

    def _let_go(self, record: Launched) -> None:
        """Drop what the record held (buffers whose fences have not all passed are held
        on by the device)."""
        self.held.keep_of(record)
        record.op = None
        record.keep = record.checks = record.deps = record.fences = ()

    def _times(self, records: list, t_seen: int, exact) -> None:
        """Announce each op's start and end on its stream's track (marked estimated
        unless it is the op the settler waited for)."""
        hooks = self.hooks
        if not hooks.active:
            return
        for record, suffix, t_start, t_end in estimate_times(records, t_seen, exact,
                                                              self._last_done):
            track = self.tracks[record.stream_name] + suffix
            hooks.op_started(record.op, self.device_id, track, t_start)
            hooks.op_finished(record.op, self.device_id, track, t_end, record.error)
