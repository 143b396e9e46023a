"""What a GPU device keeps about work it queued: one :class:`Launched` record per op, the host
buffers it must not let go of yet (:class:`HeldBuffers`), and the estimated times of ops
settled in bulk (:func:`estimate_times`).
"""
from __future__ import annotations

import threading
from typing import Any

ESTIMATED = " (estimated)"
"""Suffix of the trace track of ops whose start and end times are estimates (settled in
bulk: the settler only saw that they were done by then)."""


class Launched:
    """One op whose work is queued on a stream: what settling it needs.

    ``event`` is recorded after the op's work; ``error`` an error raised while queuing (or,
    under the test double, while its kernel ran); ``keep`` host buffers the queued copies
    read or write, held until the event and every ``fences`` event completed (a None fence:
    an end that could not be marked, so ``keep`` is never reused); ``checks`` the
    ``(host_flag, error, flag)`` of device-side checks (the op fails when a flag reads true);
    ``deps`` the records on other streams this one was ordered after. ``seq`` is the launch
    order on the device; ``settled`` is set once it was reported."""

    __slots__ = ("op", "stream_name", "event", "error", "keep", "fences", "checks", "deps",
                 "t_launch", "seq", "settled")

    def __init__(self, op, stream_name: str, t_launch: int):
        self.op = op
        self.stream_name = stream_name
        self.event: Any = None
        self.error: BaseException | None = None
        self.keep: list = []
        self.fences: list = []
        self.checks: list = []
        self.deps: list = []
        self.t_launch = t_launch
        self.seq = -1
        self.settled = False

    def outcome(self) -> BaseException | None:
        """The op's error: its own, or that of a device-side check whose flag is set (read
        once the op's work completed)."""
        if self.error is None:
            for host, error, _flag in self.checks:
                if host.any():
                    self.error = error
                    break
        return self.error

    def __repr__(self) -> str:
        return f"Launched(#{self.seq} {self.op!r} on {self.stream_name})"


class HeldBuffers:
    """Host buffers a transfer may still use, each with the events after which it may not
    (a None event never passes: held for the life of the process).

    ``_lock`` guards ``entries``, a list of ``(buffers, events)``."""

    def __init__(self, layer):
        self.layer = layer
        self.entries: list = []
        self._lock = threading.Lock()

    def hold(self, buffers: list, events: list) -> None:
        """Keep ``buffers`` until every one of ``events`` completed."""
        with self._lock:
            self.entries.append((buffers, list(events)))

    def keep_of(self, record: Launched) -> None:
        """A settled record lets go of its buffers, unless a fence has not passed yet."""
        if record.keep:
            pending = [event for event in record.fences if not self.passed(event)]
            if pending:
                self.hold(record.keep, pending)

    def release(self) -> None:
        """Let go of the buffers whose events all completed."""
        if not self.entries:
            return
        with self._lock:
            self.entries = [(buffers, events) for buffers, events in self.entries
                            if not all(self.passed(e) for e in events)]

    def passed(self, event) -> bool:
        """Whether ``event`` completed (never for None, or when asking fails)."""
        if event is None:
            return False
        try:
            return self.layer.query(event)
        except Exception:  # a failed GPU: its copies' ends are unknown
            return False

    def __len__(self) -> int:
        return len(self.entries)


def estimate_times(records: list, t_seen: int, exact, last_done: dict):
    """``(record, track suffix, start, end)`` for a batch seen done by ``t_seen``.

    Per stream, the ops are spread from the first one's possible start (its launch, or the
    previous end on that stream, ``last_done``, updated here) to ``t_seen``, none starting
    before its launch (a stream runs in order); these are estimates. The op waited for
    (``exact``) ends exactly at ``t_seen``."""
    by_stream: dict[str, list] = {}
    for record in records:
        by_stream.setdefault(record.stream_name, []).append(record)
    times = []
    for name, group in by_stream.items():
        start = max(group[0].t_launch, last_done[name])
        step = max(0, t_seen - start) / len(group)
        previous = last_done[name]
        for i, record in enumerate(group):
            t_start = max(record.t_launch, previous)
            if record is exact:
                times.append((record, "", t_start, t_seen))
                previous = t_seen
            else:
                previous = max(t_start, int(start + step * (i + 1)))
                times.append((record, ESTIMATED, t_start, previous))
        last_done[name] = previous
    return times
