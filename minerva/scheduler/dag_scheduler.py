"""The DagScheduler: dispatcher threads drain a PriorityDispatcherQueue of tasks.

State (see ``Engine``) lives in one place, guarded by one lock. Dispatchers pop a task,
apply the matching pure transition from ``state`` under the lock, and act on the result
outside it: a RUN hands the op to its device, a COMPLETE (posted by a device's worker
through ``on_device_complete``) wakes consumers and queues RUN and DELETE tasks, a DELETE
frees a dead value's storage, a RELEASE applies queued handle releases. Dispatchers never
execute kernels; devices never touch the DAG.

``n_dispatchers=0`` builds a scheduler without threads that a test pumps with
``run_pending()``, so the order of events is exact.
"""
from __future__ import annotations

import threading
import time

from minerva.common.logging import get_logger
from minerva.scheduler import state
from minerva.scheduler.engine import Engine, op_failure
from minerva.scheduler.queue import PriorityDispatcherQueue, TaskKind

log = get_logger("minerva.scheduler")


def _priority(op) -> int:
    return op.priority


class DagScheduler(Engine):
    """The threaded engine (``MINERVA_ENGINE=dag``)."""

    def __init__(self, dag, devices, hooks, max_pending: int, n_dispatchers: int = 2):
        super().__init__(dag, devices, hooks, max_pending)
        self.queue = PriorityDispatcherQueue()
        self._release_posted = False
        self._handlers = {TaskKind.RUN: self._on_run, TaskKind.COMPLETE: self._on_complete,
                          TaskKind.DELETE: self._on_delete, TaskKind.RELEASE: self._on_release}
        self._threads = [threading.Thread(target=self._dispatch_loop, daemon=True,
                                          name=f"minerva-dispatcher-{i}")
                         for i in range(n_dispatchers)]
        for thread in self._threads:
            thread.start()

    def submit(self, op_def, attrs, inputs, out_specs, device_id, created_at):
        """Register the op; queue a RUN at once if its inputs are already computed."""
        with self._lock:
            self._check_open()
            self._wait_for_room_locked()
            op = self._register_locked(op_def, attrs, inputs, out_specs, device_id,
                                       created_at)
            ready = state.release_hold(op)
        if ready:
            self.hooks.op_ready(op)
            self.queue.put(TaskKind.RUN, op, op.priority)
        return op.outputs

    def on_device_complete(self, op, exc: BaseException | None) -> None:
        """A device finished ``op`` (``exc`` set when it raised): queue its COMPLETE."""
        op.error = None if exc is None else op_failure(op, exc)
        self.queue.put(TaskKind.COMPLETE, op)

    def run_pending(self, max_tasks: int | None = None) -> int:
        """Handle queued tasks on the calling thread (for thread-less tests); the count."""
        n_done = 0
        while max_tasks is None or n_done < max_tasks:
            task = self.queue.get(timeout=0)
            if task is None:
                break
            self._handle(*task)
            n_done += 1
        return n_done

    # ---- dispatcher side ----------------------------------------------------------------

    def _dispatch_loop(self) -> None:
        while True:
            kind, node = self.queue.get()
            if kind is TaskKind.STOP:
                return
            self._handle(kind, node)

    def _handle(self, kind, node) -> None:
        t0 = time.perf_counter_ns()
        try:
            self._handlers[kind](node)
        except Exception:  # a bug here must not kill the dispatcher
            log.exception("dispatcher_task_failed", kind=kind.name, node=repr(node))
        self.hooks.dispatch(kind, node, t0, time.perf_counter_ns())

    def _on_run(self, op) -> None:
        poison = state.start_run(op)
        if poison is not None:
            self.hooks.op_poisoned(op, poison)
            self._finish(op, poison, origin=False)
            return
        self.devices.get(op.device_id).submit(op)

    def _on_complete(self, op) -> None:
        self._finish(op, op.error, origin=op.error is not None)

    def _finish(self, op, error, origin: bool) -> None:
        with self._lock:
            ready, dead = self._complete_locked(op, error, origin)
        self._queue_followers(ready, dead)

    def _queue_followers(self, ready, dead) -> None:
        if dead:
            self.queue.put_many(TaskKind.DELETE, dead)
        if ready:
            for op in ready:
                self.hooks.op_ready(op)
            self.queue.put_many(TaskKind.RUN, ready, _priority)

    def _on_delete(self, data) -> None:
        more = self._delete_one(data)
        if more:
            self.queue.put_many(TaskKind.DELETE, more)

    def _on_release(self, _node) -> None:
        self._release_posted = False
        with self._lock:
            dead = self._drain_releases_locked()
        if dead:
            self.queue.put_many(TaskKind.DELETE, dead)

    # ---- engine hooks ---------------------------------------------------------------------

    def _kick_releases(self) -> None:
        if not self._release_posted:
            self._release_posted = True
            self.queue.put(TaskKind.RELEASE, None)

    def _delete(self, dead) -> None:
        if dead:
            self.queue.put_many(TaskKind.DELETE, dead)

    def _stop_threads(self, timeout) -> None:
        for _ in self._threads:
            self.queue.put(TaskKind.STOP, None, priority=1 << 30)
        for thread in self._threads:
            thread.join(timeout)
            if thread.is_alive():
                log.warning("dispatcher_did_not_stop", thread=thread.name)
