"""BLAS threads of the kernels: each kernel that calls BLAS says how many threads its
calls use (its device's count, or one per row range of a split kernel).

OpenBLAS (the BLAS NumPy's wheels ship) can keep a count per calling thread, set with
``openblas_set_num_threads_local``. In the OpenBLAS of NumPy 2.x wheels (0.3.31) that
setter sets the process-wide count instead (a probe at start tells), and without it
(another BLAS) threadpoolctl's process-wide limit is used. With one count for the process,
kernels that want different counts take turns (``BlasThreads.hold``): a product's bits can
depend on the count, and a count changed under a running kernel by another thread made
results differ from call to call.
"""
from __future__ import annotations

import collections
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


def openblas_controllers() -> list:
    """threadpoolctl's controllers of the loaded OpenBLAS libraries, NumPy's own first (its
    wheels ship one in ``numpy.libs``; SciPy's wheels load another, which may be listed
    before it — NumPy's kernels use NumPy's)."""
    controllers = ThreadpoolController().select(internal_api="openblas").lib_controllers
    return sorted(controllers, key=lambda c: not os.path.basename(
        os.path.dirname(c.filepath)).startswith("numpy"))


def _openblas():
    """NumPy's OpenBLAS's threadpoolctl controller and its
    ``openblas_set_num_threads_local``, or ``(None, None)``."""
    try:
        for controller in openblas_controllers():
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
    """The BLAS thread count of the process's kernels.

    A kernel that calls BLAS runs between ``hold(n)`` and ``release()``: its BLAS calls use
    ``n`` threads. Where the count is one per thread (a thread-local OpenBLAS setter), a
    hold sets the calling thread's count, remembered per thread so a worker pays the call
    only when its count changes. Where one count serves the whole process (NumPy's wheels:
    their "local" setter is process-wide; threadpoolctl's limit without it), kernels that
    want different counts must not overlap — the result of some products depends on the
    count — so a hold waits until the kernels holding another count have released it,
    then sets its own: every BLAS call runs with the count its kernel asked for, and the
    same kernel on the same inputs gives the same bits every time.

    ``_cond`` guards ``_count`` (the process-wide count last set), ``_users`` (the kernels
    holding it) and ``_queue`` (the threads waiting for their turn, first come first
    served: while any waits, a new kernel queues behind it, so no count is starved)."""

    def __init__(self):
        controller, self._setter = _openblas()
        self._local = threading.local()
        self._guard = threading.Lock()
        self._cond = threading.Condition(self._guard)
        self._count = None
        self._users = 0
        self._queue: collections.deque = collections.deque()
        self._global = None
        self.process_wide = self._setter is None or _shared_by_threads(controller,
                                                                        self._setter)
        if self.process_wide:
            log.info("blas_threads_process_wide",
                     reason="the local setter is process-wide" if self._setter
                     else "no thread-local BLAS setting")

    @property
    def per_thread(self) -> bool:
        """Whether a thread sets the count it needs with one cheap call before its BLAS
        calls (the OpenBLAS setter, per thread or, in NumPy's wheels, process-wide): CPU
        devices split kernels into row ranges only then."""
        return self._setter is not None

    def hold(self, n_threads: int) -> None:
        """Make this thread's BLAS calls use ``n_threads`` threads until ``release()``
        (where the count is process-wide: once no kernel holds another count)."""
        if not self.process_wide:
            self.set_here(n_threads)
            return
        with self._cond:
            if self._queue or (self._users and self._count != n_threads):
                self._wait_turn(n_threads)
            if self._count != n_threads:
                self._set(n_threads)
                self._count = n_threads
            self._users += 1

    def try_hold(self, n_threads: int) -> bool:
        """``hold(n_threads)`` when it needs no wait (no kernel holds another count and
        none waits); False otherwise, nothing held (a caller that must not wait: the
        engine's lean path, under the engine lock)."""
        if not self.process_wide:
            self.set_here(n_threads)
            return True
        with self._cond:
            if self._queue or (self._users and self._count != n_threads):
                return False
            if self._count != n_threads:
                self._set(n_threads)
                self._count = n_threads
            self._users += 1
        return True

    def guards(self) -> dict:
        """What the C lean path (``minerva.api.core.lean``) needs to run ``try_hold`` and
        ``release`` without a Python call where the count is process-wide: the condition,
        its lock and the queue of waiting turns (it reads and writes ``_count`` and
        ``_users`` under that lock, as these methods do)."""
        return {"blas_cond": self._cond, "blas_lock": self._guard, "blas_queue": self._queue}

    def _wait_turn(self, n_threads: int) -> None:
        """Queue (holding ``_cond``) until first in line and free to run: no kernel holds
        a count, or the count held is ``n_threads``."""
        turn = object()
        self._queue.append(turn)
        try:
            while self._queue[0] is not turn or (self._users and self._count != n_threads):
                self._cond.wait()
        finally:
            self._queue.remove(turn)
            self._cond.notify_all()   # the next in line may join the same count

    def release(self) -> None:
        """End this thread's ``hold``."""
        if not self.process_wide:
            return
        with self._cond:
            self._users -= 1
            if not self._users and self._queue:
                self._cond.notify_all()

    def set_here(self, n_threads: int) -> None:
        """Set the count of the calling thread where counts are per thread (a helper
        thread running a range of a held kernel); nothing where the count is process-wide
        (the holder set it)."""
        if self.process_wide or getattr(self._local, "n", None) == n_threads:
            return
        self._local.n = n_threads
        self._setter(n_threads)

    def _set(self, n_threads: int) -> None:
        if self._setter is not None:
            self._setter(n_threads)
            return
        if self._global is not None:
            self._global.restore_original_limits()
        self._global = threadpool_limits(limits=n_threads, user_api="blas")

    def restore(self) -> None:
        """Undo a process-wide limit (nothing to undo per thread); the next hold sets its
        count again."""
        with self._cond:
            self._count = None
            if self._global is not None:
                self._global.restore_original_limits()
                self._global = None


BLAS = BlasThreads()
"""The process's BLAS thread control (one per process: it is a property of the library)."""
