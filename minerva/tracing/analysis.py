"""Figures from a loaded trace: busy time and idle gaps per track and device, top ops,
copies, peak memory, ops in flight, and the critical path. Pure functions of a Trace.

The *active window* runs from the first op's start to the last op's end; busy fractions
and the share of the critical path are relative to it.
"""
from __future__ import annotations

from dataclasses import dataclass

from minerva.tracing.model import Trace, TraceOp


@dataclass
class TrackUse:
    """Busy time and idle gaps of one track (or a whole device) in the active window."""

    device: int
    track: str
    n_ops: int
    busy: float
    busy_fraction: float
    gaps: list  # (start, length, op before or None, op after or None), longest first

    def n_gaps_over(self, threshold: float) -> int:
        """How many idle gaps last longer than ``threshold`` us."""
        return sum(1 for gap in self.gaps if gap[1] > threshold)


def merged(intervals) -> list[tuple[float, float]]:
    """The union of ``(start, end)`` intervals, sorted and disjoint."""
    out: list[list[float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(s, e) for s, e in out]


def _use(device: int, track: str, ops: list[TraceOp], window) -> TrackUse:
    first, last = window
    spans = merged((op.start, op.end) for op in ops)
    busy = sum(end - start for start, end in spans)
    gaps, cursor, before = [], first, None
    for op in sorted(ops, key=lambda o: o.start):
        if op.start > cursor:
            gaps.append((cursor, op.start - cursor, before, op))
        if op.end >= cursor:
            cursor, before = op.end, op
    if last > cursor:
        gaps.append((cursor, last - cursor, before, None))
    length = last - first
    return TrackUse(device, track, len(ops), busy, busy / length if length else 0.0,
                    sorted(gaps, key=lambda g: -g[1]))


def track_use(trace: Trace) -> list[TrackUse]:
    """Use of every track, by device then track name."""
    window = trace.span
    return [_use(device, track, ops, window)
            for (device, track), ops in sorted(trace.tracks.items())]


def device_use(trace: Trace) -> list[TrackUse]:
    """Use of every device (any of its tracks busy counts as busy)."""
    window = trace.span
    by_device: dict[int, list] = {}
    for op in trace.ops:
        by_device.setdefault(op.device, []).append(op)
    return [_use(device, "(all)", ops, window) for device, ops in sorted(by_device.items())]


def top_ops(trace: Trace, n: int = 10) -> list[tuple[str, int, float, float]]:
    """``(op, count, total us, mean us)`` of the ``n`` ops with the most total time."""
    totals: dict[str, list] = {}
    for op in trace.ops:
        entry = totals.setdefault(op.name, [0, 0.0])
        entry[0] += 1
        entry[1] += op.dur
    rows = [(name, count, total, total / count) for name, (count, total) in totals.items()]
    return sorted(rows, key=lambda r: (-r[2], r[0]))[:n]


def copies(trace: Trace) -> dict:
    """Copies between devices: ``{(from, to): (count, bytes, us)}``."""
    out: dict[tuple, list] = {}
    for op in trace.ops:
        if op.name == "copy":
            entry = out.setdefault((op.from_device, op.device), [0, 0, 0.0])
            entry[0] += 1
            entry[1] += op.nbytes
            entry[2] += op.dur
    return {key: tuple(value) for key, value in sorted(out.items(), key=lambda kv: str(kv[0]))}


def peak_memory(trace: Trace) -> dict[int, tuple[int, float]]:
    """Per device: ``(peak bytes in use, when)``."""
    peaks = {}
    for device, samples in sorted(trace.memory.items()):
        ts, peak = max(samples, key=lambda s: (s[1], -s[0]))
        peaks[device] = (peak, ts)
    return peaks


def in_flight(trace: Trace, n_buckets: int = 40) -> tuple[int, float, list[float]]:
    """Ops in flight: ``(max, time-weighted mean, mean per bucket)`` over the active window."""
    samples = trace.in_flight
    first, last = trace.span
    if not samples or last <= first:
        return (max((n for _t, n in samples), default=0), 0.0, [])
    width = (last - first) / n_buckets
    buckets = [0.0] * n_buckets
    for (t, n), (t_next, _n) in zip(samples, samples[1:] + [(last, 0)]):
        _spread(buckets, first, width, max(t, first), min(t_next, last), n)
    mean = sum(buckets) / n_buckets
    return (max(n for _t, n in samples), mean, buckets)


def _spread(buckets: list, first: float, width: float, start: float, end: float,
            value: int) -> None:
    """Add ``value`` weighted by the overlap of ``[start, end)`` with each bucket."""
    if end <= start:
        return
    lo, hi = int((start - first) // width), int((end - first) // width)
    for i in range(max(lo, 0), min(hi, len(buckets) - 1) + 1):
        b0 = first + i * width
        overlap = min(end, b0 + width) - max(start, b0)
        if overlap > 0:
            buckets[i] += value * overlap / width


@dataclass
class CriticalPath:
    """The longest dependent chain of ops by total op time."""

    ops: list[TraceOp]   # in dependency order
    waits: list[float]   # per op: start minus the end of its predecessor on the path
    work: float          # sum of the ops' durations (us)
    active: float        # the trace's active window (us)

    @property
    def fraction(self) -> float:
        """Share of the active window the path's op time explains."""
        return self.work / self.active if self.active else 0.0


def critical_path(trace: Trace) -> CriticalPath:
    """The chain of dependent ops (``deps`` edges) whose durations add up the most."""
    ops = {op.node_id: op for op in trace.ops}
    best: dict[int, tuple[float, int | None]] = {}
    for node_id in sorted(ops):  # producers are created before consumers
        op = ops[node_id]
        deps = [d for d in dict.fromkeys(op.deps) if d in best]
        pred = max(deps, key=lambda d: (best[d][0], ops[d].end, -d), default=None)
        best[node_id] = (op.dur + (best[pred][0] if pred is not None else 0.0), pred)
    if not best:
        return CriticalPath([], [], 0.0, trace.active)
    last = max(best, key=lambda i: (best[i][0], ops[i].end, -i))
    chain = []
    while last is not None:
        chain.append(ops[last])
        last = best[last][1]
    chain.reverse()
    waits = [0.0] + [b.start - a.end for a, b in zip(chain, chain[1:])]
    return CriticalPath(chain, waits, best[chain[-1].node_id][0], trace.active)
