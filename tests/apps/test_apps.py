"""The MNIST example apps: smoke runs as subprocesses, with autograd (the default) and with
``--manual-backward`` side by side (loss falls, accuracy beats a floor; results in the
``--json`` file, a short summary on stdout), the flags, and equivalences: the recorded and
the hand-written backward pass give the same steps, data-parallel training over several
devices gives the weights of one-device training, and parameters are updated in place.

The smoke runs need real MNIST (downloaded once, ~20 MB, then cached); without it they are
skipped. The equivalence tests use random images and need nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import minerva as mv
from apps import common, mnist_cnn, mnist_cnn_2gpu, mnist_mlp, report, train
from minerva import optim

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT = 90       # seconds for one app run
PAIR_TIMEOUT = 180     # seconds for two app runs side by side (a busy machine halves speed)
DATA_TIMEOUT = 150     # seconds to fetch MNIST the first time
ACC_FLOOR = {"mnist_mlp": 0.7, "mnist_cnn": 0.7, "mnist_cnn_2gpu": 0.7}
RESULT_KEYS = {"app", "devices", "backward", "optimizer", "jit", "epochs", "losses", "test_acc"}
EPOCH_KEYS = {"epoch", "train_loss", "val_acc", "epoch_s", "images_per_s"}


def app_env(**extra) -> dict:
    """The environment of an app subprocess: one BLAS thread, minerva importable."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    env.update(extra)
    return env


def app_command(script: str, *flags: str) -> list[str]:
    """The command line that runs ``apps/<script>`` with ``flags``."""
    return [sys.executable, str(ROOT / "apps" / script), *flags]


def run_app(script: str, *flags: str, env=None) -> subprocess.CompletedProcess:
    """Run ``apps/<script>`` with ``flags``; its completed process (text output)."""
    return subprocess.run(app_command(script, *flags), capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, env=env or app_env(), cwd=ROOT)


def run_apps_at_once(commands: list[list[str]]) -> list[subprocess.CompletedProcess]:
    """Run several app command lines side by side (CI has more than one core), within
    PAIR_TIMEOUT seconds in all; their completed processes, in order."""
    running = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=app_env(), cwd=ROOT) for cmd in commands]
    done, deadline = [], time.monotonic() + PAIR_TIMEOUT
    try:
        for cmd, proc in zip(commands, running):
            out, err = proc.communicate(timeout=max(deadline - time.monotonic(), 1))
            done.append(subprocess.CompletedProcess(cmd, proc.returncode, out, err))
    finally:
        for proc in running:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return done


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
def assert_learned(done, result: dict, n_devices: int) -> None:
    """A smoke run's results: loss halved, accuracy above the floor, the log line."""
    losses = result["losses"]
    assert len(losses) >= 4 and np.isfinite(losses).all()
    assert np.mean(losses[-2:]) < 0.5 * losses[0], losses
    assert result["test_acc"] > ACC_FLOOR[result["app"]], result
    assert result["epochs"][0]["val_acc"] > ACC_FLOOR[result["app"]], result
    assert "epoch" in done.stdout and "val_acc=" in done.stdout   # the per-epoch log line
    assert len(result["devices"]) == n_devices
    assert_summary_only(done.stdout)


@pytest.mark.timeout(PAIR_TIMEOUT + 30)
@pytest.mark.parametrize("script, flags", [
    ("mnist_mlp.py", ()),
    ("mnist_cnn.py", ()),
    ("mnist_cnn_2gpu.py", ("--devices", "cpu:2")),
])
def test_smoke_run_learns_with_autograd_and_by_hand(mnist_available, tmp_path, script,
                                                    flags):
    plot = tmp_path / "curves.png"
    results = {mode: tmp_path / f"{mode}.json" for mode in ("autograd", "manual")}
    commands = [app_command(script, "--smoke", "--json", str(results["autograd"]),
                            "--plot", str(plot), *flags),
                app_command(script, "--smoke", "--json", str(results["manual"]),
                            "--manual-backward", "--no-jit", *flags)]
    runs = dict(zip(results, run_apps_at_once(commands)))
    for mode, done in runs.items():
        assert done.returncode == 0, (mode, done.stderr[-2000:])
        result = read_results(results[mode])
        assert (result["backward"], result["optimizer"]) == (mode, "sgd")
        assert result["jit"] is (mode == "autograd")      # jitted unless --no-jit
        assert f"sgd, {mode} backward" in done.stdout
        assert_learned(done, result, 2 if flags else 1)
    by_mode = {mode: read_results(path) for mode, path in results.items()}
    assert by_mode["autograd"]["test_acc"] == pytest.approx(by_mode["manual"]["test_acc"],
                                                            abs=0.02)
    assert plot.stat().st_size > 1000


def test_adam_smoke_run_learns(mnist_available, tmp_path):
    path = tmp_path / "adam.json"
    done = run_app("mnist_mlp.py", "--smoke", "--optimizer", "adam", "--json", str(path))
    assert done.returncode == 0, done.stderr[-2000:]
    result = read_results(path)
    assert (result["backward"], result["optimizer"]) == ("autograd", "adam")
    assert_learned(done, result, 1)


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
        assert done.returncode == 2 and "mv.profiler" in done.stderr
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
    assert (args.optimizer, args.manual_backward) == ("sgd", False)
    args = common.parse_args(mnist_mlp.APP, [])
    assert (args.epochs, args.lr) == (20, mnist_mlp.APP.defaults["lr"])


def test_optimizer_flags():
    args = common.parse_args(mnist_cnn.APP, ["--optimizer", "adam", "--manual-backward"])
    assert (args.optimizer, args.lr, args.manual_backward) == ("adam", common.ADAM_LR, True)
    params = train.attach_grads({"w": mv.ones(3)})
    opt = train.make_optimizer(args, params)
    assert isinstance(opt, optim.Adam) and opt.lr == common.ADAM_LR
    args = common.parse_args(mnist_cnn.APP, ["--momentum", "0.5", "--lr", "0.1"])
    opt = train.make_optimizer(args, params)
    assert isinstance(opt, optim.SGD) and (opt.lr, opt.momentum) == (0.1, 0.5)
    with pytest.raises(SystemExit):
        common.parse_args(mnist_cnn.APP, ["--optimizer", "rmsprop"])


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
    history = report.History("mnist_mlp", [mv.create_cpu_device()],
                             settings=dict(backward="autograd", optimizer="sgd"))
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
        "  training       sgd, autograd backward",
        f"  devices        {common.device_names(history.devices)}",
        f"  results        {path}",
        "  trace          t.json"]


# ---------------------------------------------------------------- equivalence
def random_batches(n_steps: int, batch: int, seed: int = 7) -> list[tuple]:
    """``n_steps`` batches of random MNIST-shaped images and labels."""
    rng = np.random.default_rng(seed)
    return [(rng.random((batch, 1, 28, 28), dtype=np.float32),
             rng.integers(0, 10, batch)) for _ in range(n_steps)]


def train_steps(app, devices, batches, manual=False, make_opt=None,
                jit=False) -> tuple[dict, list]:
    """Weights (NumPy) and losses after one step per batch with the app's step (SGD with
    momentum unless ``make_opt(params)`` says otherwise; replayed by ``mv.jit`` with
    ``jit``)."""
    mv.set_device(devices[0])
    mv.random.seed(3)
    params = train.attach_grads(app.init_params())
    opt = make_opt(params) if make_opt else optim.SGD(params, lr=0.05, momentum=0.9)
    step = (app.make_step or train.Step)(app, devices, params, opt, manual, jit=jit)
    losses = [step(x, y) for x, y in batches]
    if jit:
        assert step.jitted.stats()["n_replays"] == len(batches) - 2   # eager, record, replays
    return {k: v.to_numpy(timeout=60) for k, v in params.items()}, [float(v) for v in losses]


def assert_same_training(got: tuple, want: tuple, rtol=1e-4, atol=1e-6) -> None:
    """Same losses and weights, up to float32 rounding."""
    np.testing.assert_allclose(got[1], want[1], rtol=rtol)
    for name in want[0]:
        np.testing.assert_allclose(got[0][name], want[0][name], rtol=rtol, atol=atol,
                                   err_msg=name)


@pytest.mark.parametrize("app", [mnist_mlp.APP, mnist_cnn.APP], ids=lambda a: a.name)
def test_autograd_steps_match_the_hand_written_backward(app):
    devices = [mv.create_cpu_device()]
    batches = random_batches(n_steps=3, batch=16)
    if app is mnist_mlp.APP:
        batches = [(x.reshape(len(x), -1), y) for x, y in batches]
    auto = train_steps(app, devices, batches)
    manual = train_steps(app, devices, batches, manual=True)
    assert all(w.dtype == np.float32 for w in auto[0].values())
    assert_same_training(auto, manual)


@pytest.mark.parametrize("app, n_devices", [(mnist_mlp.APP, 1), (mnist_cnn.APP, 1),
                                            (mnist_cnn_2gpu.APP, 2)], ids=str)
def test_jitted_steps_are_bitwise_the_eager_steps(app, n_devices):
    devices = [mv.create_cpu_device() for _ in range(n_devices)]
    batches = random_batches(n_steps=5, batch=32)
    if app is mnist_mlp.APP:
        batches = [(x.reshape(len(x), -1), y) for x, y in batches]
    jitted = train_steps(app, devices, batches, jit=True)
    eager = train_steps(app, devices, batches)
    assert jitted[1] == eager[1]
    for name, value in eager[0].items():
        np.testing.assert_array_equal(jitted[0][name], value, err_msg=name)


def test_adam_steps_are_not_jitted():
    params = train.attach_grads(mnist_mlp.APP.init_params())
    step = train.Step(mnist_mlp.APP, [mv.create_cpu_device()], params,
                      optim.Adam(params, lr=1e-3), jit=True)
    assert step.jitted is None     # its bias correction changes every step


@pytest.mark.parametrize("n_devices", [2, 3])
def test_data_parallel_matches_one_device(n_devices):
    devices = [mv.create_cpu_device() for _ in range(n_devices)]
    batches = random_batches(n_steps=4, batch=24)
    one = train_steps(mnist_cnn.APP, devices[:1], batches)
    many = train_steps(mnist_cnn_2gpu.APP, devices, batches)
    by_hand = train_steps(mnist_cnn_2gpu.APP, devices, batches, manual=True)
    mv.wait_for_all(timeout=60)
    assert_same_training(many, one)
    assert_same_training(by_hand, one)
    assert not np.allclose(one[0]["w1"], train_steps(mnist_cnn.APP, devices[:1], [])[0]["w1"])


def test_data_parallel_adam_matches_one_device():
    devices = [mv.create_cpu_device() for _ in range(2)]
    batches = random_batches(n_steps=3, batch=16)
    adam = lambda params: optim.Adam(params, lr=1e-3)  # noqa: E731
    assert_same_training(train_steps(mnist_cnn_2gpu.APP, devices, batches, make_opt=adam),
                         train_steps(mnist_cnn.APP, devices[:1], batches, make_opt=adam),
                         rtol=1e-3, atol=1e-5)


def test_data_parallel_updates_parameters_in_place():
    devices = [mv.create_cpu_device() for _ in range(2)]
    mv.set_device(devices[0])
    params = train.attach_grads(mnist_cnn.init_params())
    handles = {name: (p, p._storage, p.grad) for name, p in params.items()}
    step = mnist_cnn_2gpu.DataParallelStep(mnist_cnn_2gpu.APP, devices, params,
                                           optim.SGD(params, lr=0.05, momentum=0.9))
    for x, y in random_batches(n_steps=3, batch=8):
        step(x, y)
    mv.wait_for_all(timeout=60)
    for name, p in params.items():
        assert all(a is b for a, b in zip((p, p._storage, p.grad), handles[name])), name
    assert all(p.device == devices[0] for p in params.values())
    assert all(g.device == devices[1] for g in step.replica_grads[devices[1]].values())
    assert all(p._storage.current.version >= 3 for p in params.values())


def test_tree_reduce_adds_in_pairs_onto_the_first_device():
    devices = [mv.create_cpu_device() for _ in range(5)]
    values = []
    for i, dev in enumerate(devices):
        with mv.device(dev):
            values.append(mv.full((3,), float(i + 1)))
    total = mnist_cnn_2gpu.tree_reduce(devices, values)
    assert total.device == devices[0]
    np.testing.assert_array_equal(total.to_numpy(timeout=30), np.full(3, 15.0))
    np.testing.assert_array_equal(values[0].to_numpy(timeout=30), np.full(3, 1.0))
    first = values[0]
    total = mnist_cnn_2gpu.tree_reduce(devices, values, in_place=True)
    assert total is first and first.device == devices[0]
    np.testing.assert_array_equal(first.to_numpy(timeout=30), np.full(3, 15.0))
    np.testing.assert_array_equal(values[2].to_numpy(timeout=30), np.full(3, 7.0))
