"""Creating an NCCL communicator within a collective's deadline.

``ncclCommInitRank`` returns only once every rank of the communicator called it, and has
no timeout; CuPy (13 and 14) offers no non-blocking creation either (its ``NcclConfig``
sets ``splitShare`` alone, not NCCL's ``blocking``). So the creation runs on a daemon
thread while the communication thread waits for it, bounded by the deadline and by an
interrupt (Ctrl-C, shutdown). Past either the creation is abandoned: the collective fails
with :class:`CommunicationLost` (the runner is then broken, so every later collective
fails at once), the thread may stay blocked in NCCL (a daemon does not keep the process
alive) and, should it finish after all, its communicator is aborted at once.

A creation that fails on this rank is a loss too: the other ranks are left waiting in
their own creation, until their deadline.
"""
from __future__ import annotations

import threading
import time

from minerva.common.logging import get_logger
from minerva.distributed.errors import CommunicationLost

log = get_logger("minerva.distributed")
WAIT_SLICE_S = 0.05


class Creation:
    """``make()`` running on its own daemon thread. ``_lock`` guards ``comm``, ``error``
    and ``abandoned``; ``done`` is set once ``make`` returned or raised."""

    def __init__(self, make):
        self._make = make
        self._lock = threading.Lock()
        self.done = threading.Event()
        self.comm = self.error = None
        self.abandoned = False
        threading.Thread(target=self._run, daemon=True, name="minerva-dist-nccl-init").start()

    def abandon(self) -> None:
        """Give the creation up: its communicator, made already or later, is aborted."""
        with self._lock:
            self.abandoned = True
            comm = self.comm
        if comm is not None:
            _abort_late(comm)

    def _run(self) -> None:
        comm = error = None
        try:
            comm = self._make()
        except Exception as err:  # handed to the waiting collective
            error = err
        with self._lock:
            self.comm, self.error, late = comm, error, self.abandoned
        self.done.set()
        if late and comm is not None:
            _abort_late(comm)


def create_within(make, deadline: float, transport, timeout: float):
    """``make()`` (a communicator's creation, collective over the ranks) once it returns;
    CommunicationLost past ``deadline``, once ``transport`` is interrupted, or when it
    fails (its error as the cause)."""
    creation = Creation(make)
    while not creation.done.wait(WAIT_SLICE_S):
        reason = _reason_to_give_up(deadline, transport, timeout)
        if reason is not None:
            creation.abandon()
            raise CommunicationLost(f"creating the NCCL communicator: {reason}")
    if creation.error is not None:
        raise CommunicationLost(
            f"creating the NCCL communicator failed on this rank ({creation.error!r}); "
            "the other ranks cannot use it either") from creation.error
    return creation.comm


def _reason_to_give_up(deadline: float, transport, timeout: float) -> str | None:
    if transport.interrupted is not None:
        return transport.interrupted
    if time.monotonic() > deadline:
        return (f"no answer from the other ranks after {timeout:g} s "
                "(MINERVA_DIST_TIMEOUT): a rank may have exited, crashed, hung, or failed "
                "to create its own")
    return None


def _abort_late(comm) -> None:
    try:
        comm.abort()
    except Exception as err:  # nothing waits for it any more: report, never raise
        log.warning("dist_nccl_abort_failed", error=repr(err))
    log.info("dist_nccl_late_communicator_aborted")
