"""The work of a GPU device's threads, a part of :class:`GpuDevice` (which inherits it):
launching ops (the launcher thread, or the caller under the naive engine) — outputs
allocated, ordered after what they read, kernels queued on their stream, one event recorded
per op, the op reported launched — and settling them once the settler thread finds them
done; the device's errors on the way (a sticky CUDA error fails the device).
"""
from __future__ import annotations

import contextlib
import time

import numpy as np

from minerva.common.errors import DeviceError
from minerva.common.logging import get_logger
from minerva.device.reports import LAUNCHED_REPORT, detach_traceback
from minerva.device.gpu.copies import COPY_STREAM
from minerva.device.gpu.records import Launched, estimate_times
from minerva.device.ready import STOP

log = get_logger("minerva.device")
COMPUTE_STREAM = "compute"
STREAMS = (COMPUTE_STREAM, COPY_STREAM)
COPY_STREAM_OPS = frozenset({"copy", "from_host"})
"""Ops that only move bytes: they run on the copy stream."""


class Launching:
    """Launching and settling (mixed into ``GpuDevice``; the state it uses is the
    device's, see its docstring)."""

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
            self._start_deferred(op)
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
        impl, attrs, xp = op.op_def.impl, self.kernel_attrs(op), self.xp
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
