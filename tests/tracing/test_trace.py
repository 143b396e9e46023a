"""mv.profiler: recording through the hook bus, the Chrome trace it writes (structure,
args, flows, counters, failures), MINERVA_TRACE, and a hand-built DAG whose critical path
and busy fractions are known exactly."""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import minerva as mv
import minerva.tracing as tracing
from minerva.builder import build
from minerva.ops import registry
from minerva.tracing import chrome, recorder
from minerva.tracing.convert import convert
from tests.support.trace_checks import check_chrome_trace, op_slices

HERE = os.path.basename(__file__)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _fail_infer(x, *, message):
    return (x,)


def _fail_impl(xp, x, *, out, message):
    raise RuntimeError(message)


TRACE_FAIL = registry.register("trace_test_fail", _fail_infer, _fail_impl)
_gate, _entered = threading.Event(), threading.Event()


def _hold_impl(xp, x, *, out, message):
    _entered.set()
    assert _gate.wait(30), "the test never opened the gate"
    out[...] = x


TRACE_HOLD = registry.register("trace_test_hold", _fail_infer, _hold_impl)


def two_device_program():
    """A few ops on two CPU devices with a copy between them; the result handle."""
    d0, d1 = mv.create_cpu_device(), mv.create_cpu_device()
    with mv.device(d0):
        a = mv.ones((8, 8))
        b = a @ a
    with mv.device(d1):
        c = (b * 2.0).sum()
    return c


def load(path) -> dict:
    with open(path, encoding="utf-8") as src:
        return json.load(src)


@pytest.mark.parametrize("engine", ["dag", "naive"])
def test_trace_of_two_devices_is_a_valid_chrome_trace(tmp_path, engine):
    mv.init(engine=engine)
    path = tmp_path / "run.json"
    mv.profiler.start(str(path))
    c = two_device_program()
    assert float(c) == 8.0 * 8 * 8 * 2
    assert mv.profiler.stop() == str(path)
    trace = load(path)
    check_chrome_trace(trace)
    ops = op_slices(trace)
    assert [e["args"]["op"] for e in ops] == ["fill", "matmul", "copy", "multiply_scalar",
                                              "sum"]
    for event in ops:
        args = event["args"]
        assert args["created_at"].startswith(HERE + ":")
        assert set(args) >= {"op", "node_id", "device", "inputs", "outputs", "deps", "bytes"}
    matmul, copy = ops[1], ops[2]
    assert matmul["args"]["outputs"][0].endswith("float64[8, 8] @0")
    assert matmul["args"]["deps"] == [ops[0]["args"]["node_id"]] * 2
    assert copy["cat"] == "copy" and copy["name"] == "copy 0\u21921"
    assert copy["args"]["bytes"] == 8 * 8 * 8 and copy["args"]["from_device"] == 0
    assert matmul["pid"] != copy["pid"], "one process per device"


def test_flows_link_each_producer_to_its_consumers(tmp_path):
    mv.init()
    mv.profiler.start(str(tmp_path / "t.json"))
    two_device_program().wait()
    trace = load(mv.profiler.stop())
    by_id = {e["args"]["node_id"]: e for e in op_slices(trace)}
    starts = {e["id"]: e for e in trace["traceEvents"] if e["ph"] == "s"}
    ends = {e["id"]: e for e in trace["traceEvents"] if e["ph"] == "f"}
    edges = set()
    for flow_id, start in starts.items():
        src = next(op for op in by_id.values()
                   if (op["pid"], op["tid"], op["ts"]) == (start["pid"], start["tid"],
                                                           start["ts"]))
        dst = next(op for op in by_id.values()
                   if (op["pid"], op["tid"], op["ts"]) == (ends[flow_id]["pid"],
                                                           ends[flow_id]["tid"],
                                                           ends[flow_id]["ts"]))
        edges.add((src["args"]["node_id"], dst["args"]["node_id"]))
    expected = {(dep, node_id) for node_id, op in by_id.items()
                for dep in op["args"]["deps"] if dep is not None}
    assert edges == expected and len(edges) == 4


def test_memory_counters_follow_the_pool(tmp_path):
    mv.init()
    mv.profiler.start(str(tmp_path / "t.json"))
    dev = mv.create_cpu_device()
    with mv.device(dev):
        x = mv.zeros((256,))
        y = x + 1.0
        y.wait()
        in_use = mv.memory_stats(dev)["in_use_bytes"]
    trace = load(mv.profiler.stop())
    memory = [e for e in trace["traceEvents"]
              if e["ph"] == "C" and e["name"] == "memory in use"]
    assert memory and max(e["args"]["bytes"] for e in memory) >= 2 * 256 * 4
    assert memory[-1]["args"]["bytes"] == in_use
    flight = [e for e in trace["traceEvents"]
              if e["ph"] == "C" and e["name"] == "ops in flight"]
    assert flight and flight[-1]["args"]["ops"] == 0


def test_memory_counters_hold_while_tiny_ops_hand_blocks_over(tmp_path):
    mv.init()
    dev = mv.create_cpu_device()
    mv.profiler.start(str(tmp_path / "t.json"))
    with mv.device(dev):
        x = mv.zeros(4)
        for _ in range(20):           # each dead value's block goes to the next output
            x = x + 1.0
        assert x.to_numpy().tolist() == [20.0] * 4
        stats = mv.memory_stats(dev)
    trace = load(mv.profiler.stop())
    memory = [e["args"]["bytes"] for e in trace["traceEvents"]
              if e["ph"] == "C" and e["name"] == "memory in use"]
    assert stats["n_allocs"] - stats["n_frees"] == 1
    assert memory[-1] == stats["in_use_bytes"] and max(memory) <= 2 * stats["in_use_bytes"]
    adds = [e for e in op_slices(trace) if e["args"]["op"] == "add_scalar"]
    assert len(adds) == 20 and all(e["args"]["created_at"].startswith(HERE + ":")
                                   for e in adds)


def test_a_failed_op_is_marked_with_its_error_and_the_ops_it_poisoned(tmp_path):
    mv.init()
    mv.profiler.start(str(tmp_path / "t.json"))
    x = mv.ones(4)
    bad = build(TRACE_FAIL, [x], dict(message="boom"))
    worse = (bad + 1.0) * 2.0
    fine = x + 1.0
    with pytest.raises(mv.OpError):
        worse.wait(timeout=30)
    fine.wait(timeout=30)
    trace = load(mv.profiler.stop())
    check_chrome_trace(trace)
    failed = [e for e in op_slices(trace) if "error" in e["args"]]
    assert len(failed) == 1
    args = failed[0]["args"]
    assert args["op"] == "trace_test_fail" and "RuntimeError: boom" in args["error"]
    poisoned = [e for e in trace["traceEvents"] if e.get("cat") == "poisoned"]
    assert sorted(e["args"]["op"] for e in poisoned) == ["add_scalar", "multiply_scalar"]
    assert sorted(args["poisoned"]) == sorted(e["args"]["node_id"] for e in poisoned)
    assert all(e["args"]["poisoned_by"] == args["node_id"] for e in poisoned)
    assert any(e["ph"] == "i" and e["name"].startswith("FAILED trace_test_fail")
               for e in trace["traceEvents"])


def test_an_op_running_at_the_stop_is_shown_unfinished_and_its_consumer_in_flight(tmp_path):
    _gate.clear()
    _entered.clear()
    mv.init()
    mv.profiler.start(str(tmp_path / "t.json"))
    x = mv.ones(4)
    x.wait(timeout=30)
    held = build(TRACE_HOLD, [x], dict(message=""))
    after = held + 1.0
    try:
        assert _entered.wait(30)
        trace = load(mv.profiler.stop())
    finally:
        _gate.set()
    after.wait(timeout=30)
    check_chrome_trace(trace)
    last = op_slices(trace)[-1]
    assert last["args"]["op"] == "trace_test_hold" and last["args"]["unfinished"] is True
    flight = [e for e in trace["traceEvents"] if e.get("name") == "ops in flight"]
    assert flight[-1]["args"]["ops"] == 2


def test_start_twice_is_an_error_and_stop_without_start_does_nothing(tmp_path):
    assert mv.profiler.stop() is None
    mv.profiler.start(str(tmp_path / "a.json"))
    with pytest.raises(mv.MinervaError, match="already being recorded"):
        mv.profiler.start(str(tmp_path / "b.json"))
    assert mv.profiler.stop() == str(tmp_path / "a.json")
    assert mv.profiler.stop() is None


def test_shutdown_writes_the_trace_after_the_last_op(tmp_path):
    path = tmp_path / "t.json.gz"
    mv.profiler.start(str(path))
    x = mv.ones(16) * 3.0
    del x
    mv.shutdown(timeout=30)
    import gzip
    with gzip.open(path, "rt") as src:
        trace = json.load(src)
    check_chrome_trace(trace)
    assert [e["args"]["op"] for e in op_slices(trace)] == ["fill", "multiply_scalar"]


def test_minerva_trace_env_var_records_the_whole_run(tmp_path):
    path = tmp_path / "env.json"
    script = ("import minerva as mv\n"
              "x = mv.arange(10) * 2\n"
              "print(int(x.sum()))\n")
    env = dict(os.environ, MINERVA_TRACE=str(path), PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "90"
    trace = load(path)
    check_chrome_trace(trace)
    assert [e["args"]["op"] for e in op_slices(trace)] == ["arange", "multiply_scalar", "sum"]


def test_recorded_events_hold_nothing_the_collector_tracks(tmp_path):
    """The overhead design: flat tuples of ints, strings and dtypes (see recorder)."""
    mv.init()
    mv.profiler.start(str(tmp_path / "t.json"))
    x = mv.ones((4, 4))
    y = (x @ x).sum(axis=0)
    y.wait()
    recorder = mv.system.get_system().tracer._recorder
    mv.profiler.stop()  # no event is recorded after this (a dispatcher may still be busy)
    events = recorder.snapshot()   # the C path's records (untracked) made tuples here
    gc.collect()   # which a pass untracks, as it does the Python path's, when they are flat
    assert events and not any(gc.is_tracked(event) for event in events)


def test_a_full_recorder_keeps_the_latest_events_and_says_so(tmp_path):
    mv.profiler.start(str(tmp_path / "t.json"), max_events=6)
    x = mv.zeros(4)
    for _ in range(10):
        x = x + 1.0
    assert float(x.sum()) == 40.0
    trace = load(mv.profiler.stop())
    check_chrome_trace(trace)
    assert trace["otherData"]["minerva"]["truncated"] is True
    assert op_slices(trace)[-1]["args"]["op"] == "sum"


def test_convert_keeps_ops_that_started_before_the_recording():
    rec = recorder.Recorder()
    t = rec.t_start
    rec.events.append((recorder.FINISHED, 7, "add", 0, "cpu0", t - 50, None, t + 100, None,
                       "x.py", 3, 1, 5, 8, 2, 1, np.dtype("float32"), 1, 4))
    rec.close()
    recording = convert(rec.snapshot(), rec.t_start, rec.t_stop)
    (op,) = recording.ops.values()
    assert (op.t_start, op.t_end, op.created_at) == (0, 100, "x.py:3")
    assert op.inputs == [{"id": 5, "label": "#5"}] and op.outputs[0]["nbytes"] == 16
    assert op.outputs[0]["version"] == "2@1" and "(2@1)" in op.outputs[0]["label"]
    trace = chrome.build(recording, {0: "cpu0"})
    check_chrome_trace(trace)


# ---- a trace path is checked at start; a failed write leaves the runtime consistent -----

def _bad_trace_paths(tmp_path) -> dict:
    """Paths no trace can be written to, by what is wrong with them."""
    a_file = tmp_path / "a_file.txt"
    a_file.write_text("")
    return {"missing directory": tmp_path / "nonexistent" / "dir" / "t.json",
            "a directory": tmp_path,
            "parent is a file": a_file / "t.json",
            "empty": ""}


@pytest.mark.parametrize("case", ["missing directory", "a directory", "parent is a file",
                                  "empty"])
def test_check_trace_path_refuses_a_path_it_cannot_write(tmp_path, case):
    path = _bad_trace_paths(tmp_path)[case]
    with pytest.raises(ValueError) as info:
        mv.profiler.check_trace_path(path)
    assert isinstance(info.value, mv.profiler.TracePathError)
    assert isinstance(info.value, mv.MinervaError)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("case", ["missing directory", "a directory", "parent is a file"])
def test_start_refuses_a_bad_path_at_once_and_records_nothing(tmp_path, case):
    path = str(_bad_trace_paths(tmp_path)[case])
    with pytest.raises(mv.profiler.TracePathError, match="cannot write a trace to"):
        mv.profiler.start(path)
    assert mv.system.running() is None, "a refused start starts no runtime"
    mv.init()
    system = mv.system.get_system()
    with pytest.raises(ValueError) as info:
        mv.profiler.start(path)
    assert repr(path) in str(info.value)
    with pytest.raises(ValueError):
        tracing.start_system_trace(system, path)
    assert system.tracer is None and not system.hooks.active
    assert mv.profiler.stop() is None
    assert float(mv.ones(3).sum()) == 3.0


def test_check_trace_path_accepts_writable_paths(tmp_path, monkeypatch):
    existing = tmp_path / "old.json"
    existing.write_text("{}")
    assert mv.profiler.check_trace_path(tmp_path / "t.json.gz") == str(tmp_path / "t.json.gz")
    assert mv.profiler.check_trace_path(str(existing)) == str(existing)
    monkeypatch.chdir(tmp_path)
    assert mv.profiler.check_trace_path("here.json") == "here.json"
    assert not (tmp_path / "here.json").exists(), "checking creates nothing"
    with pytest.raises(TypeError):
        mv.profiler.check_trace_path(None)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root may write anywhere")
def test_check_trace_path_refuses_a_read_only_directory(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(mv.profiler.TracePathError, match="not writable"):
            mv.profiler.check_trace_path(locked / "t.json")
    finally:
        locked.chmod(0o700)


class _Events:
    """Stands in for the trace module's structlog logger; keeps (level, event, fields)."""

    def __init__(self):
        self.seen = []

    def __getattr__(self, level):
        return lambda event, **fields: self.seen.append((level, event, fields))


def test_a_failed_write_is_logged_and_raised_after_the_trace_is_detached(tmp_path,
                                                                         monkeypatch):
    import shutil
    events = _Events()
    monkeypatch.setattr(tracing, "log", events)
    target = tmp_path / "gone"
    target.mkdir()
    path = str(target / "t.json")
    mv.profiler.start(path)
    system = mv.system.get_system()
    listener = system.tracer._recorder
    (mv.ones(4) * 2.0).wait(timeout=30)
    shutil.rmtree(target)  # the directory goes away while the trace records
    with pytest.raises(OSError):
        mv.profiler.stop()
    assert system.tracer is None and not system.hooks.active
    assert listener.t_stop is not None, "the recorder was closed"
    failed = [f for level, event, f in events.seen if event == "trace_write_failed"]
    assert [level for level, event, _f in events.seen
            if event == "trace_write_failed"] == ["error"]
    assert failed[0]["path"] == path and "FileNotFoundError" in failed[0]["error"]
    assert mv.profiler.stop() is None
    again = str(tmp_path / "again.json")
    mv.profiler.start(again)
    assert float(mv.ones(2).sum()) == 2.0
    assert mv.profiler.stop() == again and os.path.exists(again)


@pytest.mark.parametrize("engine", ["dag", "naive"])
def test_tiny_ops_are_traced_on_the_caller_track_without_op_nodes(tmp_path, engine):
    mv.init(engine=engine)
    dev = mv.create_cpu_device()
    mv.profiler.start(str(tmp_path / "t.json"))
    with mv.device(dev):
        x = mv.zeros(4)
        for _ in range(5):
            x = x + 1.0               # tiny: run at once by the calling thread
        assert x.to_numpy().tolist() == [5.0] * 4
    trace = load(mv.profiler.stop())
    check_chrome_trace(trace)
    adds = [e for e in op_slices(trace) if e["args"]["op"] == "add_scalar"]
    assert len(adds) == 5
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
              if e["ph"] == "M" and e["name"] == "thread_name"}
    assert all(tracks[e["pid"], e["tid"]].endswith(":caller") for e in adds), tracks
    for previous, event in zip(adds, adds[1:]):
        assert event["args"]["deps"] == [previous["args"]["node_id"]]
        assert event["args"]["created_at"].startswith(HERE + ":")


def test_a_jit_replay_shows_its_steps_inside_its_slice(tmp_path):
    mv.init()
    mv.set_device(mv.create_cpu_device())
    w = mv.ones((4, 4))

    @mv.jit
    def step(x):
        y = x @ w
        return mv.relu(y) + 1.0
    line = step.__wrapped__.__code__.co_firstlineno
    x = mv.ones((2, 4))
    for _ in range(2):                       # record, then replay once untraced
        step(x).wait()
    mv.profiler.start(str(tmp_path / "t.json"))
    assert step(x).to_numpy().tolist() == [[5.0] * 4] * 2
    trace = load(mv.profiler.stop())
    check_chrome_trace(trace)
    replay = next(e for e in op_slices(trace) if e["args"]["op"] == "jit_replay")
    steps = [e for e in trace["traceEvents"] if e.get("cat") == "jit-step"]
    assert [e["name"] for e in steps] == ["matmul", "relu", "add_scalar"]
    assert [e["args"]["created_at"] for e in steps] == [
        f"{HERE}:{line + 2}", f"{HERE}:{line + 3}", f"{HERE}:{line + 3}"]
    for e in steps:
        assert (e["pid"], e["tid"]) == (replay["pid"], replay["tid"])
        assert replay["ts"] <= e["ts"] and e["ts"] + e["dur"] <= replay["ts"] + replay["dur"]
        assert e["args"]["replay"] == replay["args"]["node_id"]


def test_a_dispatcher_task_begun_before_the_recording_starts_at_its_start():
    """A RELEASE task waits its grace period before it runs: one that began before
    ``profiler.start`` is recorded from the recording's start (no negative time)."""
    from minerva.tracing.recorder import DISPATCH, Recorder
    recorder = Recorder()
    recorder.dispatch("RELEASE", None, recorder.t_start - 10**6, recorder.t_start + 10)
    (event,) = recorder.events
    assert event[0] == DISPATCH and event[3] == recorder.t_start and event[4] > event[3]
