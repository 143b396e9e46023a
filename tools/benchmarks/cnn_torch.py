"""cnn-torch: the CNN app's training step on CPU devices against PyTorch eager on CPU threads.

The model is ``apps/mnist_cnn.py``'s (conv 3x3 32, conv 3x3 64, dense 3136-256, dense
256-10, ReLU and 2x2 max pooling), float32, summed cross-entropy over the batch size, SGD
with momentum 0.9. Systems, each run in turns with the others (median of ``--repeat``
runs; a run is ``n_steps`` steps issued back to back, then one wait):

- ``mv-1dev``: the app's step (``apps/train.py``'s ``Step`` with the hand-written backward
  pass of ``apps/layers.py``, ``--manual-backward``; ``mv.optim.SGD`` in place) on one CPU
  device with as many threads as cores (the default sharing; set explicitly, as the
  harness makes one thread the default of the other scenarios);
- ``mv-1dev-1thr``: the same on ``mv.create_cpu_device(threads=1)``;
- ``mv-1dev-jit``: the apps' default step on the ``mv-1dev`` device: autograd, replayed by
  ``mv.jit`` (two warm-up steps: one eager, one recorded);
- ``mv-2dev``: ``apps/mnist_cnn_2gpu.py``'s ``DataParallelStep`` (hand-written backward)
  over two CPU devices, half the batch each, the cores shared (one thread each on 2 cores);
- ``torch-1thr`` / ``torch-Nthr``: the same network in PyTorch eager with
  ``torch.optim.SGD``, ``torch.set_num_threads(1)`` and all cores.

Each minerva system gets a runtime of its own for each run (thread counts are set per
runtime), started and warmed up (one step) before the clock starts. PyTorch is a
benchmark extra (``pip install .[bench]``), never a runtime dependency; without it the
scenario reports minerva alone. One step of ``mv-1dev`` and of PyTorch from the same
weights must give the same weights, else the comparison is void.

Goals: ``mv-1dev`` and ``mv-2dev`` at or under ``torch-Nthr`` (all cores in use on both
sides), batch 64 and 128; ``mv-1dev`` at least 1.6x faster than ``mv-1dev-1thr`` at
batch 128.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

import minerva as mv
from benchmarks.harness import scenario, table
from minerva.device.cpu.blas import usable_cores

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
from apps import mnist_cnn, mnist_cnn_2gpu, train  # noqa: E402
from minerva import optim  # noqa: E402

LR, MOMENTUM = 0.01, 0.9
GOALS = {"vs_torch": 1.0, "threads_speedup": 1.6}
BATCHES = (64, 128)


def batches(batch: int, n: int, seed: int = 0) -> list:
    """``n`` random float32 MNIST-shaped batches of images and labels."""
    rng = np.random.default_rng(seed)
    return [(rng.random((batch,) + mnist_cnn.APP.image_shape, dtype=np.float32),
             rng.integers(0, 10, batch)) for _ in range(n)]


def initial_weights() -> dict:
    """The app's seed-0 weights, as NumPy arrays (from a throwaway runtime)."""
    mv.shutdown()
    mv.init()
    with mv.device(mv.create_cpu_device()):
        mv.random.seed(0)
        weights = {k: v.to_numpy() for k, v in mnist_cnn.APP.init_params().items()}
    mv.shutdown()
    return weights


# ---------------------------------------------------------------- minerva
class MinervaSystem:
    """The app's step on ``n_devices`` CPU devices (``threads``: each device's BLAS
    threads, None for the default sharing), in a runtime of its own per run."""

    def __init__(self, weights: dict, n_devices: int = 1, threads: int | None = None,
                 jit: bool = False):
        self.weights, self.n_devices, self.threads = weights, n_devices, threads
        self.jit = jit   # the apps' default: autograd, jitted (else hand-written, eager)
        self.step = None

    def start(self, warmup) -> None:
        """A fresh runtime, devices, parameters and optimizer; one warm-up step."""
        mv.shutdown()
        mv.init()
        devices = [mv.create_cpu_device(self.threads) for _ in range(self.n_devices)]
        with mv.device(devices[0]):
            params = train.attach_grads({k: mv.array(v) for k, v in self.weights.items()})
        opt = optim.SGD(params, lr=LR, momentum=MOMENTUM)
        make = train.Step if self.n_devices == 1 else mnist_cnn_2gpu.DataParallelStep
        self.step = make(mnist_cnn.APP, devices, params, opt, manual=not self.jit,
                         jit=self.jit)
        for _ in range(2 if self.jit else 1):
            self.step(*warmup)
        mv.wait_for_all()

    def run(self, data: list) -> None:
        """The steps, issued back to back, then one wait."""
        for x, y in data:
            self.step(x, y)
        mv.wait_for_all()

    def stop(self) -> None:
        """Shut the runtime down."""
        self.step = None
        mv.shutdown()

    def weights_after(self, data: list) -> dict:
        """The weights after ``data``'s steps from the initial weights."""
        self.start(data[0])
        params = {k: v.to_numpy() for k, v in self.step.params.items()}
        self.stop()
        return params


# ---------------------------------------------------------------- PyTorch
def torch_model(torch, weights: dict):
    """The app's network in PyTorch, with ``weights`` (minerva's layout) copied in."""
    nn = torch.nn
    c, k, pad = mnist_cnn.CHANNELS, mnist_cnn.KERNEL, mnist_cnn.PAD
    model = nn.Sequential(
        nn.Conv2d(c[0], c[1], k, padding=pad), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c[1], c[2], k, padding=pad), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(mnist_cnn.FLAT, mnist_cnn.HIDDEN), nn.ReLU(),
        nn.Linear(mnist_cnn.HIDDEN, 10))
    layers = (model[0], model[3], model[7], model[9])
    with torch.no_grad():
        for i, layer in enumerate(layers, 1):
            w = weights[f"w{i}"]
            layer.weight.copy_(torch.from_numpy(w if w.ndim == 4 else w.T.copy()))
            layer.bias.copy_(torch.from_numpy(weights[f"b{i}"]))
    return model, layers


class TorchSystem:
    """PyTorch eager on ``threads`` intra-op threads."""

    def __init__(self, torch, weights: dict, threads: int):
        self.torch, self.weights, self.threads = torch, weights, threads
        self.model = self.layers = self.opt = None

    def start(self, warmup) -> None:
        """Set the threads, build the model and optimizer; one warm-up step."""
        self.torch.set_num_threads(self.threads)
        self.model, self.layers = torch_model(self.torch, self.weights)
        self.opt = self.torch.optim.SGD(self.model.parameters(), lr=LR, momentum=MOMENTUM)
        self._step(*warmup)

    def _step(self, x, y) -> None:
        torch = self.torch
        self.opt.zero_grad()
        logits = self.model(torch.from_numpy(x))
        loss = torch.nn.functional.cross_entropy(logits, torch.from_numpy(y),
                                                 reduction="sum") / len(y)
        loss.backward()
        self.opt.step()

    def run(self, data: list) -> None:
        """The steps (PyTorch eager: each returns when done)."""
        for x, y in data:
            self._step(x, y)

    def stop(self) -> None:
        """Nothing to release."""

    def weights_after(self, data: list) -> dict:
        """The weights after ``data``'s first step, in minerva's layout."""
        self.start(data[0])
        out = {}
        for i, layer in enumerate(self.layers, 1):
            w = layer.weight.detach().numpy()
            out[f"w{i}"], out[f"b{i}"] = (w if w.ndim == 4 else w.T), layer.bias.detach().numpy()
        return out


def load_torch():
    """PyTorch, or None when it is not installed."""
    try:
        import torch
    except ImportError:
        return None
    return torch


# ---------------------------------------------------------------- measuring
def systems_for(weights: dict, torch) -> dict:
    """Every system, by name."""
    cores = usable_cores()
    systems = {"mv-1dev": MinervaSystem(weights, threads=cores),
               "mv-1dev-1thr": MinervaSystem(weights, threads=1),
               "mv-1dev-jit": MinervaSystem(weights, threads=cores, jit=True),
               "mv-2dev": MinervaSystem(weights, n_devices=2, threads=max(1, cores // 2))}
    if torch is not None:
        systems["torch-1thr"] = TorchSystem(torch, weights, 1)
        systems[f"torch-{cores}thr"] = TorchSystem(torch, weights, cores)
    return systems


def check_same_step(systems: dict, data: list) -> None:
    """One step of minerva and of PyTorch from the same weights gives the same weights."""
    torch_names = [n for n in systems if n.startswith("torch")]
    if not torch_names:
        return
    want = systems[torch_names[0]].weights_after(data)
    got = systems["mv-1dev"].weights_after(data)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=2e-3, atol=2e-5, err_msg=name)


def timed_rounds(systems: dict, data: list, repeat: int) -> dict:
    """Wall seconds of each system's runs: ``repeat`` rounds, each running every system
    once (order rotated per round), each run started and warmed up off the clock."""
    names = list(systems)
    seconds: dict = {name: [] for name in names}
    for i in range(repeat):
        for name in names[i % len(names):] + names[:i % len(names)]:
            system = systems[name]
            system.start(data[0])
            start = time.perf_counter()
            system.run(data)
            seconds[name].append(time.perf_counter() - start)
            system.stop()
    return seconds


def ratios_of(ms: dict) -> dict:
    """The goal ratios of one batch size (minerva over PyTorch on all cores; the default
    device's speed-up over a one-thread device)."""
    out = {"threads_speedup": ms["mv-1dev-1thr"] / ms["mv-1dev"]}
    all_cores = [n for n in ms if n.startswith("torch") and n != "torch-1thr"]
    if all_cores:
        for name in ("mv-1dev", "mv-2dev", "mv-1dev-jit", "mv-1dev-1thr"):
            out[f"{name}_over_torch"] = ms[name] / ms[all_cores[0]]
        out["mv-1dev-1thr_over_torch-1thr"] = ms["mv-1dev-1thr"] / ms["torch-1thr"]
    return out


def report(batch: int, n_steps: int, ms: dict, ratios: dict) -> None:
    """The table and the verdicts of one batch size."""
    rows = [(name, f"{value:.2f}") for name, value in ms.items()]
    table(f"cnn-torch: batch {batch}, {n_steps} steps per run", rows, ("system", "ms/step"))
    for name, value in ratios.items():
        goal = ""
        if name in ("mv-1dev_over_torch", "mv-2dev_over_torch", "mv-1dev-jit_over_torch"):
            goal = f" (goal <= {GOALS['vs_torch']}x: {'met' if value <= 1 else 'MISSED'})"
        elif name == "threads_speedup" and batch == 128:
            met = value >= GOALS["threads_speedup"]
            goal = f" (goal >= {GOALS['threads_speedup']}x: {'met' if met else 'MISSED'})"
        print(f"  {name} {value:.3f}x{goal}")


@scenario("cnn-torch")
def cnn_torch(args) -> dict:
    """The CNN app's step on 1 and 2 CPU devices vs PyTorch eager on 1 thread and all cores."""
    torch = load_torch()
    n_steps = 3 if args.quick else 10
    weights = initial_weights()
    load_before = os.getloadavg()
    result = {"cores": usable_cores(), "torch": None if torch is None else torch.__version__}
    for batch in BATCHES:
        data = batches(batch, n_steps)
        systems = systems_for(weights, torch)
        check_same_step(systems, data)
        seconds = timed_rounds(systems, data, args.repeat)
        ms = {name: statistics.median(v) / n_steps * 1e3 for name, v in seconds.items()}
        ratios = ratios_of(ms)
        report(batch, n_steps, ms, ratios)
        result[f"batch{batch}"] = {"ms_per_step": ms, "seconds": seconds, "ratios": ratios}
    result["load_average"] = {"before": load_before, "after": os.getloadavg()}
    print(f"  load average (1, 5, 15 min) before {load_before}, after {os.getloadavg()}; "
          f"{usable_cores()} cores")
    result["ratios"] = {f"{name}[batch{b}]": value for b in BATCHES
                        for name, value in result[f"batch{b}"]["ratios"].items()}
    return result
