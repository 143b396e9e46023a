"""The DagScheduler: the threaded engine (``MINERVA_ENGINE=dag``).

State (see ``Engine``) lives in one place, guarded by one lock, and changes only through the
pure transitions of ``state``. Work arrives as tasks of four kinds (``TaskKind``): RUN an op
whose inputs are ready, COMPLETE an op a device finished, DELETE a dead value, RELEASE the
handles user code dropped. Who handles a task depends on the dispatch mode:

- ``inline`` (default): the thread that produces a RUN or COMPLETE handles it at once —
  the user thread starts ops that are ready when built; a device thread that finished an op
  applies COMPLETE, frees what died and starts the successors (handing them to their
  devices). A chain of dependent ops then flows through one device thread without a single
  thread switch. Dead values found under the lock are freed as soon as it is released.
- ``queued``: every RUN, COMPLETE and DELETE goes through the PriorityDispatcherQueue and
  is handled by the dispatcher threads, in order of kind, priority and arrival — except the
  completion of an op a device reported launched, which the reporting thread applies in the
  order the device reports (producers before the consumers launched on them).

Tiny ops with computed inputs never reach this class's tasks: they run at once on the
issuing thread without an op node (``scheduler.direct``), in both modes.

Devices that order their own work (``Device.launches_ahead``: GPUs) also report an op
*launched* (``LAUNCHED_REPORT`` in place of the error): its consumers on that device
start at once, ordered after it by the device; completion comes later, in bulk.

In both modes RELEASE tasks (posted by finalizers, which must never take the engine lock)
go to the dispatcher threads, and dispatchers never execute kernels. ``n_dispatchers=0``
builds a scheduler without threads that a test pumps with ``run_pending()``.
"""
from __future__ import annotations

import threading
import time

from minerva.common.config import DISPATCH_MODES
from minerva.common.logging import get_logger
from minerva.dag.nodes import LAUNCHED, RUNNING
from minerva.device.base import LAUNCHED_REPORT
from minerva.scheduler import state
from minerva.scheduler.engine import Engine, op_failure
from minerva.scheduler.queue import PriorityDispatcherQueue, TaskKind

log = get_logger("minerva.scheduler")

RELEASE_GRACE_S = 0.0005
"""How long a dispatcher waits, in the ``inline`` mode, before it applies the handle
releases a RELEASE task was posted for: the user's tiny ops apply queued releases
themselves, so a chain of them wakes a dispatcher about once per grace period instead of
once per op (each wake costs the user's thread a switch of the interpreter lock while a
kernel runs without it); the dispatcher then watches while ops run
(``RELEASE_WATCH_S``)."""

RELEASE_WATCH_S = 0.004
"""The longest sleep of a dispatcher watching the user's ops apply the releases
(``DagScheduler._watch_releases``): a release nothing else applies is applied within one
of them after the ops stop, or within two while the same one stays first."""


def _priority(op) -> int:
    return op.priority


_NOTHING = object()


def _first(releases):
    """The release queued first in deque ``releases`` (appended and popped by other
    threads meanwhile), or None when it is empty."""
    try:
        return releases[0]
    except IndexError:
        return None


class DagScheduler(Engine):
    """The threaded engine; see the module docstring for who handles which task."""

    kicks_releases = True

    def __init__(self, dag, devices, hooks, max_pending: int, copy_op,
                 n_dispatchers: int = 2, dispatch: str = "inline"):
        super().__init__(dag, devices, hooks, max_pending, copy_op)
        if dispatch not in DISPATCH_MODES:
            raise ValueError(f"dispatch mode must be one of {DISPATCH_MODES}, got {dispatch!r}")
        self.inline = dispatch == "inline"
        self.queue = PriorityDispatcherQueue()
        self._release_posted = False
        self._release_flag = threading.RLock()
        self._handlers = {TaskKind.RUN: self._on_run, TaskKind.COMPLETE: self._on_complete,
                          TaskKind.DELETE: self._on_delete, TaskKind.RELEASE: self._on_release}
        self._threads = [threading.Thread(target=self._dispatch_loop, daemon=True,
                                          name=f"minerva-dispatcher-{i}")
                         for i in range(n_dispatchers)]
        for thread in self._threads:
            thread.start()

    def on_device_complete(self, op, exc: BaseException | None):
        """A device finished ``op`` (``exc`` set when it raised): its COMPLETE task. With
        ``exc`` = ``LAUNCHED_REPORT``, the device only queued it (see ``on_launched``)."""
        if exc is LAUNCHED_REPORT:
            return self.on_launched(op)
        op.error = None if exc is None else op_failure(op, exc)
        if self.inline or op.state == LAUNCHED:
            # a launched op's completion is applied in the order the device reports it
            # (producers before consumers launched on them), not by racing dispatchers
            self._start(self._finish(op, op.error, exc is not None))
        else:
            self.queue.put(TaskKind.COMPLETE, op)

    def on_launched(self, op) -> bool:
        """A device that orders its own work queued ``op``: start its consumers on that
        device (LAUNCHED, ``state.launch_op``). True when its completion is awaited (the
        device should settle it promptly). Nothing happens when its completion was
        reported first."""
        with self._lock:
            if op.state != RUNNING:
                return False
            ready, awaited = state.launch_op(op)
        if ready:
            self._start(ready)
        return awaited

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

    # ---- transitions ------------------------------------------------------------------

    def _finish(self, op, error, origin: bool) -> list:
        """COMPLETE: settle the op, then free what died (inline: a CPU device's blocks in
        the same round of the lock, others after it; queued: as DELETE tasks); the ops
        that became ready."""
        with self._lock:
            ready, blocks = self._complete_locked(op, error, origin)
            if blocks and self.inline:
                blocks = self._free_now_locked(blocks)
        if blocks:
            if self.inline:
                self._free_blocks(blocks)
            else:
                self.queue.put_many(TaskKind.DELETE, blocks)
        return ready

    def _free_now_locked(self, blocks: list) -> list:
        """Return the blocks of devices that do not launch ahead (CPU devices: a store's
        lock is only ever taken inside the engine's) to their stores now, under the lock,
        as the lean direct path does: no second round of the lock to count them freed.
        The others (a GPU's free may synchronize it), to free after the lock."""
        table, later, n_freed = self.devices.table, None, 0
        for device_id, block in blocks:
            device = table[device_id]
            if device.launches_ahead:
                later = [(device_id, block)] if later is None else later + [(device_id, block)]
            else:
                device.free(block)
                n_freed += 1
        self.n_deleting -= n_freed
        if self._n_sleepers and self._deletes_awaited():
            self._changed.notify_all()
        return later

    def _start(self, ops: list) -> None:
        """RUN ready ops: hand each to its device (inline) or queue it; a poisoned op
        completes at once, and its consumers in turn (a loop, not recursion)."""
        if not ops:
            return
        if self.hooks.active:
            for op in ops:
                self.hooks.op_ready(op)
        if not self.inline:
            self.queue.put_many(TaskKind.RUN, ops, _priority)
            return
        for op in ops:
            followers = self._run(op)
            while followers:
                followers = [f for g in followers for f in self._run(g) or ()]

    def _run(self, op) -> list | None:
        """RUN one op: hand it to its device; a poisoned op completes at once instead, and
        the consumers that became ready are returned (to be started in turn)."""
        poison = state.start_run(op)
        if poison is None:
            self.devices.table[op.device_id].submit(op)
            return None
        self.hooks.op_poisoned(op, poison)
        ready = self._finish(op, poison, origin=False)
        if self.hooks.active:
            for follower in ready:
                self.hooks.op_ready(follower)
        return ready

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
        ready = self._run(op)
        if ready:
            self.queue.put_many(TaskKind.RUN, ready, _priority)

    def _on_complete(self, op) -> None:
        self._start(self._finish(op, op.error, origin=op.error is not None))

    def _on_delete(self, block) -> None:
        self._free_blocks([block])

    def _on_release(self, _node) -> None:
        if self.inline:   # meanwhile the user's next ops drain the queue themselves
            self._watch_releases()
        with self._release_flag:
            self._release_posted = False
        self.flush_releases()

    def _watch_releases(self) -> None:
        """Sleep while the user's ops apply the queued handle releases themselves
        (every op drains the queue): ``RELEASE_GRACE_S``, then twice as long each time,
        up to ``RELEASE_WATCH_S``, while ops completed meanwhile (``n_completed_total``
        grew); return when the engine closes, when no op completed (nothing drains the
        queue) or when the release queued first at the last look still is. The RELEASE
        task stays posted meanwhile, so released handles post no other: a chain of tiny
        ops wakes a dispatcher about once, not once a grace period (each post cost the
        user's thread a thread wake: 0.4 ms on a busy machine)."""
        dag = self.dag
        grace, done, last = RELEASE_GRACE_S, dag.n_completed_total, _NOTHING
        while not self.closed:
            time.sleep(grace)
            head = _first(self._releases)
            if dag.n_completed_total == done or (head is not None and head is last):
                return
            done, last = dag.n_completed_total, head
            grace = min(2 * grace, RELEASE_WATCH_S)

    # ---- engine hooks ---------------------------------------------------------------------

    def _kick_releases(self) -> None:
        """Post one RELEASE task. Called from finalizers, which may run on a thread that
        already holds any of our locks: the flag has its own reentrant lock."""
        with self._release_flag:
            if self._release_posted:
                return
            self._release_posted = True
        self.queue.put(TaskKind.RELEASE, None)

    def _stop_threads(self) -> None:
        for _ in self._threads:
            self.queue.put(TaskKind.STOP, None, priority=1 << 30)
        for thread in self._threads:
            thread.join()
