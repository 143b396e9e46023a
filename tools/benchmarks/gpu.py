"""gpu: minerva on one GPU against raw CuPy and PyTorch eager, in one run.

1. Per-op overhead: a chain of dependent tiny ops (``x = x + 1`` on 1024 float32s) and a
   batch of independent ones, as minerva ops on a GPU device and as raw CuPy launches (the
   same dtype on both sides: ``PER_OP_DTYPE``).
2. One MNIST CNN training step, batch 256 (the model of ``apps/mnist_cnn.py``: conv 3x3 32,
   relu, max pool 2, conv 3x3 64, relu, max pool 2, dense 3136-256, relu, dense 256-10,
   softmax cross-entropy, SGD): images/s of
   - minerva on one GPU device;
   - raw CuPy: the very same kernels (minerva's op implementations called directly on CuPy
     arrays, without the runtime) — the ceiling of minerva's kernels;
   - PyTorch eager on the same GPU (cuDNN convolutions, autograd, ``torch.optim.SGD``).

The ratio minerva / PyTorch is the issue's goal (at least 0.8); minerva / raw CuPy isolates
the runtime's cost from the kernels' quality. A GPU device launches dependent kernels ahead
of their inputs' completion (doc/devices.md, "Launching ahead"); the figures also report how
the device learnt of completions (found by polling, or waited for). Raw CuPy fills CuPy's
own memory pool in the same process; minerva empties it when its own allocation fails. On a
machine without a GPU the scenario prints ``skipped: no GPU`` and returns.
"""
from __future__ import annotations

import platform
import time

import numpy as np

import minerva as mv
from benchmarks.harness import interleaved, scenario, table

BATCH = 256
CHANNELS = (1, 32, 64)
HIDDEN = 256
FLAT = CHANNELS[2] * 7 * 7
LR = 0.01
CONV = dict(stride=(1, 1), pad=(1, 1))
POOL = dict(kernel=(2, 2), stride=None, pad=(0, 0))
PER_OP_DTYPE = np.float32
PER_OP_SIZE = 1024


# ---- the training step, written once for minerva and for raw CuPy --------------------------

class MinervaKernels:
    """The NN kernels of the step as minerva ops (NArrays in and out)."""

    relu = staticmethod(mv.relu)

    @staticmethod
    def conv(x, w, b):
        return mv.nn.conv2d(x, w, b, pad=1)

    @staticmethod
    def conv_backward(dy, x, w, need_dx):
        dx = mv.nn.conv2d_backward_data(dy, w, x.shape, pad=1) if need_dx else None
        dw = mv.nn.conv2d_backward_filter(dy, x, w.shape, pad=1)
        return dx, dw, mv.nn.conv2d_backward_bias(dy)

    @staticmethod
    def relu_backward(dy, x):
        return mv.nn.relu_backward(dy, x)

    @staticmethod
    def pool(x):
        return mv.nn.max_pool2d(x, 2)

    @staticmethod
    def pool_backward(dy, x, y):
        return mv.nn.max_pool2d_backward(dy, x, y, 2)

    @staticmethod
    def loss_grad(logits, labels):
        return mv.nn.cross_entropy_backward(logits, labels, reduction="mean")


class CupyKernels:
    """The same kernels called directly: minerva's op implementations on CuPy arrays."""

    def __init__(self, cupy):
        from minerva.ops import registry
        self.cupy, self.registry = cupy, registry

    def run(self, name, *inputs, **attrs):
        op = self.registry.get(name)
        (spec,) = op.infer(*[self.registry.spec(a.shape, a.dtype) for a in inputs], **attrs)
        out = self.cupy.empty(spec.shape, spec.dtype)
        op.impl(self.cupy, *inputs, out=out, **attrs)
        return out

    def relu(self, x):
        return self.cupy.maximum(x, 0)

    def conv(self, x, w, b):
        return self.run("conv2d", x, w, b, **CONV)

    def conv_backward(self, dy, x, w, need_dx):
        dx = (self.run("conv2d_backward_data", dy, w, x_shape=x.shape, **CONV)
              if need_dx else None)
        dw = self.run("conv2d_backward_filter", dy, x, w_shape=w.shape, **CONV)
        return dx, dw, self.run("conv2d_backward_bias", dy)

    def relu_backward(self, dy, x):
        return self.run("relu_backward", dy, x)

    def pool(self, x):
        return self.run("max_pool2d", x, **POOL)

    def pool_backward(self, dy, x, y):
        return self.run("max_pool2d_backward", dy, x, y, **POOL)

    def loss_grad(self, logits, labels):
        return self.run("cross_entropy_backward", logits, labels, reduction="mean")


def train_step(k, p: dict, x, labels) -> dict:
    """One SGD step of the CNN with kernels ``k``; the new parameters."""
    n = x.shape[0]
    z1 = k.conv(x, p["w1"], p["b1"])
    a1 = k.relu(z1)
    p1 = k.pool(a1)
    z2 = k.conv(p1, p["w2"], p["b2"])
    a2 = k.relu(z2)
    p2 = k.pool(a2)
    f = p2.reshape(n, FLAT)
    z3 = f @ p["w3"] + p["b3"]
    a3 = k.relu(z3)
    dlogits = k.loss_grad(a3 @ p["w4"] + p["b4"], labels)
    g = {"w4": a3.T @ dlogits, "b4": dlogits.sum(axis=0)}
    dz3 = k.relu_backward(dlogits @ p["w4"].T, z3)
    g["w3"], g["b3"] = f.T @ dz3, dz3.sum(axis=0)
    da2 = k.pool_backward((dz3 @ p["w3"].T).reshape(p2.shape), a2, p2)
    dp1, g["w2"], g["b2"] = k.conv_backward(k.relu_backward(da2, z2), p1, p["w2"], True)
    dz1 = k.relu_backward(k.pool_backward(dp1, a1, p1), z1)
    _, g["w1"], g["b1"] = k.conv_backward(dz1, x, p["w1"], False)
    return {name: p[name] - LR * g[name] for name in p}


def host_model(rng) -> tuple[dict, np.ndarray, np.ndarray]:
    """Parameters (He-initialised), one batch of images and labels, all float32 on the host."""
    def he(shape, fan_in):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    p = {"w1": he((32, 1, 3, 3), 9), "b1": np.zeros(32, np.float32),
         "w2": he((64, 32, 3, 3), 288), "b2": np.zeros(64, np.float32),
         "w3": he((FLAT, HIDDEN), FLAT), "b3": np.zeros(HIDDEN, np.float32),
         "w4": he((HIDDEN, 10), HIDDEN), "b4": np.zeros(10, np.float32)}
    x = rng.random((BATCH, 1, 28, 28), dtype=np.float32)
    return p, x, rng.integers(0, 10, BATCH).astype(np.int64)


# ---- the three contenders ------------------------------------------------------------------

def minerva_steps(host, n_steps):
    p0, x0, y0 = host
    p = {k: mv.array(v) for k, v in p0.items()}
    x, labels = mv.array(x0), mv.array(y0)

    def run():
        nonlocal p
        for _ in range(n_steps):
            p = train_step(MinervaKernels, p, x, labels)
        mv.wait_for_all()
    return run


def cupy_steps(cupy, host, n_steps):
    p0, x0, y0 = host
    kernels = CupyKernels(cupy)
    p = {k: cupy.asarray(v) for k, v in p0.items()}
    x, labels = cupy.asarray(x0), cupy.asarray(y0)

    def run():
        nonlocal p
        for _ in range(n_steps):
            p = train_step(kernels, p, x, labels)
        cupy.cuda.runtime.deviceSynchronize()
    return run


def torch_steps(torch, host, n_steps):
    p0, x0, y0 = host
    nn, dev = torch.nn, torch.device("cuda:0")
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(FLAT, HIDDEN), nn.ReLU(),
                          nn.Linear(HIDDEN, 10)).to(dev)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    x, labels = torch.from_numpy(x0).to(dev), torch.from_numpy(y0).to(dev)

    def run():
        for _ in range(n_steps):
            optimizer.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(x), labels).backward()
            optimizer.step()
        torch.cuda.synchronize()
    return run


def per_op(cupy, n_ops: int, repeat: int) -> dict:
    """Microseconds per tiny op: dependent chain and independent batch, minerva vs CuPy,
    both on ``PER_OP_SIZE`` elements of ``PER_OP_DTYPE``."""
    def mv_chain():
        x = mv.zeros(PER_OP_SIZE, dtype=PER_OP_DTYPE)
        for _ in range(n_ops):
            x = x + 1
        x.wait()

    def mv_batch():
        base = mv.zeros(PER_OP_SIZE, dtype=PER_OP_DTYPE)
        outs = [base + i for i in range(n_ops)]
        mv.wait_for_all()
        del outs

    def cp_chain():
        x = cupy.zeros(PER_OP_SIZE, PER_OP_DTYPE)
        for _ in range(n_ops):
            x = x + 1
        cupy.cuda.runtime.deviceSynchronize()

    def cp_batch():
        base = cupy.zeros(PER_OP_SIZE, PER_OP_DTYPE)
        outs = [base + i for i in range(n_ops)]
        cupy.cuda.runtime.deviceSynchronize()
        del outs
    t = interleaved({"mv_chain": mv_chain, "cp_chain": cp_chain, "mv_batch": mv_batch,
                     "cp_batch": cp_batch}, repeat=repeat)
    return {name: seconds / n_ops * 1e6 for name, seconds in t.items()}


# ---- the scenario --------------------------------------------------------------------------

def _versions(cupy, torch) -> dict:
    runtime = cupy.cuda.runtime
    props = runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return {"gpu": name, "cupy": cupy.__version__, "cuda_runtime": runtime.runtimeGetVersion(),
            "driver": runtime.driverGetVersion(), "torch": getattr(torch, "__version__", None),
            "python": platform.python_version()}


def _import_torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


@scenario("gpu")
def run(args) -> dict:
    """The gpu scenario (see the module docstring)."""
    mv.shutdown()
    mv.init()
    if mv.get_gpu_device_count() == 0:
        print("\n== gpu\nskipped: no GPU (needs CuPy with a CUDA driver and a GPU)")
        mv.shutdown()
        return {"skipped": "no GPU"}
    import cupy
    torch = _import_torch()
    device = mv.create_gpu_device(0)
    mv.set_device(device)
    versions = _versions(cupy, torch)
    print(f"\n== gpu on {versions['gpu']} (CuPy {versions['cupy']}, torch {versions['torch']})")
    ops = per_op(cupy, 200 if args.quick else 1000, args.repeat)
    table(f"per-op cost, us/op ({PER_OP_SIZE} {np.dtype(PER_OP_DTYPE).name})",
          [("dependent chain", f"{ops['mv_chain']:.1f}", f"{ops['cp_chain']:.1f}"),
           ("independent batch", f"{ops['mv_batch']:.1f}", f"{ops['cp_batch']:.1f}")],
          ("graph", "minerva", "raw cupy"))
    steps = _cnn(cupy, torch, 3 if args.quick else 10, args.repeat)
    completions = mv.device_info(device)["completions"]
    print("  completions: " + ", ".join(f"{k} {v}" for k, v in completions.items()))
    mv.shutdown()
    return {"versions": versions, "per_op_us": ops, "images_per_s": steps,
            "ratios": _ratios(steps), "completions": completions}


def _cnn(cupy, torch, n_steps: int, repeat: int) -> dict:
    host = host_model(np.random.default_rng(0))
    contenders = {"minerva": minerva_steps(host, n_steps),
                  "raw cupy": cupy_steps(cupy, host, n_steps)}
    if torch is not None:
        contenders["pytorch eager"] = torch_steps(torch, host, n_steps)
    start = time.perf_counter()
    seconds = interleaved(contenders, repeat=repeat, warmup=1)
    rate = {name: n_steps * BATCH / s for name, s in seconds.items()}
    rows = [(name, f"{r:,.0f}", f"{seconds[name] / n_steps * 1e3:.2f}") for name, r in rate.items()]
    table(f"MNIST CNN training step, batch {BATCH} ({time.perf_counter() - start:.0f} s)",
          rows, ("system", "images/s", "ms/step"))
    ratios = _ratios(rate)
    print("  " + "  ".join(f"{k} = {v:.2f}" for k, v in ratios.items()))
    return rate


def _ratios(rate: dict) -> dict:
    out = {"minerva/raw_cupy": rate["minerva"] / rate["raw cupy"]}
    if "pytorch eager" in rate:
        out["minerva/pytorch"] = rate["minerva"] / rate["pytorch eager"]
    return out
