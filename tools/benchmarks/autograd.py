"""autograd: the apps' recorded training step against their hand-written step.

Both sides are ``apps/train.py``'s ``Step`` on one CPU device, over the same model code,
kernels, data and initial weights, with the same optimizer (``mv.optim.SGD``, momentum 0.9,
in place): the default step records the forward pass and runs ``loss.backward()``; the
``--manual-backward`` step runs the hand-written backward pass of ``apps/layers.py``. Both
write the gradients into each parameter's ``.grad``. Models: the MLP app (784-512-512-10,
batch 100) and the CNN app (batch 64), float32, BLAS on one thread.

- step time: each timed run is ``n_steps`` steps issued back to back, then one wait; the
  two sides run in turns in one runtime (median over ``--repeat`` runs; goal: autograd
  <= 1.05x the hand-written step). The fastest run of each side is shown too: on a
  machine that other jobs share, the best of several runs moves far less than the median;
- peak memory: ``mv.memory_stats()["peak_bytes"]`` of a fresh runtime per side after
  warm-up steps and ``n_steps`` more, each waited for (goal: <= 1.2x). The step's working
  set (peak minus the bytes in use before the measured steps: parameters, gradients,
  velocities) is shown too.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

import minerva as mv
from benchmarks.harness import interleaved, scenario, table

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
from apps import mnist_cnn, mnist_mlp, train  # noqa: E402
from minerva import optim  # noqa: E402

GOALS = {"time": 1.05, "peak": 1.2}
SIDES = {"hand-written": True, "autograd": False}   # name -> manual
MIB = float(1 << 20)
N_WARMUP = 2


def batches(image_shape, batch: int, n: int, seed: int = 0) -> list:
    """``n`` random float32 batches of images and labels."""
    rng = np.random.default_rng(seed)
    return [(rng.random((batch,) + image_shape, dtype=np.float32),
             rng.integers(0, 10, batch)) for _ in range(n)]


def make_step(app, device: int, manual: bool) -> train.Step:
    """The app's step on ``device`` from seed-0 weights, with SGD (momentum 0.9)."""
    with mv.device(device):
        mv.random.seed(0)
        params = train.attach_grads(app.init_params())
    opt = optim.SGD(params, lr=0.01, momentum=0.9)
    return train.Step(app, [device], params, opt, manual)


def timed_run(step: train.Step, data: list, seconds: list):
    """A run of steps issued back to back, then one wait; appends its seconds to
    ``seconds``."""
    def run():
        start = time.perf_counter()
        for x, y in data:
            step(x, y)
        mv.wait_for_all()
        seconds.append(time.perf_counter() - start)
    return run


def check_same_step(app, device: int, data: list) -> None:
    """One step each way must give the same weights (else the comparison is void)."""
    steps = {name: make_step(app, device, manual) for name, manual in SIDES.items()}
    for step in steps.values():
        step(*data[0])
    want, got = steps["hand-written"].params, steps["autograd"].params
    for name in want:
        np.testing.assert_allclose(got[name].to_numpy(), want[name].to_numpy(),
                                   rtol=1e-4, atol=1e-6, err_msg=name)


def step_seconds(app, data: list, repeat: int) -> tuple[dict, dict]:
    """Median and least seconds of a run of ``data``'s steps, per side, in one
    runtime."""
    mv.shutdown()
    mv.init()
    device = mv.create_cpu_device()
    check_same_step(app, device, data)
    samples = {name: [] for name in SIDES}
    runs = {name: timed_run(make_step(app, device, manual), data, samples[name])
            for name, manual in SIDES.items()}
    seconds = interleaved(runs, repeat=repeat)
    mv.shutdown()
    return seconds, {name: min(values) for name, values in samples.items()}


def peak_bytes(app, data: list, manual: bool) -> dict:
    """Peak and in-use bytes of one side, in a fresh runtime."""
    mv.shutdown()
    mv.init()
    step = make_step(app, mv.create_cpu_device(), manual)
    for x, y in data[:N_WARMUP]:
        step(x, y)
        mv.wait_for_all()
    before = mv.memory_stats()["in_use_bytes"]
    for x, y in data:
        step(x, y)
        mv.wait_for_all()
    stats = mv.memory_stats()
    mv.shutdown()
    return {"peak": stats["peak_bytes"], "in_use_before": before,
            "working_set": stats["peak_bytes"] - before}


def compare(label: str, app, batch: int, n_steps: int, args) -> dict:
    """Both figures for one model; printed as a table and ratios."""
    data = batches(app.image_shape, batch, n_steps)
    with threadpool_limits(1, user_api="blas"):
        seconds, fastest = step_seconds(app, data, args.repeat)
        memory = {name: peak_bytes(app, data, manual) for name, manual in SIDES.items()}
    ms = {name: s / n_steps * 1e3 for name, s in seconds.items()}
    best = {name: s / n_steps * 1e3 for name, s in fastest.items()}
    rows = [(name, f"{ms[name]:.2f}", f"{best[name]:.2f}",
             f"{memory[name]['peak'] / MIB:.2f}", f"{memory[name]['working_set'] / MIB:.2f}")
            for name in SIDES]
    table(f"autograd {label}: batch {batch}, {n_steps} steps per run", rows,
          ("step", "ms/step", "best ms/step", "peak MiB", "working set MiB"))
    ratios = {"time": ms["autograd"] / ms["hand-written"],
              "best_time": best["autograd"] / best["hand-written"],
              "peak": memory["autograd"]["peak"] / memory["hand-written"]["peak"],
              "working_set": (memory["autograd"]["working_set"]
                              / memory["hand-written"]["working_set"])}
    print(f"  autograd/hand-written: step time {ratios['time']:.3f}x (goal <= "
          f"{GOALS['time']}x; best runs {ratios['best_time']:.3f}x), peak memory "
          f"{ratios['peak']:.3f}x (goal <= {GOALS['peak']}x), working set "
          f"{ratios['working_set']:.3f}x")
    return {"ms_per_step": ms, "best_ms_per_step": best, "memory_bytes": memory,
            "ratios": ratios}


@scenario("autograd")
def autograd_steps(args) -> dict:
    """Recorded MLP and CNN steps vs their hand-written steps: time and peak memory."""
    quick = args.quick
    result = {"mlp": compare("mlp", mnist_mlp.APP, 100, 10 if quick else 40, args),
              "cnn": compare("cnn", mnist_cnn.APP, 64, 3 if quick else 10, args)}
    result["ratios"] = {f"{model}_{name}": value for model in ("mlp", "cnn")
                        for name, value in result[model]["ratios"].items()}
    return result
