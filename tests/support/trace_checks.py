"""Checks that a Chrome trace written by ``mv.profiler`` will load in Perfetto: the schema of
each event, slices properly nested on every track, flows bound to existing slices at
both ends, counters never negative. ``check_chrome_trace`` returns the slices by track."""
from __future__ import annotations

import json
import numbers

import minerva as mv

PHASES = {"X", "M", "C", "s", "f", "i"}


def check_chrome_trace(trace: dict) -> dict:
    """Assert ``trace`` is a well-formed Chrome trace; the X slices by (pid, tid)."""
    assert set(trace) >= {"traceEvents", "displayTimeUnit"}
    events = trace["traceEvents"]
    assert isinstance(events, list) and events
    for event in events:
        _check_event(event)
    slices = _slices_by_track(events)
    for track, spans in slices.items():
        _check_nesting(track, spans)
    _check_flows(events, slices)
    _check_counters(events)
    _check_names(events, slices)
    return slices


def _check_event(event: dict) -> None:
    assert event["ph"] in PHASES, event
    assert isinstance(event["name"], str) and event["name"], event
    assert isinstance(event["pid"], int) and isinstance(event["tid"], int), event
    if event["ph"] == "M":
        assert isinstance(event["args"]["name" if "name" in event["name"] else
                                        "sort_index"], (str, int)), event
        return
    assert isinstance(event["ts"], numbers.Real) and event["ts"] >= 0, event
    if event["ph"] == "X":
        assert isinstance(event["dur"], numbers.Real) and event["dur"] >= 0, event
        assert isinstance(event.get("args", {}), dict)
    if event["ph"] in "sf":
        assert isinstance(event["id"], int), event
    if event["ph"] == "i":
        assert event["s"] in "gpt", event


def _slices_by_track(events: list) -> dict:
    tracks: dict[tuple, list] = {}
    for event in events:
        if event["ph"] == "X":
            tracks.setdefault((event["pid"], event["tid"]), []).append(event)
    for spans in tracks.values():
        spans.sort(key=lambda e: (e["ts"], -e["dur"]))
    return tracks


def _check_nesting(track, spans: list) -> None:
    """Each slice ends before the next begins, or encloses it (a stack discipline)."""
    open_ends: list[float] = []
    for event in spans:
        start, end = event["ts"], event["ts"] + event["dur"]
        while open_ends and open_ends[-1] <= start:
            open_ends.pop()
        assert not open_ends or end <= open_ends[-1], (
            f"slices overlap without nesting on track {track}: {event}")
        open_ends.append(end)


def _enclosing(slices: dict, event: dict):
    for span in slices.get((event["pid"], event["tid"]), []):
        if span["ts"] <= event["ts"] <= span["ts"] + span["dur"]:
            return span
    return None


def _check_flows(events: list, slices: dict) -> None:
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts.keys() == ends.keys(), "every flow has one start and one end"
    for flow_id, start in starts.items():
        end = ends[flow_id]
        assert end.get("bp") == "e"
        assert start["ts"] <= end["ts"], (start, end)
        assert _enclosing(slices, start) is not None, f"flow start outside a slice: {start}"
        assert _enclosing(slices, end) is not None, f"flow end outside a slice: {end}"


def _check_counters(events: list) -> None:
    for event in events:
        if event["ph"] == "C":
            assert event["args"], event
            for value in event["args"].values():
                assert isinstance(value, numbers.Real) and value >= 0, event


def _check_names(events: list, slices: dict) -> None:
    """Every track with slices, and every process, is named."""
    threads = {(e["pid"], e["tid"]) for e in events
               if e["ph"] == "M" and e["name"] == "thread_name"}
    processes = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert set(slices) <= threads
    assert {pid for pid, _tid in slices} <= processes


def op_slices(trace: dict) -> list[dict]:
    """The op and copy slices of a trace, by start time."""
    return sorted((e for e in trace["traceEvents"]
                   if e["ph"] == "X" and e.get("cat") in ("op", "copy")),
                  key=lambda e: e["ts"])


def traced_replays(run, path: str) -> tuple[dict, list]:
    """``(trace, its jit_replay slices)`` of ``run()`` (the caller's calls of a jitted
    function, so that their lines are the caller's) traced into ``path``, waited for and
    the trace checked."""
    mv.profiler.start(path)
    run()
    mv.wait_for_all(timeout=30)
    with open(mv.profiler.stop(), encoding="utf-8") as written:
        trace = json.load(written)
    check_chrome_trace(trace)
    return trace, [e for e in op_slices(trace) if e["args"]["op"] == "jit_replay"]
