"""The engine's lifecycle: shutdown and cancelling, fork, whether an array can still be
used, consistent snapshots for printers (``Engine`` inherits it)."""
from __future__ import annotations

from minerva.common.errors import CancelledError, MinervaError
from minerva.common.logging import get_logger
from minerva.scheduler import state

log = get_logger("minerva.scheduler")


class Lifecycle:
    """Shutdown, cancel, fork and the checks of arrays of a closed runtime (mixed into
    ``Engine``)."""

    def snapshot(self, reader):
        """``reader(dag)`` called under the lock, after applying queued releases: a
        consistent view of the live DAG for printers and tracers (which must copy what
        they keep)."""
        self.flush_releases()
        with self._lock:
            return reader(self.dag)

    def stats(self) -> dict:
        """The DAG's counts (see ``PhysicalDag.stats``)."""
        return self.snapshot(lambda dag: dag.stats())

    def shutdown(self, timeout: float | None = None) -> None:
        """Finish pending work (up to ``timeout``); then cancel ops that have not started
        (their outputs fail with CancelledError), let running kernels finish, and stop
        this engine's threads. Ctrl-C while waiting cancels at once (then re-raises)."""
        if self.closed:
            return
        try:
            finished = self._settle(timeout)
        except KeyboardInterrupt:
            self.cancel("Ctrl-C during mv.shutdown() stopped the runtime before this op "
                        "started")
            raise
        else:
            if not finished:
                self.cancel(f"mv.shutdown(timeout={timeout}) stopped the runtime before "
                            "this op started")
        finally:
            self.closed = True
            self._stop_threads()

    def cancel(self, reason: str) -> None:
        """Cancel every op not yet started: devices report them failed without running
        them; wait for the kernels already running."""
        log.warning("shutdown_cancelled_pending", n_pending=self.n_inflight)
        error = CancelledError(reason)
        for device in self.devices.all():
            device.cancel(error)
        self._settle(None)

    def forget(self) -> None:
        """This engine was inherited by a forked child: it has no threads there, and its
        state must never be touched again (another thread may have held its lock)."""
        self.forked = True
        self.closed = True

    def check_open(self, data=None) -> None:
        """MinervaError when this runtime was shut down (or inherited through fork), saying
        whether ``data`` (the value of an array of this runtime, when given) was computed."""
        if not self.closed:
            return
        if self.forked:
            self._check_usable()
        raise MinervaError(_shut_down_message(data))

    def _refuse_foreign(self, storages) -> None:
        """MinervaError for a storage (None: none) of another runtime (a new op of this one
        cannot read or write it)."""
        for storage in storages:
            if storage is not None and storage.engine is not self:
                storage.engine.check_open(storage.current)
                raise MinervaError("this NArray belongs to another minerva runtime")

    def _check_usable(self) -> None:
        if self.forked:
            raise MinervaError("this array belongs to the minerva runtime of the parent "
                               "process (inherited through fork); a forked child starts "
                               "its own runtime: make new arrays there")
        if self.closed:
            raise MinervaError("the minerva runtime was shut down before this array was "
                               "computed; its value is lost")

    def _stop_threads(self) -> None:
        """Stop any threads the engine owns (subclasses)."""


def _shut_down_message(data) -> str:
    """Why an array of a shut-down runtime cannot be used in new ops (``data``: its value;
    None when it is not known)."""
    if data is None:
        return ("the minerva runtime was shut down; arrays made before mv.shutdown() cannot "
                "be used in new ops")
    if data.state == state.COMPLETED:
        return ("this array was computed but belongs to a minerva runtime that was shut "
                "down (mv.shutdown()): it cannot be used in new ops; its values stay "
                "readable (x.to_numpy()), and mv.array(x.to_numpy()) makes a new array")
    cancelled = isinstance(getattr(data.error, "__cause__", None), CancelledError)
    if data.error is not None and not cancelled:
        return ("this array belongs to a minerva runtime that was shut down, and its op "
                "failed (x.wait() raises the error): it cannot be used in new ops")
    return ("the minerva runtime was shut down before this array was computed; its value "
            "is lost, and it cannot be used in new ops")
