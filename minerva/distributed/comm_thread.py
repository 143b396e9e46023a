"""The communication thread: runs collectives strictly in the order they were issued.

Each collective gets a sequence number when it is built, on the user's thread (the order
every rank must agree on). Its op becomes ready whenever its inputs are computed — a later
collective may be ready first — and its kernel *posts* a job here. The thread keeps a
reorder buffer: it runs job ``n`` only after jobs ``0 .. n-1``, whatever order they were
posted in.

A collective that never reaches its kernel (an input failed, so the op was poisoned; or
shutdown cancelled it) would leave a hole in the sequence. So the collective's result is
*issued* here too, and while the thread waits for number ``n`` it checks every
``POLL_S`` whether that result failed; if so it tells the other ranks (``Runner.skip``)
and moves on.

The thread starts on first use and stops with :meth:`CommThread.stop` (a later collective
starts it again); :meth:`close` stops it for good.
"""
from __future__ import annotations

import threading

from minerva.common.errors import MinervaError, WaitTimeoutError
from minerva.common.logging import get_logger
from minerva.distributed.errors import CommunicationLost

log = get_logger("minerva.distributed")
POLL_S = 0.05


class Issued:
    """A built collective: its :class:`Collective`, the handle of its result (to see
    whether its op failed without running), or the error that kept it from being built."""

    __slots__ = ("collective", "handle", "error")

    def __init__(self, collective, handle=None, error=None):
        self.collective, self.handle, self.error = collective, handle, error

    def failure(self):
        """The error that keeps this collective from running on this rank, or None."""
        if self.error is not None or self.handle is None:
            return self.error
        try:
            self.handle.wait(timeout=0)
        except WaitTimeoutError:
            return None
        except MinervaError as err:
            return err
        return None


class CommThread:
    """The reorder buffer and the thread that drains it.

    ``_cond`` guards ``_jobs`` (posted jobs by sequence number), ``_issued`` (issued
    collectives not yet run, by number), ``_next`` (the number to run next), ``_thread``,
    ``_stopping``, ``_abandon`` and ``_closed``.
    """

    def __init__(self, runner, name: str = "minerva-dist-comm"):
        self.runner = runner
        self.name = name
        self._cond = threading.Condition()
        self._jobs: dict = {}
        self._issued: dict = {}
        self._next = 0
        self._thread: threading.Thread | None = None
        self._stopping = self._abandon = self._closed = False

    # ---- called by user and device threads ---------------------------------------------

    def issue(self, collective, handle) -> None:
        """Collective ``collective`` was built; ``handle`` is (one of) its result(s). (A
        synchronous engine may have run it already: then there is nothing to note.)"""
        with self._cond:
            if collective.seq >= self._next:
                self._issued[collective.seq] = Issued(collective, handle)
                self._start_locked()

    def cancel(self, collective, error: BaseException) -> None:
        """Collective ``collective`` got its number but could not be built."""
        with self._cond:
            if collective.seq >= self._next:
                self._issued[collective.seq] = Issued(collective, error=error)
                self._start_locked()
                self._cond.notify_all()

    def post(self, job) -> None:
        """A collective's kernel ran: queue its job (a device thread calls this)."""
        with self._cond:
            if self._closed:
                refused = CommunicationLost("minerva.distributed was shut down")
            else:
                refused = None
                self._jobs[job.seq] = job
                self._start_locked()
                self._cond.notify_all()
        if refused is not None:
            job.done(refused)

    def stop(self, timeout: float | None = None, close: bool = False) -> bool:
        """Stop the thread once every issued collective has run (or was skipped); past
        ``timeout`` fail what is left. ``close``: for good. False if it had to abandon
        collectives."""
        with self._cond:
            self._stopping = True
            self._closed = self._closed or close
            thread = self._thread
            self._cond.notify_all()
        finished = True
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                finished = False
                self._give_up(thread)
        with self._cond:
            self._stopping = False
        return finished

    def pending(self) -> int:
        """Collectives issued or posted and not yet run."""
        with self._cond:
            return len(set(self._issued) | set(self._jobs))

    # ---- the thread --------------------------------------------------------------------

    def _start_locked(self) -> None:
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(target=self._loop, daemon=True, name=self.name)
            self._thread.start()

    def _give_up(self, thread) -> None:
        error = self.runner.fail_all("shut down with collectives still pending")
        self.runner.transport.interrupt(str(error))
        with self._cond:
            self._abandon = True
            self._cond.notify_all()
        thread.join(10.0)
        if thread.is_alive():
            log.warning("dist_comm_thread_did_not_stop")

    def _loop(self) -> None:
        try:
            while True:
                item = self._take()
                if item is None:
                    return
                self._handle(item)
        finally:
            with self._cond:
                self._thread = None
                self._cond.notify_all()

    def _handle(self, item) -> None:
        seq, job, issued, error = item
        if job is not None:
            self.runner.run(job)
        else:
            self.runner.skip(issued.collective, error)
        with self._cond:
            self._issued.pop(seq, None)
            self._next = seq + 1

    def _take(self):
        """``(seq, job, issued, error)`` of the next collective to run or skip; None when
        the thread should stop."""
        while True:
            with self._cond:
                seq = self._next
                job = self._jobs.pop(seq, None)
                if job is None and not self._abandon and not self._idle_stop_locked():
                    self._cond.wait(POLL_S)
                    job = self._jobs.pop(seq, None)
                issued = self._issued.get(seq)
                stop, abandon = self._idle_stop_locked(), self._abandon
            if job is not None:
                return seq, job, issued, None
            if abandon:
                return self._abandoned()
            if stop:
                return None
            error = issued.failure() if issued is not None else None
            if error is not None:
                return seq, None, issued, error

    def _idle_stop_locked(self) -> bool:
        """Whether the thread was asked to stop and nothing is left to run."""
        return self._stopping and not self._issued and not self._jobs

    def _abandoned(self):
        """Fail every job already posted (their ops complete), then stop."""
        with self._cond:
            jobs, self._jobs = list(self._jobs.values()), {}
            self._issued.clear()
            self._abandon = False
        for job in jobs:
            self.runner.run(job)  # broken: fails at once
        return None
