"""The naive engine (``MINERVA_ENGINE=naive``): every op runs at once on the caller's
thread, through the same ops, devices, stores and node bookkeeping as the DAG scheduler.
It is the debugging twin and the reference in tests.

Handle releases from finalizers are queued and applied at the next engine call (an op,
a wait, a stats query), never inside the finalizer. As on every engine, a kernel runs
under the NumPy error state its op was issued with (``common.fp_errors``).
"""
from __future__ import annotations

import collections

from minerva.scheduler import state
from minerva.scheduler.engine import Engine, op_failure


class NaiveEngine(Engine):
    """Synchronous engine: ``submit`` returns after the op (and its deletes) finished."""

    def on_device_complete(self, op, exc) -> None:
        """Unused: the naive engine runs ops inline and sees their result directly."""
        raise RuntimeError("the naive engine runs ops inline")

    def _start(self, ops: list) -> None:
        """Run each op now on this thread, in registration order (copies first), then the
        ops their completion made ready."""
        if len(ops) == 1:
            ops = self._run_now(ops[0])
            if not ops:
                return
        todo = collections.deque(ops)
        while todo:
            todo.extend(self._run_now(todo.popleft()))

    def _run_now(self, op) -> list:
        error = state.start_run(op)
        origin = False
        if error is not None:
            self.hooks.op_poisoned(op, error)
        else:
            if self.hooks.active:
                self.hooks.op_ready(op)
            exc = self.devices.table[op.device_id].run_inline(op)
            if exc is not None:
                error, origin = op_failure(op, exc), True
        with self._lock:
            ready, blocks = self._complete_locked(op, error, origin)
        if blocks:
            self._free_blocks(blocks)
        return ready
