"""Completion of GPU work: one completion thread per stream waits on events in order.

When a GPU device's launcher thread has queued an op's work on a stream, it records an event
there and hands a :class:`Launched` record to that stream's :class:`StreamWatcher`. The
watcher's thread blocks on the events one after the other (a stream runs its work in order,
so its events complete in order) and reports each op as soon as its event is done. Waiting
is done without the GIL (``cudaEventSynchronize``), so the launcher, the dispatchers and the
user thread keep running. The dispatchers never wait on a GPU; the user thread only in
``wait``, ``to_numpy`` and ``wait_for_all``; a CPU device's worker while it copies a value
from a GPU.

Why threads and not CUDA host callbacks: a host function runs on a driver thread that must
not call CUDA and holds up its stream while it runs; reporting a completion runs runtime code
(the scheduler's COMPLETE, frees, starting successors) that takes locks and the GIL, which
would stall the stream behind Python. A waiting thread costs one core only while it spins.
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Callable

from minerva.common.logging import get_logger

log = get_logger("minerva.device")
_STOP = None


class Launched:
    """One op whose work is queued on a stream: what its completion thread needs."""

    __slots__ = ("op", "stream_name", "event", "error", "keep", "t_launch")

    def __init__(self, op, stream_name: str, event: Any, error: BaseException | None,
                 keep: Any, t_launch: int):
        self.op = op
        self.stream_name = stream_name
        self.event = event
        self.error = error
        self.keep = keep          # host buffers the queued copies read or write
        self.t_launch = t_launch  # perf_counter_ns when the launcher queued the work

    def __repr__(self) -> str:
        return f"Launched({self.op!r} on {self.stream_name})"


class StreamWatcher:
    """The completion thread of one stream: calls ``settle(launched)`` for each record, in
    the order they were put, on its own thread (named ``name``)."""

    def __init__(self, name: str, settle: Callable[[Launched], None]):
        self.name = name
        self._settle = settle
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._watch, name=name, daemon=True)
        self._thread.start()

    def put(self, launched: Launched) -> None:
        """Watch ``launched`` after every record put before it."""
        self._queue.put(launched)

    def stop(self, timeout: float | None = None) -> bool:
        """Settle what was put, then end the thread; False if it did not end in time."""
        self._queue.put(_STOP)
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("gpu_watcher_did_not_stop", thread=self.name)
            return False
        return True

    @property
    def alive(self) -> bool:
        """Whether the thread still runs."""
        return self._thread.is_alive()

    def _watch(self) -> None:
        get, settle = self._queue.get, self._settle
        while True:
            launched = get()
            if launched is _STOP:
                return
            try:
                settle(launched)
            except Exception:  # a bug in a listener must not stop completions
                log.exception("gpu_completion_failed", thread=self.name, op=repr(launched.op))
