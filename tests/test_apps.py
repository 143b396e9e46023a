"""The MNIST example apps: smoke runs as subprocesses (loss falls, accuracy beats a floor;
results in the ``--json`` file, a short summary on stdout), the flags, and data-parallel
training over several devices gives the weights of one-device training.

The smoke runs need real MNIST (downloaded once, ~20 MB, then cached); without it they are
skipped. The equivalence tests use random images and need nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minerva as mv
from apps import common, mnist_cnn, mnist_cnn_2gpu, mnist_mlp, report, train

ROOT = Path(__file__).resolve().parents[1]
RUN_TIMEOUT = 90       # seconds for one app run
DATA_TIMEOUT = 150     # seconds to fetch MNIST the first time
ACC_FLOOR = {"mnist_mlp": 0.7, "mnist_cnn": 0.7, "mnist_cnn_2gpu": 0.7}
RESULT_KEYS = {"app", "devices", "epochs", "losses", "test_acc"}
EPOCH_KEYS = {"epoch", "train_loss", "val_acc", "epoch_s", "images_per_s"}


def app_env(**extra) -> dict:
    """The environment of an app subprocess: one BLAS thread, minerva importable."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    env.update(extra)
    return env


def run_app(script: str, *flags: str, env=None) -> subprocess.CompletedProcess:
    """Run ``apps/<script>`` with ``flags``; its completed process (text output)."""
    cmd = [sys.executable, str(ROOT / "apps" / script), *flags]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          env=env or app_env(), cwd=ROOT)


def read_results(path: Path) -> dict:
    """The results an app wrote with ``--json path``."""
    return json.loads(path.read_text(encoding="utf-8"))


def assert_summary_only(stdout: str) -> None:
    """The run ended with the short summary, and no JSON object was printed."""
    assert "test accuracy" in stdout and "steps/s" in stdout, stdout
    assert '"test_acc"' not in stdout and '"losses"' not in stdout, stdout
    assert not any(line.lstrip().startswith("{") for line in stdout.splitlines()), stdout


@pytest.fixture(scope="module")
def mnist_available():
    """Skip unless MNIST loads (fetching it once if need be, with a time limit)."""
    code = "from minerva.datasets import load_mnist; load_mnist()"
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=DATA_TIMEOUT, env=app_env())
    except subprocess.TimeoutExpired:
        pytest.skip("MNIST could not be fetched in time")
    if done.returncode:
        pytest.skip(f"MNIST is not available: {done.stderr.strip()[-300:]}")


# ---------------------------------------------------------------- smoke runs
@pytest.mark.parametrize("script, flags", [
    ("mnist_mlp.py", ()),
    ("mnist_cnn.py", ()),
    ("mnist_cnn_2gpu.py", ("--devices", "cpu:2")),
])
def test_smoke_run_learns(mnist_available, tmp_path, script, flags):
    plot, results = tmp_path / "curves.png", tmp_path / "results.json"
    done = run_app(script, "--smoke", "--plot", str(plot), "--json", str(results), *flags)
    assert done.returncode == 0, done.stderr[-2000:]
    result = read_results(results)
    losses = result["losses"]
    assert len(losses) >= 4 and np.isfinite(losses).all()
    assert np.mean(losses[-2:]) < 0.5 * losses[0], losses
    assert result["test_acc"] > ACC_FLOOR[result["app"]], result
    assert result["epochs"][0]["val_acc"] > ACC_FLOOR[result["app"]], result
    assert "epoch" in done.stdout and "val_acc=" in done.stdout   # the per-epoch log line
    assert len(result["devices"]) == (2 if flags else 1)
    assert plot.stat().st_size > 1000
    assert_summary_only(done.stdout)


def test_json_flag_writes_results_and_stdout_has_only_a_summary(mnist_available, tmp_path):
    path = tmp_path / "run.json"
    done = run_app("mnist_mlp.py", "--smoke", "--max-steps", "3", "--json", str(path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert_summary_only(done.stdout)
    summary = done.stdout[done.stdout.index("mnist_mlp: 1 epoch, 3 steps"):]
    for word in ("test accuracy", "train loss", "s per epoch", "devices", str(path)):
        assert word in summary, summary
    text = path.read_text(encoding="utf-8")
    assert text.startswith("{\n  ") and text.endswith("}\n")   # pretty-printed
    result = json.loads(text)
    assert set(result) == RESULT_KEYS and set(result["epochs"][0]) == EPOCH_KEYS
    assert result["app"] == "mnist_mlp" and len(result["losses"]) >= 1
    assert f"{100 * result['test_acc']:.2f}%" in summary


def test_bad_json_path_is_refused_before_training(tmp_path):
    missing = tmp_path / "no-such-folder" / "run.json"
    done = run_app("mnist_mlp.py", "--smoke", "--json", str(missing))
    assert done.returncode == 2
    assert "usage:" in done.stderr and "argument --json" in done.stderr
    assert "no-such-folder" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""   # nothing loaded, nothing trained
    assert not missing.parent.exists()


def test_missing_data_is_reported_without_traceback(tmp_path):
    empty = tmp_path / "links"
    empty.mkdir()
    env = app_env(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(empty), PIP_CONFIG_FILE=os.devnull)
    done = run_app("mnist_mlp.py", "--smoke", "--data-dir", str(tmp_path / "data"), env=env)
    assert done.returncode == 1
    assert "could not load MNIST" in done.stderr
    assert "Traceback" not in done.stderr


def test_bad_devices_flag_is_reported():
    done = run_app("mnist_cnn.py", "--smoke", "--devices", "tpu:3")
    assert done.returncode == 2
    assert "--devices" in done.stderr and "Traceback" not in done.stderr


def test_trace_flag(mnist_available, tmp_path):
    path = tmp_path / "trace.json"
    done = run_app("mnist_mlp.py", "--smoke", "--max-steps", "3", "--trace", str(path))
    try:
        report.trace_api()
    except common.AppError:
        assert done.returncode == 2 and "mv.trace" in done.stderr
        return
    assert done.returncode == 0, done.stderr[-2000:]
    assert path.stat().st_size > 0


# ---------------------------------------------------------------- flags
@pytest.mark.parametrize("text, expected", [
    ("cpu", [("cpu", None)]),
    ("cpu:2", [("cpu", None)] * 2),
    ("gpu:0,1", [("gpu", 0), ("gpu", 1)]),
    ("gpu", [("gpu", None)]),
])
def test_parse_devices(text, expected):
    assert common.parse_devices(text) == expected


@pytest.mark.parametrize("text", ["cpu:0", "cpu:1,2", "gpu:x", "tpu", "gpu:-1", ""])
def test_parse_devices_refuses(text):
    with pytest.raises(common.AppError):
        common.parse_devices(text)


def test_flag_defaults_and_smoke():
    args = common.parse_args(mnist_cnn.APP, ["--smoke", "--lr", "0.5"])
    assert (args.epochs, args.lr, args.batch_size) == (common.SMOKE_EPOCHS, 0.5, 64)
    assert common.parse_args(mnist_mlp.APP, []).epochs == mnist_mlp.APP.defaults["epochs"]


@pytest.mark.parametrize("flag", ["--json", "--plot", "--trace"])
def test_output_flags_refuse_bad_paths(tmp_path, capsys, flag):
    good = str(tmp_path / "out")
    assert getattr(common.parse_args(mnist_mlp.APP, [flag, good]), flag[2:]) == good
    for bad in (str(tmp_path / "missing" / "out"), str(tmp_path)):
        with pytest.raises(SystemExit) as exit_info:
            common.parse_args(mnist_mlp.APP, [flag, bad])
        assert exit_info.value.code == 2
        assert f"argument {flag}" in capsys.readouterr().err


def test_finish_writes_json_and_prints_a_summary(tmp_path, capsys):
    history = report.History("mnist_mlp", [mv.create_cpu_device()])
    history.add_loss(2.0, 200)
    history.add_loss(1.0, 200)
    history.end_epoch(1, 2.0, val_acc=0.5)
    history.test_acc = 0.625
    path = tmp_path / "run.json"
    args = argparse.Namespace(json=str(path), plot=None, trace="t.json", batch_size=100)
    capsys.readouterr()
    report.finish(args, history)
    out = capsys.readouterr().out
    assert read_results(path) == history.as_dict()
    assert out.splitlines() == [
        "mnist_mlp: 1 epoch, 4 steps",
        "  test accuracy  62.50%",
        "  train loss     1.5000 (last epoch; validation accuracy 50.00%)",
        "  time           2.0 s per epoch, 2.0 steps/s, 200 images/s",
        f"  devices        {common.device_names(history.devices)}",
        f"  results        {path}",
        "  trace          t.json"]


# ---------------------------------------------------------------- equivalence
def random_batches(n_steps: int, batch: int, seed: int = 7) -> list[tuple]:
    """``n_steps`` batches of random MNIST-shaped images and labels."""
    rng = np.random.default_rng(seed)
    return [(rng.random((batch, 1, 28, 28), dtype=np.float32),
             rng.integers(0, 10, batch)) for _ in range(n_steps)]


def train_steps(app, devices, batches) -> tuple[dict, list]:
    """Weights (NumPy) and losses after one SGD step per batch with ``app.train_step``."""
    mv.set_device(devices[0])
    mv.random.seed(3)
    params, opt, losses = app.init_params(), train.SGD(0.05, 0.9), []
    step = app.train_step or train.train_step
    for x, y in batches:
        params, loss = step(app, devices, params, opt, x, y)
        losses.append(loss)
    return {k: v.to_numpy(timeout=60) for k, v in params.items()}, [float(v) for v in losses]


@pytest.mark.parametrize("n_devices", [2, 3])
def test_data_parallel_matches_one_device(n_devices):
    devices = [mv.create_cpu_device() for _ in range(n_devices)]
    batches = random_batches(n_steps=4, batch=24)
    one, one_losses = train_steps(mnist_cnn.APP, devices[:1], batches)
    many, many_losses = train_steps(mnist_cnn_2gpu.APP, devices, batches)
    mv.wait_for_all(timeout=60)
    np.testing.assert_allclose(many_losses, one_losses, rtol=1e-5)
    for name in one:
        np.testing.assert_allclose(many[name], one[name], rtol=1e-5, atol=1e-7,
                                   err_msg=name)
    assert not np.allclose(one["w1"], train_steps(mnist_cnn.APP, devices[:1], [])[0]["w1"])


def test_tree_reduce_adds_in_pairs_onto_the_first_device():
    devices = [mv.create_cpu_device() for _ in range(5)]
    values = []
    for i, dev in enumerate(devices):
        with mv.device(dev):
            values.append(mv.full((3,), float(i + 1)))
    total = mnist_cnn_2gpu.tree_reduce(devices, values)
    assert total.device == devices[0]
    np.testing.assert_array_equal(total.to_numpy(timeout=30), np.full(3, 15.0, np.float32))
