"""Write a Recording as Chrome trace JSON (the format Perfetto and chrome://tracing load).

Layout:

- process ``scheduler`` (pid 1): one track per dispatcher thread with a slice per task
  (RUN, COMPLETE, DELETE, RELEASE), and the counter ``ops in flight``;
- one process per device (pid ``device_id + 2``): a track per worker or stream with a
  slice per op (category ``op`` or ``copy``), a ``failures`` track with an instant per
  poisoned op, and a ``memory in use`` counter;
- inside a jit replay's slice (CPU devices), a slice per step it ran (category
  ``jit-step``), with the user's line of the op it replays;
- process ``host`` (pid 0): a ``host`` track per user thread that called the host
  fallback, with a slice per call (category ``host``) named by NumPy's function
  (``numpy.fft.fft``), so a trace shows which calls left the device;
- a flow arrow from each producer's slice to each consumer's slice;
- a failed op's slice carries ``error`` and the ids of the ops it poisoned, and a global
  instant marks the failure.

Slices that overlap on one track without nesting (two threads reporting the same track
name) go to extra lanes ``track (2)``, ... so every track stays properly nested.
"""
from __future__ import annotations

import gzip
import json

from minerva.tracing.convert import OpRecord, Recording

FORMAT_VERSION = 1
SCHEDULER_PID = 1
HOST_PID = 0


def device_pid(device_id: int) -> int:
    """The Chrome process id of a device."""
    return device_id + 2


def us(t_ns: int) -> float:
    """Nanoseconds as Chrome's microseconds (ns precision kept)."""
    return round(t_ns / 1000.0, 3)


def build(rec: Recording, devices: dict) -> dict:
    """The Chrome trace object of ``rec``; ``devices`` maps a device id to its name."""
    events = _process_names(rec, devices)
    tids = _lanes(rec, events)
    victims = poisoned_by_origin(rec)
    events += _op_slices(rec, tids, victims)
    events += _inner_slices(rec, tids)
    events += _flows(rec, tids)
    events += _failures(rec, victims)
    events += _dispatch_slices(rec, events)
    events += _host_slices(rec, events)
    events += _memory_counters(rec) + _op_counters(rec)
    meta = {"format": "minerva-trace", "version": FORMAT_VERSION,
            "recorded_us": us(rec.duration), "n_ops": len(rec.ops),
            "devices": {str(k): v for k, v in sorted(devices.items())}}
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"minerva": meta}}


def write(trace: dict, path: str) -> None:
    """Write ``trace`` to ``path`` (gzip-compressed when it ends in ``.gz``)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    text = json.dumps(trace, separators=(",", ":"))  # the C encoder: many times faster
    with opener(path, "wt", encoding="utf-8") as out:
        out.write(text)


# ---- processes and lanes ----------------------------------------------------------------

def _meta(kind: str, pid: int, name: str, tid: int = 0, **args) -> dict:
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": {"name": name, **args}}


def _process_names(rec: Recording, devices: dict) -> list:
    ids = set(devices) | {r.device_id for r in rec.ops.values()} | {m[1] for m in rec.memory}
    events = [_meta("process_name", SCHEDULER_PID, "scheduler"),
              {"ph": "M", "name": "process_sort_index", "pid": SCHEDULER_PID, "tid": 0,
               "args": {"sort_index": 0}}]
    for device_id in sorted(ids):
        pid = device_pid(device_id)
        label = devices.get(device_id, f"device {device_id}")
        events.append(_meta("process_name", pid, f"device {device_id}: {label}"))
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                       "args": {"sort_index": device_id + 1}})
    return events


def _lanes(rec: Recording, events: list) -> dict:
    """Give each op that ran a thread id; name the threads. Returns node id -> tid."""
    by_track: dict[tuple, list[OpRecord]] = {}
    for record in rec.ran_ops():
        by_track.setdefault((record.device_id, record.track), []).append(record)
    tids, next_tid = {}, {}
    for (device_id, track), records in sorted(by_track.items()):
        pid = device_pid(device_id)
        for lane, members in enumerate(_pack(records, rec.duration)):
            tid = next_tid[pid] = next_tid.get(pid, 0) + 1
            name = track if lane == 0 else f"{track} ({lane + 1})"
            events.append(_meta("thread_name", pid, name, tid))
            tids.update((r.node_id, tid) for r in members)
    return tids


def _pack(records: list, t_stop: int) -> list[list]:
    """Split slices (sorted by start) into lanes in which none overlap."""
    lanes: list[list] = []
    ends: list[int] = []
    for record in records:
        end = _end(record, t_stop)
        for i, lane_end in enumerate(ends):
            if lane_end <= record.t_start:
                lanes[i].append(record)
                ends[i] = end
                break
        else:
            lanes.append([record])
            ends.append(end)
    return lanes


def _end(record: OpRecord, t_stop: int) -> int:
    return record.t_end if record.t_end is not None else max(t_stop, record.t_start)


# ---- op slices and flows ----------------------------------------------------------------

def op_args(record: OpRecord, victims: dict) -> dict:
    """The ``args`` of an op's slice; ``victims`` maps failed op ids to poisoned ones."""
    args = {"op": record.name, "node_id": record.node_id, "device": record.device_id,
            "inputs": [d["label"] for d in record.inputs],
            "outputs": [d["label"] for d in record.outputs], "deps": record.deps,
            "bytes": record.nbytes, "created_at": record.created_at}
    if record.name == "copy" and record.inputs:
        args["from_device"] = record.inputs[0].get("device")
    if record.t_created is not None and record.t_ready is not None:
        args["wait_inputs_us"] = us(record.t_ready - record.t_created)
    if record.t_ready is not None:
        args["queued_us"] = us(record.t_start - record.t_ready)
    if record.t_end is None:
        args["unfinished"] = True
    if record.error is not None:
        args["error"] = record.error
        args["poisoned"] = victims.get(record.node_id, [])
    return args


def _slice_name(record: OpRecord) -> str:
    if record.name == "copy" and record.inputs:
        return f"copy {record.inputs[0].get('device', '?')}\u2192{record.device_id}"
    return record.name


def _op_slices(rec: Recording, tids: dict, victims: dict) -> list:
    events = []
    for record in rec.ran_ops():
        event = {"ph": "X", "name": _slice_name(record),
                 "cat": "copy" if record.name == "copy" else "op",
                 "pid": device_pid(record.device_id), "tid": tids[record.node_id],
                 "ts": us(record.t_start),
                 "dur": us(_end(record, rec.duration) - record.t_start),
                 "args": op_args(record, victims)}
        if record.error is not None:
            event["cname"] = "terrible"
        events.append(event)
    return events


def _inner_slices(rec: Recording, tids: dict) -> list:
    """The steps of jit replays, on their replay's lane (nested in its slice)."""
    return [{"ph": "X", "name": name, "cat": "jit-step", "pid": device_pid(device_id),
             "tid": tids[parent_id], "ts": us(start), "dur": us(end - start),
             "args": {"created_at": where, "replay": parent_id}}
            for start, end, device_id, parent_id, name, where in rec.inner
            if parent_id in tids]


def _flows(rec: Recording, tids: dict) -> list:
    events, flow_id = [], 0
    for record in rec.ran_ops():
        for dep in dict.fromkeys(d for d in record.deps if d is not None):
            producer = rec.ops[dep]
            if not producer.ran:
                continue
            flow_id += 1
            common = {"name": "dependency", "cat": "flow", "id": flow_id}
            events.append({"ph": "s", "pid": device_pid(producer.device_id),
                           "tid": tids[dep], "ts": us(producer.t_start), **common})
            events.append({"ph": "f", "bp": "e", "pid": device_pid(record.device_id),
                           "tid": tids[record.node_id], "ts": us(record.t_start), **common})
    return events


# ---- failures ---------------------------------------------------------------------------

FAILURES_TID = 10_000
"""Thread id of each device's ``failures`` track (instants for poisoned ops)."""


def poisoned_by_origin(rec: Recording) -> dict[int, list]:
    """Node ids of the poisoned ops, by the id of the failed op that poisoned them."""
    victims: dict[int, list] = {}
    for record in rec.ops.values():
        if record.t_poisoned is not None:
            victims.setdefault(record.poisoned_by, []).append(record.node_id)
    return victims


def _failures(rec: Recording, victims: dict) -> list:
    out = [_failure_marker(r, victims.get(r.node_id, []))
           for r in rec.ran_ops() if r.error is not None]
    poisoned = sorted((r for r in rec.ops.values() if r.t_poisoned is not None),
                      key=lambda r: r.t_poisoned)
    for pid in sorted({device_pid(r.device_id) for r in poisoned}):
        out.append(_meta("thread_name", pid, "failures", FAILURES_TID))
    for record in poisoned:
        out.append({"ph": "i", "s": "t", "name": f"poisoned {record.name}",
                    "cat": "poisoned", "pid": device_pid(record.device_id),
                    "tid": FAILURES_TID, "ts": us(record.t_poisoned),
                    "args": _poisoned_args(record)})
    return out


def _poisoned_args(record: OpRecord) -> dict:
    return {"op": record.name, "node_id": record.node_id, "device": record.device_id,
            "poisoned_by": record.poisoned_by, "error": record.error,
            "inputs": [d["label"] for d in record.inputs],
            "outputs": [d["label"] for d in record.outputs], "deps": record.deps,
            "created_at": record.created_at}


def _failure_marker(record: OpRecord, victims: list) -> dict:
    return {"ph": "i", "s": "g", "name": f"FAILED {record.name} #{record.node_id}",
            "cat": "failure", "pid": device_pid(record.device_id), "tid": 0,
            "ts": us(_end(record, record.t_start)),
            "args": {"node_id": record.node_id, "error": record.error,
                     "created_at": record.created_at, "poisoned": victims}}


# ---- dispatchers and counters -----------------------------------------------------------

def _dispatch_slices(rec: Recording, events: list) -> list:
    tids: dict[int, int] = {}
    out = []
    for start, end, thread, kind, node_id in sorted(rec.dispatch, key=lambda d: d[0]):
        if thread not in tids:
            tids[thread] = len(tids) + 1
            events.append(_meta("thread_name", SCHEDULER_PID,
                                f"dispatcher {len(tids) - 1}", tids[thread]))
        out.append({"ph": "X", "name": kind, "cat": "dispatch", "pid": SCHEDULER_PID,
                    "tid": tids[thread], "ts": us(start), "dur": us(end - start),
                    "args": _dispatch_args(rec, node_id)})
    return out


def _host_slices(rec: Recording, events: list) -> list:
    """The host fallback's calls: a ``host`` track per calling thread."""
    if not rec.host:
        return []
    events.append(_meta("process_name", HOST_PID, "host"))
    tids: dict[int, int] = {}
    out = []
    for start, end, name, device_id, where, thread in sorted(rec.host):
        if thread not in tids:
            tids[thread] = len(tids) + 1
            label = "host" if tids[thread] == 1 else f"host {tids[thread]}"
            events.append(_meta("thread_name", HOST_PID, label, tids[thread]))
        start = max(start, 0)
        out.append({"ph": "X", "name": name, "cat": "host", "pid": HOST_PID,
                    "tid": tids[thread], "ts": us(start), "dur": us(max(end - start, 0)),
                    "args": {"function": name, "device": device_id, "created_at": where}})
    return out


def _dispatch_args(rec: Recording, node_id) -> dict:
    if node_id is None:
        return {}
    record = rec.ops.get(node_id)
    return {"node_id": node_id} if record is None else {"node_id": node_id,
                                                        "op": record.name}


def _memory_counters(rec: Recording) -> list:
    samples = {(dev, us(t)): in_use for t, dev, in_use in sorted(rec.memory)}
    return [{"ph": "C", "name": "memory in use", "pid": device_pid(dev), "tid": 0,
             "ts": ts, "args": {"bytes": in_use}} for (dev, ts), in_use in samples.items()]


def _op_counters(rec: Recording) -> list:
    created = [(max(r.t_created, 0), r) for r in rec.ops.values() if r.t_created is not None]
    in_flight = [(t, 0, 1) for t, _r in created] + [(max(t, 0), 0, 1) for t in rec.pending]
    in_flight += [(_done_at(r), 0, -1) for _t, r in created if _done_at(r) is not None]
    return _running_counters(in_flight, "ops in flight", "ops", lambda _dev: SCHEDULER_PID)


def _done_at(record: OpRecord):
    return record.t_end if record.t_end is not None else record.t_poisoned


def _running_counters(changes: list, name: str, key: str, pid_of) -> list:
    """Counter samples of a running sum of ``(t, device, delta)`` changes per device
    (one sample per device and microsecond: the last one)."""
    totals: dict[int, int] = {}
    samples: dict[tuple, int] = {}
    for t, dev, delta in sorted(changes, key=lambda c: (c[0], -c[2])):
        totals[dev] = totals.get(dev, 0) + delta
        samples[(dev, us(t))] = totals[dev]
    return [{"ph": "C", "name": name, "pid": pid_of(dev), "tid": 0, "ts": ts,
             "args": {key: n}} for (dev, ts), n in samples.items()]
