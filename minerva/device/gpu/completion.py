"""Completion of GPU work: one *settler* thread per GPU device learns, in bulk, which launched
ops are done.

The launcher thread queues an op's work on a stream, records one event after it and hands a
:class:`Launched` record to the device's :class:`Settler`. The settler keeps the records of
each stream in launch order (a stream runs its work in order, so its events complete in
order) and settles them in batches:

- **polling**: it asks the newest record of each stream whether its event completed
  (``cudaEventQuery``, which does not wait); if so, everything before it on that stream is
  done too; else it walks from the oldest record while they are done. Nothing found: it
  sleeps a little (50 µs, doubling up to 2 ms) and looks again;
- **waiting**, only where someone waits: while a thread is *urged* (a host thread waits in
  ``wait``, ``to_numpy``, ``wait_for_all``, for room, or for memory) or records are
  *demanded* (their values are needed on another device, or by a write), it blocks in
  ``cudaEventSynchronize`` on the newest such record of each stream, without the GIL.

A batch is reported in launch order, and a record only after the records it was ordered
after on other streams (``deps``): a consumer's completion never overtakes its producer's.
Only the record the settler waited for has an exact end time; the others are estimates
(the device marks them so in the trace).

Why a thread and not CUDA host callbacks: a host function runs on a driver thread that must
not call CUDA and holds up its stream while it runs; reporting a completion runs runtime code
(the scheduler's COMPLETE, frees, starting successors) that takes locks and the GIL, which
would stall the stream behind Python.
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Callable

from minerva.common.logging import get_logger
from minerva.device.gpu.records import Launched

log = get_logger("minerva.device")
POLL_MIN_S = 50e-6
POLL_MAX_S = 2e-3


class Settler:
    """The settler thread of one GPU device (see the module docstring).

    ``report(records, t_seen, exact)`` is called on this thread with each batch, in launch
    order (``exact``: the record whose completion was waited for, or None).
    ``failure(error, record)`` turns an error raised by waiting on ``record`` into
    ``(error_to_store, fatal)``; fatal errors fail every pending record.

    ``_cond`` guards the pending queues (appended by the launcher, popped here), ``_next_seq``,
    ``_demand`` (records up to this seq are awaited), ``_urgent`` (threads waiting) and
    ``_stopping``.
    """

    def __init__(self, name: str, layer, streams, report: Callable, failure: Callable):
        self.name = name
        self.layer = layer
        self._report = report
        self._failure = failure
        self._queues: dict[str, collections.deque] = {s: collections.deque() for s in streams}
        self._cond = threading.Condition()
        self._next_seq = 0
        self._demand = -1
        self._urgent = 0
        self._stopping = False
        self._idle = False
        self._reporting = False
        self.n_polled = 0
        self.n_waited = 0
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    # ---- the launcher's side --------------------------------------------------------------

    def put(self, record: Launched) -> None:
        """Settle ``record`` after every record put before it on its stream."""
        with self._cond:
            record.seq = self._next_seq
            self._next_seq += 1
            self._queues[record.stream_name].append(record)
            if self._idle:
                self._cond.notify()

    def demand(self, record: Launched) -> None:
        """``record``'s completion is awaited: wait for it instead of polling."""
        with self._cond:
            if record.seq > self._demand:
                self._demand = record.seq
                self._cond.notify()

    # ---- anyone's side ----------------------------------------------------------------------

    def expedite(self) -> None:
        """Everything put so far is awaited."""
        with self._cond:
            if self._next_seq - 1 > self._demand and self._pending_locked():
                self._demand = self._next_seq - 1
                self._cond.notify()

    def urge(self, delta: int) -> None:
        """A thread starts (+1) or stops (-1) waiting: meanwhile wait instead of polling."""
        with self._cond:
            self._urgent += delta
            if delta > 0:
                self._cond.notify()

    def flush(self, timeout: float | None) -> bool:
        """Settle everything put so far and wait for it (not on this thread); True when
        anything was pending."""
        with self._cond:
            target = self._next_seq - 1
            if not self._pending_locked():
                return False
            if threading.current_thread() is self._thread:
                return True
            self._demand = max(self._demand, target)
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._settled_through_locked(target), timeout)
            return True

    def stop(self, timeout: float | None = None) -> bool:
        """Settle what was put (waiting for it), then end the thread; False if it did not
        end in time."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("gpu_settler_did_not_stop", thread=self.name)
            return False
        return True

    # ---- the thread ---------------------------------------------------------------------------

    def _loop(self) -> None:
        pause = POLL_MIN_S
        while True:
            with self._cond:
                self._idle = True
                while not self._pending_locked() and not self._stopping:
                    self._cond.wait()
                self._idle = False
                if self._stopping and not self._pending_locked():
                    return
            try:
                progressed = self._step()
            except Exception:  # a bug here must not stop completions
                log.exception("gpu_settle_failed", thread=self.name)
                progressed = False
            if progressed:
                pause = POLL_MIN_S
                continue
            with self._cond:
                if not self._wants_wait_locked():
                    self._cond.wait(pause)
            pause = min(pause * 2, POLL_MAX_S)

    def _step(self) -> bool:
        """One look: report what is done (polling), else wait where someone waits; True
        when anything was reported."""
        done = self._poll()
        if done:
            self._settle(done, None)
            return True
        with self._cond:
            targets = self._targets_locked()
        for target in targets:
            self._wait_for(target)
        return bool(targets)

    def _poll(self) -> list:
        """The newest done record of each stream, by querying (not waiting)."""
        found = []
        for queue in self._queues.values():
            n = len(queue)
            if not n:
                continue
            try:
                if self._passed(queue[n - 1]):
                    found.append(queue[n - 1])
                    continue
                last = None
                for i in range(n - 1):
                    if not self._passed(queue[i]):
                        break
                    last = queue[i]
            except _Failed:
                return []
            if last is not None:
                found.append(last)
        self.n_polled += bool(found)
        return found

    def _passed(self, record: Launched) -> bool:
        if record.event is None:
            return True
        try:
            return self.layer.query(record.event)
        except Exception as err:
            self._fail(err, record)
            raise _Failed() from None

    def _wait_for(self, record: Launched) -> None:
        if record.settled:
            return
        if record.event is not None:
            try:
                self.layer.synchronize(record.event)
            except Exception as err:
                self._fail(err, record)
                return
        self.n_waited += 1
        self._settle([record], record)

    def _fail(self, err: BaseException, record: Launched) -> None:
        error, fatal = self._failure(err, record)
        if not fatal:
            record.error = record.error or error
            self._settle([record], record)
            return
        with self._cond:
            for queue in self._queues.values():
                for pending in queue:
                    pending.error = pending.error or error
            newest = [queue[-1] for queue in self._queues.values() if queue]
        self._settle(newest, None)

    # ---- batches ------------------------------------------------------------------------------

    def _settle(self, targets: list, exact) -> None:
        """Report ``targets``, everything before them on their streams and what those were
        ordered after, in launch order."""
        t_seen = time.perf_counter_ns()
        with self._cond:
            batch = self._take_through_locked(targets)
            self._reporting = True
        try:
            if batch:
                self._report(batch, t_seen, exact)
        finally:
            with self._cond:
                self._reporting = False
                self._cond.notify_all()  # flush() waiters

    def _take_through_locked(self, targets: list) -> list:
        upto: dict[str, int] = {}
        todo = list(targets)
        while todo:
            record = todo.pop()
            if record.settled or upto.get(record.stream_name, -1) >= record.seq:
                continue
            upto[record.stream_name] = record.seq
            for earlier in self._queues[record.stream_name]:
                if earlier.seq > record.seq:
                    break
                todo.extend(d for d in earlier.deps if not d.settled)
        batch = []
        for name, seq in upto.items():
            queue = self._queues[name]
            while queue and queue[0].seq <= seq:
                record = queue.popleft()
                record.settled = True
                batch.append(record)
        batch.sort(key=_seq)
        return batch

    # ---- state, under the lock ----------------------------------------------------------------

    def _pending_locked(self) -> bool:
        for queue in self._queues.values():
            if queue:
                return True
        return False

    def _wants_wait_locked(self) -> bool:
        if self._urgent > 0 or self._stopping:
            return True
        return any(q and q[0].seq <= self._demand for q in self._queues.values())

    def _targets_locked(self) -> list:
        """Per stream, the newest record to wait for: any while urged or stopping, else
        the newest demanded one."""
        limit = self._next_seq if (self._urgent > 0 or self._stopping) else self._demand
        targets = []
        for queue in self._queues.values():
            for record in reversed(queue):
                if record.seq <= limit:
                    targets.append(record)
                    break
        return targets

    def _settled_through_locked(self, seq: int) -> bool:
        return not self._reporting and all(not q or q[0].seq > seq for q in self._queues.values())


class _Failed(Exception):
    """Polling met a GPU error (already handled)."""


def _seq(record: Launched) -> int:
    return record.seq
