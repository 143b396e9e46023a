"""``minerva-trace`` commands on recorded runs: a small two-device training-like script
recorded here, and the two-device MNIST app's smoke run (when MNIST is on this machine)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import minerva as mv
from dot_check import parse
from minerva.datasets.mnist import default_data_dir
from minerva.trace import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
    mv.trace.start(path)
    train_two_devices()
    mv.trace.stop()
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
    from minerva.narray import apply_op
    from test_trace import TRACE_FAIL
    path = str(tmp_path / "fail.json")
    mv.trace.start(path)
    bad = apply_op(TRACE_FAIL, [mv.ones(3)], message="boom")
    with pytest.raises(mv.OpError):
        (bad * 2.0).wait(timeout=30)
    mv.trace.stop()
    graph = parse(run_cli(capsys, "dag", path))
    colors = {attrs["fillcolor"] for attrs in graph.nodes.values()}
    assert {"#f4a6a6", "#f9d7a6"} <= colors  # the failed op red, the poisoned orange
    assert "1 failed, 1 poisoned" in run_cli(capsys, "summary", path)


def test_a_missing_trace_is_reported_not_raised(tmp_path, capsys):
    assert cli.main(["summary", str(tmp_path / "none.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


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
