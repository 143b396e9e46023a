"""The naive engine (``MINERVA_ENGINE=naive``): every op runs at once on the caller's
thread, through the same ops, devices, stores and node bookkeeping as the DAG scheduler.
It is the debugging twin and the reference in tests.

Handle releases from finalizers are queued and applied at the next engine call (an op,
a wait, a stats query), never inside the finalizer. Kernels run on the caller's thread
under the caller's NumPy error state, so NumPy's floating-point warnings show as NumPy
would show them (device worker threads silence them).
"""
from __future__ import annotations

from minerva.scheduler import state
from minerva.scheduler.engine import Engine, op_failure


class NaiveEngine(Engine):
    """Synchronous engine: ``submit`` returns after the op (and its deletes) finished."""

    def submit(self, op_def, attrs, inputs, out_specs, device_id, created_at):
        """Register the op and run it now on this thread."""
        with self._lock:
            self._check_open()
            op = self._register_locked(op_def, attrs, inputs, out_specs, device_id,
                                       created_at)
            state.release_hold(op)
        self.hooks.op_ready(op)
        self._run_now(op)
        return op.outputs

    def on_device_complete(self, op, exc) -> None:
        """Unused: the naive engine runs ops inline and sees their result directly."""
        raise RuntimeError("the naive engine runs ops inline")

    def _run_now(self, op) -> None:
        error = state.start_run(op)
        origin = False
        if error is not None:
            self.hooks.op_poisoned(op, error)
        else:
            exc = self.devices.get(op.device_id).run_inline(op)
            if exc is not None:
                error, origin = op_failure(op, exc), True
        with self._lock:
            _ready, dead = self._complete_locked(op, error, origin)
            self._free_locked(dead)
