"""What both engines share: registering ops, handle counts, waiting, failures, deletes.

State owned here, all guarded by ``_lock``: the PhysicalDag and every node's runtime info,
``n_inflight`` (ops registered and not finished), ``n_deleting`` (dead nodes whose storage
is not yet freed), and ``_failures`` (op errors no ``wait_for_all`` has raised yet).
Handle releases arrive from any thread (finalizers) through the lock-free ``_releases``
deque and are applied the next time an engine thread holds the lock.
"""
from __future__ import annotations

import collections
import threading
import time

from minerva.common.errors import MinervaError, OpError, WaitTimeoutError
from minerva.common.logging import get_logger
from minerva.scheduler import state

log = get_logger("minerva.scheduler")


class Engine:
    """Base of the DAG scheduler and the naive engine; subclasses decide *when* ops run."""

    def __init__(self, dag, devices, hooks, max_pending: int):
        self.dag = dag
        self.devices = devices
        self.hooks = hooks
        self.max_pending = max_pending
        self._low_water = max_pending // 2
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._n_sleepers = 0
        self._n_reclaimers = 0
        self._releases: collections.deque = collections.deque()
        self._failures: list[OpError] = []
        self.n_inflight = 0
        self.n_deleting = 0
        self.closed = False

    # ---- called by user threads -------------------------------------------------------

    def submit(self, op_def, attrs, inputs, out_specs, device_id, created_at):
        """Register an op over ``inputs`` (data nodes on ``device_id``); its output nodes."""
        raise NotImplementedError

    def retain(self, data) -> None:
        """Count one more handle on ``data``."""
        with self._lock:
            data.extern_rc += 1

    def release(self, data) -> None:
        """One handle on ``data`` is gone. Safe from any thread and from finalizers: it
        never takes the engine lock, only queues the release.

        Queued releases are applied by the next op registered or completed; only when no op
        is in flight (so no completion will come) is a RELEASE task posted. An op that
        completes concurrently decrements ``n_inflight`` before it drains the queue, so a
        release appended too late for its drain sees the decremented count."""
        self._releases.append(data)
        if self.n_inflight == 0:
            self._kick_releases()

    def wait(self, data, timeout: float | None = None) -> None:
        """Block until ``data`` is computed; raise its stored error."""
        if data.state < state.COMPLETED:
            self._wait_pending(data, timeout)
        if data.error is not None:
            data.error.reported = True
            raise data.error.fresh()

    def wait_for_all(self, timeout: float | None = None) -> None:
        """Block until every registered op has finished and dead storage is freed; then
        raise the first failure not yet reported (once)."""
        self.flush_releases()
        with self._lock:
            if not self._sleep_until(self._all_settled, timeout):
                raise WaitTimeoutError(
                    f"wait_for_all: {self.n_inflight} ops still pending after {timeout}s")
            failure = self._take_unreported()
        if failure is not None:
            raise failure

    def reclaim(self, timeout: float) -> bool:
        """Let pending deletes finish (memory pressure); True if any handle releases or
        deletes were pending (so memory may have been freed)."""
        had_releases = bool(self._releases)
        self.flush_releases()
        with self._lock:
            had_pending = had_releases or self.n_deleting > 0
            self._n_reclaimers += 1
            try:
                self._sleep_until(lambda: self.n_deleting == 0, timeout)
            finally:
                self._n_reclaimers -= 1
        return had_pending

    def flush_releases(self) -> None:
        """Apply queued handle releases now and free what died."""
        if self._releases:
            with self._lock:
                self._free_locked(self._drain_releases_locked())

    def stats(self) -> dict:
        """The DAG's counts (see ``PhysicalDag.stats``)."""
        self.flush_releases()
        with self._lock:
            return self.dag.stats()

    def shutdown(self, timeout: float | None = None) -> None:
        """Finish pending work (up to ``timeout``), then stop this engine's threads."""
        if self.closed:
            return
        self.flush_releases()
        with self._lock:
            finished = self._sleep_until(self._all_settled, timeout)
        if not finished:
            log.warning("shutdown_cancelled_pending", n_pending=self.n_inflight)
        self.closed = True
        self._stop_threads(timeout)

    # ---- hooks for subclasses ---------------------------------------------------------

    def _kick_releases(self) -> None:
        """Arrange for queued releases to be applied (subclasses)."""

    def _stop_threads(self, timeout) -> None:
        """Stop any threads the engine owns (subclasses)."""

    # ---- shared pieces, called with the lock held unless named otherwise --------------

    def _register_locked(self, op_def, attrs, inputs, out_specs, device_id, created_at):
        if self._releases:  # apply dropped handles first: their memory may be reused now
            self._free_locked(self._drain_releases_locked())
        op = state.register_op(self.dag, op_def, attrs, inputs, out_specs, device_id,
                               created_at)
        op.t_created = time.perf_counter_ns()
        self.n_inflight += 1
        self.hooks.op_created(op)
        return op

    def _complete_locked(self, op, error, origin: bool):
        ready, dead = state.complete_op(self.dag, op, error)
        if origin:
            self._failures.append(error)
        self.n_inflight -= 1
        if self._n_sleepers and self.n_inflight in (0, self._low_water):
            self._changed.notify_all()
        self.n_deleting += len(dead)
        if self._releases:
            dead.extend(self._drain_releases_locked())
        return ready, dead

    def _drain_releases_locked(self) -> list:
        dead = []
        releases = self._releases
        while releases:
            data = releases.popleft()
            if state.release_handle(data):
                dead.append(data)
        self.n_deleting += len(dead)
        return dead

    def _free_locked(self, dead: list) -> None:
        """Delete dead nodes (and copies that die with them) and free their blocks now."""
        n_counted = len(dead)
        devices, hooks, dag = self.devices, self.hooks, self.dag
        for data in dead:  # grows while we walk it: cached copies die with their source
            block, more = state.delete_data(dag, data)
            if block is not None:
                devices.get(data.device_id).free(block)
            hooks.data_deleted(data)
            dead.extend(more)
        self.n_deleting -= n_counted
        if self._n_sleepers and n_counted and self._deletes_awaited():
            self._changed.notify_all()

    def _deletes_awaited(self) -> bool:
        """Whether the deletes just done may be what a sleeper waits for: all deletes are
        done and either nothing is in flight (wait_for_all) or a reclaimer waits."""
        return self.n_deleting == 0 and (self.n_inflight == 0 or self._n_reclaimers > 0)

    def _delete_one(self, data) -> None:
        """The DELETE task: remove one dead node and free its storage."""
        with self._lock:
            self._free_locked([data])

    def _wait_for_room_locked(self) -> None:
        if self.n_inflight >= self.max_pending:
            self._sleep_until(lambda: self.n_inflight <= self._low_water, None)

    def _sleep_until(self, predicate, timeout) -> bool:
        self._n_sleepers += 1
        try:
            return self._changed.wait_for(predicate, timeout)
        finally:
            self._n_sleepers -= 1

    def _all_settled(self) -> bool:
        return self.n_inflight == 0 and self.n_deleting == 0

    def _take_unreported(self):
        unreported = [err for err in self._failures if not getattr(err, "reported", False)]
        self._failures.clear()
        if not unreported:
            return None
        for err in unreported:
            err.reported = True
        first = unreported[0].fresh()
        if len(unreported) > 1:
            first.add_note(f"{len(unreported) - 1} more op(s) failed since the last "
                           "wait_for_all; the first is shown")
        return first

    def _wait_pending(self, data, timeout) -> None:
        with self._lock:
            if data.state >= state.COMPLETED:
                return
            if data.waiter is None:
                data.waiter = threading.Event()
            waiter = data.waiter
        if not waiter.wait(timeout):
            raise WaitTimeoutError(f"wait: {data!r} not computed after {timeout}s")

    def _check_open(self) -> None:
        if self.closed:
            raise MinervaError("the minerva runtime was shut down; arrays made before "
                               "mv.shutdown() cannot be used in new ops")


def op_failure(op, exc: BaseException) -> OpError:
    """Wrap an exception raised while running ``op`` into the OpError to store."""
    return OpError.from_failure(exc, op=op.op.name, node_id=op.node_id, device=op.device_id,
                                created_at=op.where)
