"""Transports: how a rank moves host bytes to the other ranks.

A :class:`Transport` offers the collectives over contiguous NumPy buffers, each bounded
by a deadline (``time.monotonic()`` seconds): past it, or once :meth:`interrupt` was
called, it raises :class:`CommunicationLost`. Only the communication thread calls them.
:class:`LocalTransport` is the one-rank world of a process no MPI launcher started; the
MPI transport is in :mod:`minerva.distributed.mpi_transport`.
"""
from __future__ import annotations

import time

import numpy as np

from minerva.distributed.errors import CommunicationLost

SPIN_S = 0.002
"""Waiting for the other ranks to come (the header exchange), a wait polls, yielding the
CPU between polls (``sleep(0)``), this long; then it sleeps a little longer each time, up
to ``WAIT_SLEEP_S`` (a late rank costs little CPU). While data flows (every rank is there)
it polls without sleeping: MPI makes progress only inside its calls, and a thread that
sleeps on a busy machine wakes up late."""
WAIT_SLEEP_S = 0.0005


class Transport:
    """Collectives over host buffers for ``size`` ranks; this process is ``rank``."""

    name = "abstract"
    rank = 0
    size = 1
    local_size = 1   # ranks on this host (they share its cores)

    def __init__(self):
        self.interrupted: str | None = None

    def interrupt(self, reason: str) -> None:
        """Make the waits in progress and every later one fail (Ctrl-C, shutdown). Safe
        in a signal handler: it only sets an attribute."""
        self.interrupted = reason

    def exchange(self, header: np.ndarray, deadline: float) -> np.ndarray:
        """Every rank's header, one row per rank."""
        raise NotImplementedError

    def allreduce(self, send: np.ndarray, recv: np.ndarray, op: str, deadline: float):
        """``recv`` = the element-wise ``op`` (sum, max, min) of every rank's ``send``;
        ``send`` may be ``recv`` itself."""
        raise NotImplementedError

    def broadcast(self, buf: np.ndarray, root: int, deadline: float) -> None:
        """``buf`` of rank ``root`` into ``buf`` of every rank (bytes)."""
        raise NotImplementedError

    def allgather(self, send: np.ndarray, recv: np.ndarray, deadline: float) -> None:
        """Every rank's ``send`` bytes, rank after rank, into ``recv``."""
        raise NotImplementedError

    def barrier(self, deadline: float) -> None:
        """Return once every rank reached this barrier."""
        raise NotImplementedError

    def finalize(self, healthy: bool, interrupted: bool = False) -> None:
        """Last call, at exit: release the transport (``healthy``: no collective broke;
        ``interrupted``: by Ctrl-C)."""


class LocalTransport(Transport):
    """The world of one rank: every collective is a copy."""

    name = "local"

    def exchange(self, header, deadline):
        """This rank's header."""
        self._check()
        return header.reshape(1, -1).copy()

    def allreduce(self, send, recv, op, deadline):
        """A copy of ``send``."""
        self._check()
        if send is not recv:
            np.copyto(recv, send)

    def broadcast(self, buf, root, deadline):
        """Nothing to send."""
        self._check()

    def allgather(self, send, recv, deadline):
        """A copy of ``send``."""
        self._check()
        recv.reshape(-1)[:] = send.reshape(-1)

    def barrier(self, deadline):
        """Nothing to wait for."""
        self._check()

    def _check(self) -> None:
        if self.interrupted is not None:
            raise CommunicationLost(self.interrupted)


def poll(test, deadline: float, transport: Transport, what: str, timeout: float,
         data: bool = False) -> None:
    """Call ``test()`` until it returns True; CommunicationLost past ``deadline`` or once
    the transport is interrupted. ``data``: the data phase (every rank is known to be
    there), polled more often."""
    start = time.monotonic()
    pause = 0.0
    while not test():
        if transport.interrupted is not None:
            raise CommunicationLost(f"{what}: {transport.interrupted}")
        now = time.monotonic()
        if now > deadline:
            raise CommunicationLost(
                f"{what}: no answer from the other ranks after {timeout:g} s "
                "(MINERVA_DIST_TIMEOUT): a rank may have exited, crashed, hung, or stopped "
                "issuing the same collectives")
        if not data and now - start > SPIN_S:
            pause = min(WAIT_SLEEP_S, pause * 2 + 1e-5)
        time.sleep(pause)
