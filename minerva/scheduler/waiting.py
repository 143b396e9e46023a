"""Waiting, a part of the engine: for one value, for everything, for room, for memory,
for the end (``Engine`` inherits it).

Every wait sleeps on the engine's one condition (``_changed``, on ``_lock``) and counts
itself in ``_n_sleepers``, so completions and frees notify only when someone sleeps;
``_n_reclaimers`` counts the threads waiting for deletes under memory pressure. While a
thread waits, devices that launch ahead (GPUs) are *urged* to settle their completions
promptly; a value launched but needed elsewhere is *expedited* (doc/design.md, "Launching
ahead"). The state it reads is the engine's: ``n_inflight``, ``n_deleting``, the freed and
failure lists.
"""
from __future__ import annotations

import contextlib
import threading
import time

from minerva.common.errors import WaitTimeoutError
from minerva.scheduler import state


class Waiting:
    """The waits of an engine (mixed into ``Engine``, whose lock guards what they read)."""

    def wait(self, data, timeout: float | None = None) -> None:
        """Block until ``data`` is computed; raise its stored error."""
        if data.state < state.COMPLETED or self.forked:
            self._check_usable()
            with self._urging():
                self._wait_pending(data, timeout)
        if data.error is not None:
            data.error.reported = True
            raise data.error.fresh()

    def wait_for_all(self, timeout: float | None = None) -> None:
        """Block until every registered op has finished and dead storage is freed; then
        raise the first failure not yet reported (once)."""
        self.flush_releases()
        with self._lock, self._urging():
            if not self._sleep_until(self._all_settled, timeout):
                raise WaitTimeoutError(
                    f"wait_for_all: {self.n_inflight} ops still pending after {timeout}s")
            failure = self._take_unreported()
        if failure is not None:
            raise failure

    def reclaim(self, timeout: float) -> bool:
        """Let devices that launch ahead settle what they launched, and pending deletes
        finish (memory pressure); True if any launched work, handle releases or deletes
        were pending (so memory may have been freed)."""
        had_releases = bool(self._releases)
        had_launched = self._flush_launched(timeout)
        self.flush_releases()
        with self._lock:
            had_pending = had_releases or had_launched or self.n_deleting > 0
            self._n_reclaimers += 1
            try:
                self._sleep_until(self._deletes_done, timeout)
            finally:
                self._n_reclaimers -= 1
        return had_pending

    def _settle(self, timeout) -> bool:
        """Wait until nothing is in flight or being deleted (False on timeout)."""
        self.flush_releases()
        with self._lock, self._urging():
            return self._sleep_until(self._all_settled, timeout)

    def _wait_for_room_locked(self) -> None:
        if self.n_inflight >= self.max_pending:
            with self._urging():
                self._sleep_until(lambda: self.n_inflight <= self._low_water, None)

    def _sleep_until(self, predicate, timeout) -> bool:
        self._n_sleepers += 1
        try:
            return self._changed.wait_for(predicate, timeout)
        finally:
            self._n_sleepers -= 1

    def _all_settled(self) -> bool:
        if self._freed:
            self._apply_freed_locked()
        return self.n_inflight == 0 and self.n_deleting == 0

    def _deletes_done(self) -> bool:
        if self._freed:
            self._apply_freed_locked()
        return self.n_deleting == 0

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
            raise WaitTimeoutError(f"wait: {data.describe()} was not computed after "
                                   f"{timeout}s")

    def _ahead_devices(self) -> list:
        return [d for d in self.devices.table if d.launches_ahead]

    @contextlib.contextmanager
    def _urging(self):
        """While the caller waits, devices that launch ahead settle their completions
        promptly (they wait on their newest work instead of polling). Safe under the lock:
        ``Device.urge`` takes only the device's own lock."""
        devices = self._ahead_devices()
        for device in devices:
            device.urge(1)
        try:
            yield
        finally:
            for device in devices:
                device.urge(-1)

    def _expedite_all(self) -> None:
        """Ask every device that launches ahead to settle what it launched so far soon."""
        for device in self.devices.table:
            if device.launches_ahead:
                device.expedite()

    def _flush_launched(self, timeout) -> bool:
        """Let devices that launch ahead settle what they launched so far (the frees of
        what it read follow); True when any had unsettled work."""
        deadline = None if timeout is None else time.monotonic() + timeout
        had = False
        for device in self._ahead_devices():
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            had = device.flush_launched(left) or had
        return had
