"""The process's distributed session: the transport, the communication thread, the
sequence numbers, and the process-wide setup (Ctrl-C, exit).

``init()`` picks the transport: MPI when an MPI launcher started the process, else the
one-rank :class:`LocalTransport` (a plain process is rank 0 of 1; mpi4py is not even
imported). At exit the runtime's pending work is finished first, then the thread stops
and MPI is finalized, on every rank, so that the launcher reports each rank's own exit
status: a job with a failed rank fails (see :meth:`MpiTransport.finalize`).

Under MPI, Ctrl-C (which ``mpiexec`` forwards to every rank) interrupts communication
before it raises KeyboardInterrupt: collectives in progress or to come fail at once, so
every rank unwinds and exits by itself instead of waiting for ranks that are gone.
"""
from __future__ import annotations

import atexit
import signal
import threading

from minerva import system
from minerva.common.logging import get_logger
from minerva.distributed import nccl, settings
from minerva.distributed.comm_thread import CommThread
from minerva.distributed.errors import DistributedError
from minerva.distributed.mpi_transport import MpiTransport
from minerva.distributed.runner import Runner
from minerva.distributed.transport import LocalTransport

log = get_logger("minerva.distributed")
STOP_TIMEOUT = 30.0


class Session:
    """A started ``minerva.distributed``: ``rank``, ``size``, the ``runner`` and the
    communication thread ``comm``. ``_lock`` guards the sequence counter."""

    def __init__(self, transport, timeout: float):
        self.transport = transport
        self.rank, self.size = transport.rank, transport.size
        self.timeout = timeout
        self.runner = Runner(transport, timeout, lambda: nccl.load_nccl())
        self.comm = CommThread(self.runner)
        self._lock = threading.Lock()
        self._seq = 0

    def next_seq(self) -> int:
        """The sequence number of the next collective built."""
        with self._lock:
            seq = self._seq
            self._seq += 1
        return seq

    def post(self, job) -> None:
        """Queue a collective's job for the communication thread."""
        self.comm.post(job)

    @property
    def broken(self):
        """The error that broke communication, or None."""
        return self.runner.broken


class _State:
    """The process's session (None until ``init``) and transport (kept across
    ``shutdown`` and ``init``: MPI starts once per process); ``lock`` guards both."""

    session: Session | None = None
    transport = None
    healthy = True
    ctrl_c = False   # communication was interrupted by Ctrl-C
    lock = threading.Lock()
    hooked = False


def init(timeout=None) -> Session:
    """Start (or return) the session; ``timeout`` overrides ``MINERVA_DIST_TIMEOUT``."""
    with _State.lock:
        if _State.session is not None:
            return _State.session
        seconds = (settings.timeout_from_env() if timeout is None
                   else settings.check_timeout(timeout))
        if _State.transport is None:
            _State.transport = _make_transport(seconds)
            _hook_process(_State.transport)
            system.share_cores(_State.transport.local_size)   # the ranks on this host
        _State.session = Session(_State.transport, seconds)
        log.info("dist_started", rank=_State.session.rank, size=_State.session.size,
                 transport=_State.transport.name, timeout=seconds)
        return _State.session


def current() -> Session:
    """The session; DistributedError when ``init`` was not called."""
    session = _State.session
    if session is None:
        raise DistributedError("minerva.distributed is not initialized: call "
                               "minerva.distributed.init() first")
    return session


def running() -> Session | None:
    """The session, or None."""
    return _State.session


def shutdown(timeout: float | None = STOP_TIMEOUT) -> None:
    """Run the collectives issued so far, stop the communication thread and end the
    session (``init`` starts a new one; MPI itself is finalized at exit)."""
    with _State.lock:
        session, _State.session = _State.session, None
    if session is not None:
        _close(session, timeout)


def park() -> None:
    """The runtime stopped: stop the communication thread until the next collective."""
    session = _State.session
    if session is not None:
        session.comm.stop(STOP_TIMEOUT)
        session.runner.gpu.park()


def _close(session: Session, timeout) -> None:
    session.comm.stop(timeout, close=True)
    session.runner.close()
    _State.healthy = _State.healthy and session.broken is None


def _make_transport(timeout: float):
    if not settings.launched_by_mpi():
        return LocalTransport()
    return MpiTransport.create(timeout)


def _hook_process(transport) -> None:
    """Once per process: finish at exit; under MPI, let Ctrl-C interrupt communication;
    and stop the communication thread whenever the runtime stops."""
    if _State.hooked:
        return
    _State.hooked = True
    atexit.register(_at_exit)
    add_stop_hook = getattr(system, "add_stop_hook", None)
    if add_stop_hook is not None:
        add_stop_hook(park)
    if transport.size > 1 and threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def _on_sigint(signum, frame):
    """Ctrl-C: fail communication now (other ranks are being interrupted too), then raise
    KeyboardInterrupt as Python would."""
    transport = _State.transport
    if transport is not None:
        _State.ctrl_c = True
        transport.interrupt("interrupted by Ctrl-C (SIGINT)")
    signal.default_int_handler(signum, frame)


def _at_exit() -> None:
    """Finish the runtime's pending work, stop the thread, finalize the transport (with a
    bounded wait for the other ranks when communication broke)."""
    try:
        system.stop()
    except BaseException as err:  # at exit: report, go on closing
        log.warning("dist_exit_runtime_stop_failed", error=repr(err))
    shutdown()
    transport = _State.transport
    if transport is not None:
        transport.finalize(_State.healthy and transport.interrupted is None,
                           interrupted=_State.ctrl_c)
