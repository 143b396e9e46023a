"""Text reports of a loaded trace: ``summary`` and ``critical-path`` of ``minerva-trace``.

Each function returns the report as a list of lines; the CLI prints them.
"""
from __future__ import annotations

from minerva.common.text import format_bytes
from minerva.tracing import analysis
from minerva.tracing.model import Trace

SPARK = " \u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"


def fmt_time(us: float) -> str:
    """Microseconds as a short human figure (``12.3 us``, ``4.56 ms``, ``1.234 s``)."""
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3f} s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} us"


def table(header: tuple, rows: list) -> list[str]:
    """Rows aligned under a header (first column left, the rest right)."""
    cells = [tuple(str(c) for c in row) for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(row, widths))).rstrip()
            for row in cells]


def sparkline(values: list[float]) -> str:
    """A one-line bar chart of ``values``."""
    top = max(values, default=0) or 1
    return "".join(SPARK[round(v / top * (len(SPARK) - 1))] for v in values)


def summary(trace: Trace, name: str = "trace", gap_us: float = 100.0, n_top: int = 10):
    """The ``summary`` report lines."""
    first, last = trace.span
    n_copies = sum(1 for op in trace.ops if op.name == "copy")
    n_failed = sum(1 for op in trace.ops if op.error)
    lines = [f"{name}: recorded {fmt_time(trace.recorded)}, active {fmt_time(last - first)}"
             f" (first op start -> last op end)",
             f"  {len(trace.ops)} ops ran on {len(trace.tracks)} track(s) of "
             f"{len({op.device for op in trace.ops})} device(s); {n_copies} copies, "
             f"{n_failed} failed, {len(trace.poisoned)} poisoned", ""]
    lines += _use_section(trace, gap_us)
    lines += _dispatch_section(trace)
    lines += ["", f"top ops by total time (of {fmt_time(sum(o.dur for o in trace.ops))})"]
    lines += table(("op", "count", "total", "mean", "share"), [
        (op, count, fmt_time(total), fmt_time(mean), _pct(total, _op_time(trace)))
        for op, count, total, mean in analysis.top_ops(trace, n_top)])
    return lines + _copy_section(trace) + _memory_section(trace) + _flight_section(trace)


def _op_time(trace: Trace) -> float:
    return sum(op.dur for op in trace.ops)


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def _use_section(trace: Trace, gap_us: float) -> list[str]:
    rows = []
    for use in _uses(trace):
        longest = use.gaps[0] if use.gaps else None
        rows.append((f"{use.device}", use.track, use.n_ops, fmt_time(use.busy),
                     f"{100 * use.busy_fraction:.1f}%",
                     f"{use.n_gaps_over(gap_us)} ({fmt_time(sum(g[1] for g in use.gaps))})",
                     _gap_text(longest)))
    header = ("device", "track", "ops", "busy", "busy%", f"gaps>{fmt_time(gap_us)} (idle)",
              "longest gap")
    return ["busy and idle per device and track"] + table(header, rows)


def _uses(trace: Trace) -> list:
    """Each device, followed by its tracks when it has more than one."""
    tracks = analysis.track_use(trace)
    out = []
    for device in analysis.device_use(trace):
        own = [t for t in tracks if t.device == device.device]
        if len(own) == 1:
            device.track = own[0].track
        out += [device] + (own if len(own) > 1 else [])
    return out


def _gap_text(gap) -> str:
    if gap is None:
        return "-"
    _start, length, before, after = gap
    where = (f"after {before.label}" if before is not None else "at start") + \
        (f", before {after.label}" if after is not None else ", to the end")
    return f"{fmt_time(length)} {where}"


def _dispatch_section(trace: Trace) -> list[str]:
    if not trace.dispatch:
        return []
    rows = []
    for thread, spans in sorted(trace.dispatch.items()):
        kinds: dict[str, int] = {}
        for _ts, _dur, kind in spans:
            kinds[kind] = kinds.get(kind, 0) + 1
        rows.append((thread, len(spans), fmt_time(sum(s[1] for s in spans)),
                     ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))))
    return ["", "dispatchers"] + table(("thread", "tasks", "busy", "by kind"), rows)


def _copy_section(trace: Trace) -> list[str]:
    found = analysis.copies(trace)
    if not found:
        return ["", "copies: none"]
    rows = [(f"{src} -> {dst}", n, format_bytes(nbytes), fmt_time(us),
             f"{nbytes / us / 1e3:.2f} GB/s" if us else "-")
            for (src, dst), (n, nbytes, us) in found.items()]
    total = [sum(v[i] for v in found.values()) for i in range(3)]
    rows.append(("all", total[0], format_bytes(total[1]), fmt_time(total[2]), ""))
    return ["", "copies"] + table(("devices", "count", "bytes", "time", "rate"), rows)


def _memory_section(trace: Trace) -> list[str]:
    peaks = analysis.peak_memory(trace)
    if not peaks:
        return []
    rows = [(device, format_bytes(peak), fmt_time(ts), format_bytes(trace.memory[device][-1][1]))
            for device, (peak, ts) in peaks.items()]
    return ["", "memory in use"] + table(("device", "peak", "at", "at end"), rows)


def _flight_section(trace: Trace) -> list[str]:
    top, mean, buckets = analysis.in_flight(trace)
    if not buckets:
        return []
    return ["", f"ops in flight over the active window: max {top}, mean {mean:.1f}",
            f"  |{sparkline(buckets)}|"]


def _path_by_op(path, n: int = 6) -> list[str]:
    """One line: the path's op time by op name, largest first."""
    totals: dict[str, float] = {}
    for op in path.ops:
        totals[op.name] = totals.get(op.name, 0.0) + op.dur
    top = sorted(totals.items(), key=lambda kv: -kv[1])[:n]
    return ["  by op: " + ", ".join(f"{name} {_pct(t, path.work)}" for name, t in top)]


def critical_path(trace: Trace, limit: int = 50) -> list[str]:
    """The ``critical-path`` report lines (at most ``limit`` ops listed, longest kept)."""
    path = analysis.critical_path(trace)
    first = trace.span[0]
    lines = [f"critical path: {len(path.ops)} ops, {fmt_time(path.work)} of op time = "
             f"{100 * path.fraction:.1f}% of the active {fmt_time(path.active)}",
             f"  (waits between them: {fmt_time(sum(path.waits))}; the chain spans "
             f"{fmt_time(path.ops[-1].end - path.ops[0].start) if path.ops else '-'})"]
    lines += _path_by_op(path) + [""]
    shown = list(zip(path.ops, path.waits))
    if len(shown) > limit:
        keep = {id(op) for op, _w in sorted(shown, key=lambda s: -s[0].dur)[:limit]}
        shown = [s for s in shown if id(s[0]) in keep]
        lines.append(f"  ({len(path.ops) - limit} shortest ops not listed)")
    rows = [(op.label, op.device, fmt_time(op.start - first), fmt_time(op.dur),
             fmt_time(wait), _pct(op.dur, path.work), op.created_at)
            for op, wait in shown]
    return lines + table(("op", "device", "start", "duration", "wait", "share",
                          "created at"), rows)
