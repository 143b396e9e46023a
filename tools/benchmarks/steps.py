"""mlp-step, cnn-step, data-parallel: training steps of the MNIST apps' models.

- ``mlp-step`` / ``cnn-step``: one CPU device against the same model code and the same
  kernels called eagerly with NumPy (``benchmarks.eager``), BLAS on one thread in both
  (goal: minerva <= 1.05x the NumPy time);
- ``data-parallel``: the CNN step of ``apps/mnist_cnn_2gpu.py`` on 2 CPU devices against
  the CNN step on 1 device, both minerva (goal: >= 1.6x).

Data are random images of MNIST's shape; each timed run is ``n_steps`` SGD steps issued
back to back, then one wait.
"""
from __future__ import annotations

import os
import sys

import numpy as np
from threadpoolctl import threadpool_limits

import minerva as mv
from benchmarks.eager import eager_numpy
from benchmarks.harness import interleaved, scenario, table

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
from apps import mnist_cnn, mnist_cnn_2gpu, mnist_mlp  # noqa: E402
from apps.train import SGD, train_step  # noqa: E402

GOALS = {"mlp-step": 1.05, "cnn-step": 1.05, "data-parallel": 1.6}


def batches(image_shape, batch: int, n: int, seed: int = 0) -> list:
    """``n`` random batches of images and labels."""
    rng = np.random.default_rng(seed)
    return [(rng.random((batch,) + image_shape, dtype=np.float32),
             rng.integers(0, 10, batch)) for _ in range(n)]


def minerva_steps(app, devices, data, step=train_step):
    """A run of SGD steps of ``app`` on ``devices`` (fresh parameters each run)."""
    with mv.device(devices[0]):
        mv.random.seed(0)
        start = app.init_params()

    def run():
        params, opt = start, SGD(0.01)
        for x, y in data:
            with mv.device(devices[0]):
                params, _ = step(app, devices, params, opt, x, y)
        mv.wait_for_all()
    return run


def numpy_steps(app, params_host: dict, data):
    """The same steps computed eagerly with NumPy and the same kernels."""
    def run():
        params, opt = dict(params_host), SGD(0.01)
        with eager_numpy(), threadpool_limits(1, user_api="blas"):
            for x, y in data:
                _, grads = app.loss_and_grads(params, x, y, len(y))
                params = opt.step(params, grads)
    return run


def check_same_step(app, devices, host: dict, data) -> None:
    """One step both ways must give the same parameters (else the comparison is void)."""
    with mv.device(devices[0]):
        params = {k: mv.array(v) for k, v in host.items()}
        got, _ = train_step(app, devices, params, SGD(0.01), *data[0])
    want = dict(host)
    with eager_numpy():
        _, grads = app.loss_and_grads(want, *data[0], len(data[0][1]))
        want = SGD(0.01).step(want, grads)
    for name, value in want.items():
        np.testing.assert_allclose(got[name].to_numpy(), value, rtol=1e-4, atol=1e-6)


def _compare_to_numpy(name, app, batch, n_steps, args) -> dict:
    mv.shutdown()
    mv.init()
    devices = [mv.create_cpu_device()]
    data = batches(app.image_shape, batch, n_steps)
    with mv.device(devices[0]):
        mv.random.seed(0)
        host = {k: v.to_numpy() for k, v in app.init_params().items()}
    check_same_step(app, devices, host, data)
    seconds = interleaved({"numpy-eager": numpy_steps(app, host, data),
                           "minerva-1-cpu": minerva_steps(app, devices, data)},
                          repeat=args.repeat)
    mv.shutdown()
    ratio = seconds["minerva-1-cpu"] / seconds["numpy-eager"]
    _report(name, batch, n_steps, seconds, f"minerva/numpy {ratio:.3f}x", GOALS[name], "<=")
    return {"ms_per_step": {k: v / n_steps * 1e3 for k, v in seconds.items()},
            "ratios": {"minerva_over_numpy": ratio}}


def _report(name, batch, n_steps, seconds, summary, goal, sense):
    rows = [(k, f"{v / n_steps * 1e3:.2f}") for k, v in seconds.items()]
    table(f"{name}: batch {batch}, {n_steps} steps per run", rows, ("system", "ms/step"))
    print(f"  {summary} (goal {sense} {goal}x)")


@scenario("mlp-step")
def mlp_step(args) -> dict:
    """The MLP app's step (784-512-512-10, batch 100) vs eager NumPy."""
    return _compare_to_numpy("mlp-step", mnist_mlp.APP, 100, 10 if args.quick else 40, args)


@scenario("cnn-step")
def cnn_step(args) -> dict:
    """The CNN app's step (batch 64) vs eager NumPy."""
    return _compare_to_numpy("cnn-step", mnist_cnn.APP, 64, 3 if args.quick else 10, args)


@scenario("data-parallel")
def data_parallel(args) -> dict:
    """The CNN step on 2 CPU devices (batch split in two) vs 1 device, batch 128 and 64."""
    result = {}
    for batch in (128, 64):
        n_steps = 3 if args.quick else 10
        mv.shutdown()
        mv.init()
        devices = [mv.create_cpu_device() for _ in range(2)]
        data = batches(mnist_cnn.APP.image_shape, batch, n_steps)
        seconds = interleaved(
            {"minerva-1-cpu": minerva_steps(mnist_cnn.APP, devices[:1], data),
             "minerva-2-cpu": minerva_steps(mnist_cnn_2gpu.APP, devices, data,
                                            mnist_cnn_2gpu.train_step)},
            repeat=args.repeat)
        mv.shutdown()
        speedup = seconds["minerva-1-cpu"] / seconds["minerva-2-cpu"]
        _report("data-parallel", batch, n_steps, seconds, f"speedup {speedup:.2f}x",
                GOALS["data-parallel"], ">=")
        result[f"batch{batch}"] = {"seconds": seconds, "speedup": speedup}
    result["ratios"] = {"speedup_batch128": result["batch128"]["speedup"],
                        "speedup_batch64": result["batch64"]["speedup"]}
    return result
