"""``minerva-trace`` commands on recorded runs: a small two-device training-like script
recorded here, and the two-device MNIST app's smoke run (when MNIST is on this machine);
bad trace files reported in one line with exit status 2 by every command."""
from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import minerva as mv
from tests.support.dot_check import parse
from minerva.datasets.mnist import default_data_dir
from minerva.tracing import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
APP = os.path.join(ROOT, "apps", "mnist_cnn_2gpu.py")


def train_two_devices(steps: int = 3) -> None:
    """Data-parallel softmax regression on two CPU devices (a gradient copy per step)."""
    devices = [mv.create_cpu_device() for _ in range(2)]
    rng = np.random.default_rng(0)
    w = mv.zeros((32, 4))
    for _ in range(steps):
        grads = []
        for dev in devices:
            with mv.device(dev):
                x = mv.array(rng.standard_normal((16, 32), dtype=np.float32))
                p = mv.nn.softmax(x @ w)
                grads.append(x.T @ p)
        with mv.device(devices[0]):
            w = w - 0.1 * (grads[0] + grads[1])
    float(w.sum())


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("trace") / "train.json")
    mv.shutdown()
    mv.profiler.start(path)
    train_two_devices()
    mv.profiler.stop()
    mv.shutdown()
    return path


def run_cli(capsys, *argv) -> str:
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def test_summary(recorded, capsys):
    out = run_cli(capsys, "summary", recorded)
    assert out.startswith("train.json: recorded ")
    for expected in ("busy and idle per device and track", "top ops by total time",
                     "matmul", "copies", "1 -> 0", "memory in use", "ops in flight"):
        assert expected in out, expected


def test_critical_path(recorded, capsys):
    out = run_cli(capsys, "critical-path", recorded, "--limit", "5")
    assert out.startswith("critical path: ")
    assert "% of the active" in out and "test_trace_cli.py:" in out
    assert len([line for line in out.splitlines() if line.startswith("  #")]) <= 5


def test_dag_dot_parses(recorded, capsys, tmp_path):
    graph = parse(run_cli(capsys, "dag", recorded, "--format", "dot"))
    assert set(graph.clusters) == {"cluster_device0", "cluster_device1"}
    assert graph.edges and any(a.get("penwidth") for _s, _d, a in graph.edges)
    out = tmp_path / "dag.dot"
    run_cli(capsys, "dag", recorded, "-o", str(out))
    assert parse(out.read_text()).nodes == graph.nodes


def test_timeline_png(recorded, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "timeline.png"
    run_cli(capsys, "timeline", recorded, "--png", str(png), "--width", "6")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_failed_and_poisoned_ops_in_the_dag_and_summary(tmp_path, capsys):
    from minerva.builder import build
    from tests.tracing.test_trace import TRACE_FAIL
    path = str(tmp_path / "fail.json")
    mv.profiler.start(path)
    bad = build(TRACE_FAIL, [mv.ones(3)], dict(message="boom"))
    with pytest.raises(mv.OpError):
        (bad * 2.0).wait(timeout=30)
    mv.profiler.stop()
    graph = parse(run_cli(capsys, "dag", path))
    colors = {attrs["fillcolor"] for attrs in graph.nodes.values()}
    assert {"#f4a6a6", "#f9d7a6"} <= colors  # the failed op red, the poisoned orange
    assert "1 failed, 1 poisoned" in run_cli(capsys, "summary", path)


def test_a_missing_trace_is_reported_not_raised(tmp_path, capsys):
    assert cli.main(["summary", str(tmp_path / "none.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def _gzip_of(text: str) -> bytes:
    return gzip.compress(text.encode())


_VALID = json.dumps({"traceEvents": [
    {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "cpu0"}},
    {"ph": "X", "name": "add", "cat": "op", "pid": 2, "tid": 1, "ts": 0.0, "dur": 5.0,
     "args": {"op": "add", "node_id": 1, "device": 0, "deps": []}}]})
_OP = {"ph": "X", "name": "add", "cat": "op", "pid": 2, "tid": 1, "ts": 0, "dur": 1,
       "args": {"op": "add", "node_id": 1, "device": 0}}


def _with(event: dict, **changes) -> bytes:
    """A trace of one op slice, with fields of ``event`` (``args_x`` for args) changed."""
    event = json.loads(json.dumps(event))
    for key, value in changes.items():
        where, key = (event["args"], key[5:]) if key.startswith("args_") else (event, key)
        where[key] = value
    return json.dumps({"traceEvents": [event]}).encode()


BAD_TRACES = {  # file name -> (contents or None for no file, what the message says)
    "truncated.json.gz": (_gzip_of(_VALID)[:40], "corrupt or truncated gzip data"),
    "corrupt.json.gz": (_gzip_of(_VALID)[:20] + b"\x00" * 30 + _gzip_of(_VALID)[50:],
                        "cannot read: "),
    "plain.json.gz": (_VALID.encode(), "cannot read: Not a gzipped file"),
    "events-str.json": (b'{"traceEvents": "x"}',
                        "not a Chrome trace: 'traceEvents' must be a list of event objects"),
    "events-numbers.json": (b'{"traceEvents": [1, 2]}',
                            "'traceEvents' must be a list of event objects; "
                            "traceEvents[0] is a number 1"),
    "events-null.json": (b'{"traceEvents": [null]}', "traceEvents[0] is null"),
    "empty-object.json": (b"{}", "not a Chrome trace: no 'traceEvents' list"),
    "scalar.json": (b"3", "expected a JSON object with a 'traceEvents' list"),
    "not-json.json": (b'{"traceEvents": [', "not valid JSON"),
    "latin1.json": (b'{"traceEvents": ["\xe9"]}', "not UTF-8 text"),
    "op-dur-string.json": (_with(_OP, dur="a"), "(op slice): 'dur' must be"),
    "op-no-args.json": (json.dumps({"traceEvents": [{**_OP, "args": None}]}).encode(),
                        "'args' must be an object, got null"),
    "op-id-missing.json": (_with(_OP, args_node_id=None), "'args.node_id' must be"),
    "op-deps-nested.json": (_with(_OP, args_deps=[[1]]), "'args.deps' must be a list"),
    "op-ts-nan.json": (_with(_OP, ts=float("nan")), "'ts' must be a finite number"),
    "counter-no-args.json": (b'{"traceEvents": [{"ph": "C", "name": "ops in flight", '
                             b'"pid": 1, "tid": 0, "ts": 1}]}',
                             "(ops-in-flight counter): 'args.ops' is missing"),
    "meta-not-object.json": (b'{"traceEvents": [], "otherData": 5}',
                             "'otherData' must be an object"),
    "missing.json": (None, "cannot read: No such file or directory"),
}
COMMANDS = {"summary": [], "critical-path": [], "dag": [], "timeline": ["--png", "OUT"]}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("name", sorted(BAD_TRACES))
def test_a_bad_trace_file_is_one_line_and_exit_status_2(tmp_path, capsys, command, name):
    contents, expected = BAD_TRACES[name]
    path = tmp_path / name
    if contents is not None:
        path.write_bytes(contents)
    png = tmp_path / "out.png"
    extra = [str(png) if arg == "OUT" else arg for arg in COMMANDS[command]]
    assert cli.main([command, str(path), *extra]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith(f"minerva-trace: {path}: ") and expected in err, err
    assert not png.exists()


def test_a_directory_given_as_the_trace_is_reported(tmp_path, capsys):
    assert cli.main(["dag", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"minerva-trace: {tmp_path}: cannot read: Is a directory\n"


def test_the_installed_command_prints_no_traceback_on_a_truncated_gzip(tmp_path):
    path = tmp_path / "cut.json.gz"
    path.write_bytes(_gzip_of(_VALID)[:40])
    tool = [sys.executable, os.path.join(ROOT, "tools", "minerva_trace.py")]
    done = subprocess.run(tool + ["summary", str(path)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"minerva-trace: {path}: cannot read: ")


@pytest.mark.parametrize("text", ['{"traceEvents": []}', "[]",
                                  '{"traceEvents": [{"ph": "B", "name": 3, "ts": "x"}, '
                                  '{"ph": "X", "cat": "gc", "dur": null}]}'])
def test_empty_traces_and_unknown_events_are_fine(tmp_path, capsys, text):
    path = tmp_path / "t.json"
    path.write_text(text)
    for command in ("summary", "critical-path", "dag"):
        assert cli.main([command, str(path)]) == 0, capsys.readouterr().err
    assert capsys.readouterr().err == ""


def test_an_output_that_cannot_be_written_is_one_line(recorded, tmp_path, capsys):
    out = tmp_path / "missing" / "dag.dot"
    assert cli.main(["dag", recorded, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"minerva-trace: {out}: cannot write: No such file or directory\n"


_ODD_VALUES = [None, "x", "", -1, 0, 2**70, 1.5, -3.25, 1e300, float("nan"),
               float("inf"), True, [], [1, "a"], [[1]], {}, {"name": 1}]


def _mutate(trace: dict, rng: random.Random) -> None:
    """Change or drop one field (or an ``args`` field) of one random event."""
    event = rng.choice(trace["traceEvents"])
    target = event["args"] if "args" in event and isinstance(event["args"], dict) \
        and rng.random() < 0.6 else event
    if not target:
        return
    key = rng.choice(sorted(target))
    if rng.random() < 0.15:
        del target[key]
    else:
        target[key] = rng.choice(_ODD_VALUES)


@pytest.mark.parametrize("seed", range(6))
def test_randomly_damaged_traces_never_raise(recorded, tmp_path, capsys, seed):
    """Each command, on a real trace with random fields changed, either works or reports
    one line with status 2 — the checks at load cover what the commands read."""
    rng = random.Random(seed)
    with open(recorded, encoding="utf-8") as src:
        original = json.load(src)
    path = tmp_path / "damaged.json"
    for _ in range(25):
        trace = json.loads(json.dumps(original))
        for _ in range(rng.randint(1, 3)):
            _mutate(trace, rng)
        path.write_text(json.dumps(trace))
        for command in ("summary", "critical-path", "dag"):
            status = cli.main([command, str(path)])
            err = capsys.readouterr().err
            assert status in (0, 2) and "Traceback" not in err, (seed, command, err)
            assert status == 0 or err.count("\n") == 1, err


@pytest.mark.skipif(not os.path.exists(APP), reason="apps/mnist_cnn_2gpu.py not present")
def test_commands_on_the_two_device_app_smoke_run(tmp_path):
    if not (default_data_dir() / "mnist.npz").exists():
        pytest.skip("MNIST is not cached on this machine")
    path = str(tmp_path / "app.json")
    env = dict(os.environ, PYTHONPATH=ROOT, MINERVA_LOG="warning")
    done = subprocess.run([sys.executable, APP, "--devices", "cpu:2", "--smoke",
                           "--max-steps", "2", "--trace", path],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    tool = [sys.executable, os.path.join(ROOT, "tools", "minerva_trace.py")]
    for argv in (["summary", path], ["critical-path", path, "--limit", "3"],
                 ["dag", path, "--format", "dot"]):
        out = subprocess.run(tool + argv, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout
    summary = subprocess.run(tool + ["summary", path], capture_output=True, text=True,
                             timeout=60).stdout
    assert "conv2d" in summary and "0 -> 1" in summary
