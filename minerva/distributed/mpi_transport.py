"""The MPI transport, over mpi4py: non-blocking collectives on NumPy buffers (the buffer
protocol, never pickle), each polled until a deadline instead of a blocking call, so a
rank that stops answering makes the others fail instead of hang.

This is the only module that imports ``mpi4py``, and only in :meth:`MpiTransport.create`
(``import minerva`` and ``import minerva.distributed`` never load MPI).

At exit every rank finalizes MPI — also after communication broke — because of how the
launcher decides the job's exit status: ``MPI_Finalize`` waits for every rank to finalize
too, and a rank that exits *without* finalizing makes the launcher end the others at once
and report that rank's status alone. A rank that lost communication and skipped
finalizing would thus end a failed rank waiting in its finalize, and the job would exit
with the survivor's status (0). After a loss the wait is bounded: every rank first meets
the others in a barrier on a communicator kept for the exit alone; a rank that lost
communication waits there at most the timeout and, if some rank never comes, exits with
status 1 without entering ``MPI_Finalize`` (the launcher then ends the rest and reports
that 1). Ending a rank inside ``MPI_Finalize``'s own barrier instead can trip the
launcher (MPICH's hydra then reports its own status 255).
"""
from __future__ import annotations

import contextlib
import faulthandler
import os
import sys
import time

import numpy as np

from minerva.common.logging import get_logger
from minerva.distributed.errors import DistributedError
from minerva.distributed.header import HEADER_LEN
from minerva.distributed.transport import Transport, poll

log = get_logger("minerva.distributed")
EXIT_POLL_S = 0.005  # the exit barrier's polling pause
INSTALL_HINT = "pip install 'minerva[dist]' (mpi4py and an MPI such as mpich)"


def load_mpi():
    """mpi4py's ``MPI`` module, without its finalize-at-exit (the transport decides);
    DistributedError saying how to install it when it is missing."""
    try:
        import mpi4py
    except ImportError as err:
        raise DistributedError("this process was started by an MPI launcher but mpi4py "
                               f"is not installed: {INSTALL_HINT}") from err
    mpi4py.rc.finalize = False  # ignored when MPI was imported already
    try:
        from mpi4py import MPI
    except ImportError as err:  # mpi4py without a usable MPI library
        raise DistributedError(f"mpi4py cannot load an MPI library ({err}); "
                               f"{INSTALL_HINT}") from err
    return MPI


class MpiTransport(Transport):
    """Collectives over a private duplicate of ``MPI.COMM_WORLD`` (user traffic on the
    world communicator never mixes with ours), and a second duplicate for the barrier at
    exit (a collective abandoned on the first cannot block it)."""

    name = "mpi"

    def __init__(self, mpi, comm, timeout: float, exit_comm=None):
        super().__init__()
        self.mpi = mpi
        self.comm = comm
        self.exit_comm = exit_comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = timeout
        self.ops = {"sum": mpi.SUM, "max": mpi.MAX, "min": mpi.MIN}

    @classmethod
    def create(cls, timeout: float) -> "MpiTransport":
        """Initialise MPI (if needed) and duplicate the world communicator."""
        mpi = load_mpi()
        if not mpi.Is_initialized():
            mpi.Init_thread(mpi.THREAD_MULTIPLE)
        comm = mpi.COMM_WORLD.Dup()
        transport = cls(mpi, comm, timeout, exit_comm=mpi.COMM_WORLD.Dup())
        host = comm.Split_type(mpi.COMM_TYPE_SHARED)
        transport.local_size = host.Get_size()
        host.Free()
        log.info("dist_mpi_ready", rank=transport.rank, size=transport.size,
                 local_size=transport.local_size,
                 library=mpi.Get_library_version().splitlines()[0].strip(),
                 thread_level=mpi.Query_thread())
        return transport

    def exchange(self, header, deadline):
        """Every rank's header (``Iallgather`` of int64)."""
        table = np.empty((self.size, HEADER_LEN), np.int64)
        request = self.comm.Iallgather(header, table)
        self._wait(request, deadline, "exchanging collective headers")
        return table

    def allreduce(self, send, recv, op, deadline):
        """``Iallreduce`` (in place when ``send`` is ``recv``)."""
        source = self.mpi.IN_PLACE if send is recv else send
        request = self.comm.Iallreduce(source, recv, self.ops[op])
        self._wait(request, deadline, "allreduce", data=True)

    def broadcast(self, buf, root, deadline):
        """``Ibcast`` of ``buf``'s bytes."""
        request = self.comm.Ibcast([_bytes(buf), self.mpi.BYTE], root=root)
        self._wait(request, deadline, "broadcast", data=True)

    def allgather(self, send, recv, deadline):
        """``Iallgather`` of bytes."""
        request = self.comm.Iallgather([_bytes(send), self.mpi.BYTE],
                                       [_bytes(recv), self.mpi.BYTE])
        self._wait(request, deadline, "allgather", data=True)

    def barrier(self, deadline):
        """``Ibarrier``."""
        self._wait(self.comm.Ibarrier(), deadline, "barrier")

    def finalize(self, healthy: bool, interrupted: bool = False) -> None:
        """Meet the other ranks at exit and finalize MPI, so that the launcher sees this
        rank's own exit status. ``healthy``: free our communicators and wait for the
        other ranks however long they take. Broken: wait at most ``timeout`` seconds for
        the others at the exit barrier, else exit with status 1 at once; then finalize
        within another ``timeout`` (the communicator with abandoned collectives is left
        as it is). ``interrupted`` (Ctrl-C, which every rank got): do not finalize."""
        if interrupted:
            log.warning("dist_mpi_not_finalized", rank=self.rank, reason=self.interrupted)
            return
        if not healthy:
            log.warning("dist_mpi_finalize_after_loss", rank=self.rank,
                        limit_s=self.timeout)
        try:
            if not self._met_at_exit(None if healthy else self.timeout):
                log.error("dist_mpi_exit_unmet", rank=self.rank, limit_s=self.timeout)
                _flush_stdio()
                os._exit(1)
            if healthy:
                self.comm.Free()
            with exit_after(None if healthy else self.timeout):
                if not self.mpi.Is_finalized():
                    self.mpi.Finalize()
        except Exception as err:  # at exit: report, never raise
            log.warning("dist_mpi_finalize_failed", rank=self.rank, error=repr(err))

    def _met_at_exit(self, seconds: float | None) -> bool:
        """The exit barrier: True once every rank reached it, False past ``seconds``
        (None: no limit)."""
        if self.exit_comm is None:
            return True
        request = self.exit_comm.Ibarrier()
        deadline = None if seconds is None else time.monotonic() + seconds
        while not request.Test():
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(EXIT_POLL_S)
        self.exit_comm.Free()
        self.exit_comm = None
        return True

    def _wait(self, request, deadline, what: str, data: bool = False) -> None:
        poll(request.Test, deadline, self, what, self.timeout, data)


def _bytes(array: np.ndarray) -> np.ndarray:
    """A contiguous array's bytes, as a flat uint8 view."""
    return array.reshape(-1).view(np.uint8)


@contextlib.contextmanager
def exit_after(seconds: float | None):
    """End the process with status 1 if the block runs past ``seconds`` (None: no limit),
    writing every thread's stack to stderr. A C watchdog (faulthandler's): mpi4py holds
    the GIL in ``MPI_Finalize``, so no Python thread could step in."""
    if seconds is None:
        yield
        return
    _flush_stdio()  # the exit would skip Python's own flushing
    faulthandler.dump_traceback_later(seconds, exit=True, file=2)  # fd 2: stderr
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def _flush_stdio() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):  # None, or closed: nothing to keep
            pass
