"""BLAS threads per device worker.

OpenBLAS (the BLAS NumPy's wheels ship) keeps a thread count per calling thread when set
with ``openblas_set_num_threads_local``: each CPU device's worker sets its own, so devices
share the cores without touching each other's setting or the process-wide one. Where
that function is missing (another BLAS), the process-wide limit of threadpoolctl is used
instead, and every device gets the same count (the smallest asked for).

In the OpenBLAS of NumPy 2.x wheels (0.3.31) the "local" setter sets the process-wide count
(a probe at start tells): one memo then serves the process, so a thread that needs another
count than the last one set pays the call again.
"""
from __future__ import annotations

import ctypes
import os
import threading
import types

from threadpoolctl import ThreadpoolController, threadpool_limits

from minerva.common.logging import get_logger

log = get_logger("minerva.device")


def usable_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class _Sharing:
    """How many processes of this program share this machine's cores (the ranks of
    ``minerva.distributed`` on one host)."""

    processes = 1


def share_cores(n_processes: int) -> None:
    """Say that ``n_processes`` processes (this one included) share the usable cores."""
    _Sharing.processes = max(1, int(n_processes))


def cores_for_devices() -> int:
    """The cores this process's CPU devices share: the usable cores, divided among the
    processes that share them (at least one)."""
    return max(1, usable_cores() // _Sharing.processes)


def _openblas():
    """The loaded OpenBLAS's threadpoolctl controller and its
    ``openblas_set_num_threads_local``, or ``(None, None)``."""
    try:
        for controller in ThreadpoolController().select(internal_api="openblas").lib_controllers:
            library = ctypes.CDLL(controller.filepath)
            setter = getattr(library, "openblas_set_num_threads_local", None)
            if setter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], ctypes.c_int
                return controller, setter
    except (OSError, AttributeError):
        pass
    return None, None


def _shared_by_threads(controller, setter) -> bool:
    """Whether a count set by ``setter`` on one thread is what every thread reads (the
    OpenBLAS of NumPy 2.x wheels, 0.3.31: its "local" setter sets the process-wide count)."""
    before = controller.get_num_threads()
    other = 2 if before == 1 else 1
    probe = threading.Thread(target=setter, args=(other,), name="minerva-blas-probe")
    probe.start()
    probe.join()
    shared = controller.get_num_threads() == other
    setter(before)
    return shared


class BlasThreads:
    """Sets the BLAS thread count of the calling thread (``apply``), remembering what it
    set (per thread, or once for the process where the setter is process-wide) so a
    worker pays the call only when the count changes.

    ``_global`` (guarded by ``_lock``) is the process-wide limit used without a
    thread-local setter."""

    def __init__(self):
        controller, self._setter = _openblas()
        self._applied = threading.local()
        self._lock = threading.Lock()
        self._global = None
        if self._setter is None:
            log.info("blas_threads_process_wide", reason="no thread-local BLAS setting")
        elif _shared_by_threads(controller, self._setter):
            self._applied = types.SimpleNamespace(n=None)   # one memo: one count
            log.info("blas_threads_process_wide", reason="the local setter is process-wide")

    @property
    def per_thread(self) -> bool:
        """Whether a thread sets the count it needs with one cheap call before its BLAS
        calls (the OpenBLAS setter, per thread or, in NumPy's wheels, process-wide)."""
        return self._setter is not None

    def apply(self, n_threads: int) -> None:
        """Make BLAS calls of this thread use ``n_threads`` threads."""
        if getattr(self._applied, "n", None) == n_threads:
            return
        self._applied.n = n_threads
        if self._setter is not None:
            self._setter(n_threads)
            return
        with self._lock:
            if self._global is not None:
                self._global.restore_original_limits()
            self._global = threadpool_limits(limits=n_threads, user_api="blas")

    def restore(self) -> None:
        """Undo a process-wide limit (nothing to undo per thread)."""
        with self._lock:
            if self._global is not None:
                self._global.restore_original_limits()
                self._global = None


BLAS = BlasThreads()
"""The process's BLAS thread control (one per process: it is a property of the library)."""
