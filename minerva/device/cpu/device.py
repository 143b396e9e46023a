"""CPU devices: ops run with NumPy on the device's own worker thread."""
from __future__ import annotations

import os
import threading
from threading import get_ident

import numpy as np

from minerva.common.logging import get_logger
from minerva.device.base import Device
from minerva.device.cpu import fused
from minerva.device.cpu.blas import BLAS
from minerva.device.cpu.split import MIN_SPLIT_BYTES, SPLIT_OUT_BYTES, RowSplitter
from minerva.device.ready import STOP, ReadyQueue

log = get_logger("minerva.device")


class CpuDevice(Device):
    """A CPU device with one worker thread that runs its ops (oldest first).

    Its kernels use ``threads`` BLAS threads, set on its worker alone (``blas.BLAS``); by
    default the ``DeviceManager`` shares the cores among the CPU devices, so several run
    side by side instead of fighting over cores. ``fixed_threads`` is a count asked for
    (``create_cpu_device(threads=N)``, ``MINERVA_CPU_THREADS``) that balancing keeps.
    """

    kind = "cpu"
    xp = np
    held_kinds = "biufcmMSUV"
    """Also datetimes, timedeltas, bytes, str and records: NumPy's kernels take them."""
    checks_fp_errors = True
    whole_limit = MIN_SPLIT_BYTES
    """A row-split op of fewer bytes is never cut (``split._row_cut``)."""

    def __init__(self, device_id: int, store, hooks, listener=None, ordinal: int = 0):
        super().__init__(device_id, store, hooks, listener)
        self.ordinal = ordinal
        self.threads = 1
        self.fixed_threads = None
        self._queue = ReadyQueue()
        self._splitter = RowSplitter(f"minerva-cpu{device_id}")
        self._thread = threading.Thread(target=self._work, daemon=True,
                                        name=f"minerva-cpu{device_id}-worker")
        self._thread.start()
        self._worker_id = self._thread.ident

    def submit(self, op) -> None:
        """Queue ``op`` for the worker thread (which runs its ready ops oldest first); a
        deferred op (a collective) starts at once: it only hands its work to another
        thread, and waiting behind older ops would delay it for nothing."""
        if op.op_def.deferred and self.cancelled is None:
            self._start_deferred(op)
            return
        if get_ident() == self._worker_id:
            self._queue.put_own(op)
        else:
            self._queue.put(op)

    def run_kernel(self, op_def, arrays, out, attrs) -> None:
        """Run the kernel, as row ranges on this device's threads where it pays
        (:mod:`minerva.device.cpu.split`); a kernel that calls BLAS holds this device's
        BLAS thread count meanwhile (one per range when split)."""
        if op_def.nested:   # a jit replay: its big and BLAS steps come back here
            op_def.impl(self.xp, *arrays, out=out, **attrs)
            return
        if self.threads > 1:
            if (op_def.row_split is not None or (
                    op_def.elementwise and out.__class__ is np.ndarray
                    and out.nbytes >= SPLIT_OUT_BYTES)) \
                    and self._splitter.run(self.threads, op_def, self.xp, arrays, out, attrs):
                return
        self.run_tiny_kernel(op_def, arrays, out, attrs)

    def fusion_backend(self):
        """numexpr kernels for tiny outputs, cache-blocked NumPy kernels for large ones
        (``minerva.device.cpu.fused``)."""
        return fused.backend(self)

    def routes_kernel(self, op_def, out_nbytes: int) -> bool:
        """A replay's step goes through ``run_kernel`` when it calls BLAS (it holds this
        device's count) or when this device may cut it into row ranges."""
        return op_def.blas or self.threads > 1 and (
            op_def.row_split is not None
            or op_def.elementwise and out_nbytes >= SPLIT_OUT_BYTES)

    def try_hold_blas(self) -> bool:
        """Make this thread's BLAS calls use this device's thread count until
        ``release_blas()``, when that needs no wait; False otherwise (nothing held)."""
        return BLAS.try_hold(self.threads)

    def release_blas(self) -> None:
        """End ``try_hold_blas``."""
        BLAS.release()

    def run_tiny_kernel(self, op_def, arrays, out, attrs) -> None:
        """The kernel on the calling thread, whole, with this device's BLAS threads."""
        if not op_def.blas:
            op_def.impl(self.xp, *arrays, out=out, **attrs)
            return
        BLAS.hold(self.threads)
        try:
            op_def.impl(self.xp, *arrays, out=out, **attrs)
        finally:
            BLAS.release()

    def info(self) -> dict:
        """Kind, ordinal, name, and the store's memory figures."""
        stats = self.store.stats()
        return {"kind": "cpu", "ordinal": self.ordinal, "device_id": self.device_id,
                "name": f"cpu:{self.ordinal} ({os.cpu_count()} cores on host)",
                "n_workers": 1, "blas_threads": self.threads,
                "memory_in_use": stats["in_use_bytes"],
                "memory_limit": stats["limit_bytes"]}

    def shutdown(self, timeout: float | None = None) -> None:
        """Stop the worker after the ops already queued."""
        self._queue.put(STOP)
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("cpu_worker_did_not_stop", device=self.device_id)
            return
        self._splitter.shutdown()

    def _work(self) -> None:
        np.seterr(all="ignore")
        get, run = self._queue.get, self.run_inline
        while True:
            op = get()
            if op is STOP:
                return
            if op.op_def.deferred and self.cancelled is None:
                self._start_deferred(op)  # another thread reports it finished
                continue
            exc = run(op) if self.cancelled is None else self.cancelled
            try:
                self.listener(op, exc)
            except Exception:  # a bug in a completion must not kill the worker
                log.exception("cpu_completion_failed", device=self.device_id, op=repr(op))
            op = exc = None   # keep nothing of a finished op while waiting for the next
