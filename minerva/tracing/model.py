"""Read a minerva Chrome trace back into plain records for the ``minerva-trace`` commands.

Only the trace file is read (never the runtime), so traces from another machine or an
older run work the same. Times are microseconds, as in the file.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from minerva.tracing import validate


@dataclass
class TraceOp:
    """One op slice (or poisoned op) of the trace."""

    node_id: int
    name: str
    device: int
    track: str
    start: float
    dur: float
    deps: list
    created_at: str
    nbytes: int = 0
    error: str | None = None
    poisoned_by: int | None = None
    from_device: int | None = None
    args: dict = field(default_factory=dict, repr=False)

    @property
    def end(self) -> float:
        """When the op ended (us)."""
        return self.start + self.dur

    @property
    def label(self) -> str:
        """``#id name``."""
        return f"#{self.node_id} {self.name}"


@dataclass
class Trace:
    """A loaded trace: ops that ran (by start), poisoned ops, tracks, counters."""

    ops: list[TraceOp]
    poisoned: list[TraceOp]
    devices: dict[int, str]                       # device id -> process name
    tracks: dict[tuple[int, str], list[TraceOp]]  # (device, track name) -> ops by start
    memory: dict[int, list[tuple[float, int]]]    # device -> (ts, bytes in use)
    in_flight: list[tuple[float, int]]            # (ts, ops in flight)
    dispatch: dict[str, list[tuple[float, float, str]]]  # thread -> (ts, dur, kind)
    recorded: float                               # us from start to stop of the recording

    def by_id(self) -> dict[int, TraceOp]:
        """Every op (ran or poisoned) by node id."""
        return {op.node_id: op for op in self.ops + self.poisoned}

    @property
    def span(self) -> tuple[float, float]:
        """``(first op start, last op end)``; ``(0, 0)`` with no op."""
        if not self.ops:
            return (0.0, 0.0)
        return (min(op.start for op in self.ops), max(op.end for op in self.ops))

    @property
    def active(self) -> float:
        """Microseconds from the first op start to the last op end."""
        first, last = self.span
        return last - first


def load(path: str) -> Trace:
    """Load a trace file written by ``mv.profiler`` (``.json`` or ``.json.gz``).

    Raises TraceFileError (a ValueError; its message is one line, ``PATH: what is
    wrong``) when the file cannot be read or is not a Chrome trace holding what the
    commands read (see ``validate``)."""
    events, meta = validate.checked(validate.read_json(path), path)
    return from_events(events, meta)


def from_events(events: list, meta: dict | None = None) -> Trace:
    """A Trace of a list of Chrome trace events."""
    names = _names(events)
    ops = sorted((_op(e, names) for e in events if _is_op(e)), key=lambda o: o.start)
    poisoned = [_poisoned(e) for e in events if e.get("cat") == "poisoned"]
    tracks: dict[tuple[int, str], list[TraceOp]] = {}
    for op in ops:
        tracks.setdefault((op.device, op.track), []).append(op)
    memory: dict[int, list] = {}
    for e in _counters(events, "memory in use"):
        memory.setdefault(e["pid"] - 2, []).append((e["ts"], e["args"]["bytes"]))
    in_flight = [(e["ts"], e["args"]["ops"]) for e in _counters(events, "ops in flight")]
    recorded = (meta or {}).get("recorded_us") or _last_ts(events)
    devices = {pid - 2: name for (pid, tid), name in names.items()
               if tid is None and pid >= 2}
    return Trace(ops, poisoned, devices, tracks, memory, in_flight,
                 _dispatch(events, names), recorded)


def _names(events: list) -> dict:
    """(pid, tid) -> thread name, and (pid, None) -> process name."""
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "process_name":
            names[(e["pid"], None)] = e["args"]["name"]
    return names


def _is_op(event: dict) -> bool:
    return event.get("ph") == "X" and event.get("cat") in ("op", "copy")


def _op(event: dict, names: dict) -> TraceOp:
    args = event.get("args", {})
    return TraceOp(node_id=args["node_id"], name=args["op"], device=args["device"],
                   track=names.get((event["pid"], event["tid"]), str(event["tid"])),
                   start=event["ts"], dur=event["dur"], deps=args.get("deps", []),
                   created_at=args.get("created_at", "?"), nbytes=args.get("bytes", 0),
                   error=args.get("error"), from_device=args.get("from_device"), args=args)


def _poisoned(event: dict) -> TraceOp:
    args = event.get("args", {})
    return TraceOp(node_id=args["node_id"], name=args["op"], device=args["device"],
                   track="failures", start=event["ts"], dur=0.0,
                   deps=args.get("deps", []), created_at=args.get("created_at", "?"),
                   error=args.get("error"), poisoned_by=args.get("poisoned_by"), args=args)


def _counters(events: list, name: str) -> list:
    return sorted((e for e in events if e.get("ph") == "C" and e.get("name") == name),
                  key=lambda e: e["ts"])


def _dispatch(events: list, names: dict) -> dict:
    threads: dict[str, list] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "dispatch":
            thread = names.get((e["pid"], e["tid"]), str(e["tid"]))
            threads.setdefault(thread, []).append((e["ts"], e["dur"], e["name"]))
    return threads


def _last_ts(events: list) -> float:
    """The latest end of an event (events of unknown kinds count only with valid times)."""
    ends = (_number(e.get("ts")) + _number(e.get("dur")) for e in events)
    return max(ends, default=0.0)


def _number(value) -> float:
    return value if validate.time_problem(value) is None else 0
