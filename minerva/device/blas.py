"""BLAS threads per device worker.

OpenBLAS (the BLAS NumPy's wheels ship) keeps a thread count per calling thread when set
with ``openblas_set_num_threads_local``: each CPU device's worker sets its own, so devices
share the cores without touching each other's setting or the process-wide one. Where
that function is missing (another BLAS), the process-wide limit of threadpoolctl is used
instead, and every device gets the same count (the smallest asked for).
"""
from __future__ import annotations

import ctypes
import os
import threading

from threadpoolctl import ThreadpoolController, threadpool_limits

from minerva.common.logging import get_logger

log = get_logger("minerva.device")


def usable_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _local_setter():
    """``openblas_set_num_threads_local`` of the loaded OpenBLAS, or None."""
    try:
        for controller in ThreadpoolController().select(internal_api="openblas").lib_controllers:
            library = ctypes.CDLL(controller.filepath)
            setter = getattr(library, "openblas_set_num_threads_local", None)
            if setter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], ctypes.c_int
                return setter
    except (OSError, AttributeError):
        pass
    return None


class BlasThreads:
    """Sets the BLAS thread count of the calling thread (``apply``), remembering per
    thread what it set so a worker pays the call only when its count changes.

    ``_global`` (guarded by ``_lock``) is the process-wide limit used without a
    thread-local setter."""

    def __init__(self):
        self._setter = _local_setter()
        self._applied = threading.local()
        self._lock = threading.Lock()
        self._global = None
        if self._setter is None:
            log.info("blas_threads_process_wide", reason="no thread-local BLAS setting")

    @property
    def per_thread(self) -> bool:
        """Whether each thread can have its own count."""
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
