"""conv: conv2d forward + backward (data, filter, bias) on one CPU device.

Four systems run the same step side by side, in turns (median of ``--repeat`` runs):

- ``numpy``: the registered minerva kernels (``impl(numpy, ..., out=preallocated)``) called
  directly in a loop: the CPU kernels (``nn_conv_cpu``) where they fit, with no runtime;
- ``generic``: the same with ``nn_conv.CPU_KERNELS`` off: the generic im2col kernels that a
  GPU runs, on NumPy (what the CPU kernels gain);
- ``minerva``: ``mv.nn`` on one CPU device (dag engine), ops issued asynchronously and
  waited for once per run;
- ``torch``: PyTorch CPU (``conv2d`` + ``aten.convolution_backward``), when installed.

Each layer runs on one thread and on all cores: BLAS (OpenBLAS, process-wide) limited to
that many threads with threadpoolctl, the minerva device created with
``create_cpu_device(threads=N)``, ``torch.set_num_threads(N)``. Scheduler overhead is
``minerva / numpy - 1`` (goal under 5%); ``numpy/torch`` compares the kernels with
PyTorch's (oneDNN).

Layers: the two 3x3 convolutions of the CNN app (``apps/mnist_cnn.py``), pad 1: ``1->32``
on 28x28 and ``32->64`` on the pooled 14x14 map (the first layer's input gradient is never
needed, but is timed all the same); a mid-size one, ``64->64`` 3x3 on 32x32, pad 1. Batch 64
and 128.
"""
from __future__ import annotations

import os
import statistics
import time
from typing import NamedTuple

import numpy as np
from threadpoolctl import threadpool_limits

import minerva as mv
from benchmarks.harness import scenario, table
from minerva.device.cpu.blas import usable_cores
from minerva.ops import registry
from minerva.ops.nn import conv as nn_conv

GOAL = 0.05
OPS = ("conv2d", "conv2d_backward_data", "conv2d_backward_filter", "conv2d_backward_bias")


class Layer(NamedTuple):
    """One convolution layer: ``x (batch, c_in, size, size)``, ``w (c_out, c_in, k, k)``."""

    name: str
    batch: int
    c_in: int
    c_out: int
    size: int
    kernel: int
    pad: int

    def shapes(self) -> dict:
        """Shapes of x, w, b and dy (stride 1)."""
        out = self.size + 2 * self.pad - self.kernel + 1
        return {"x": (self.batch, self.c_in, self.size, self.size),
                "w": (self.c_out, self.c_in, self.kernel, self.kernel),
                "b": (self.c_out,), "dy": (self.batch, self.c_out, out, out)}


SHAPES = (("cnn-conv1 1->32 3x3 28x28", 1, 32, 28),
          ("cnn-conv2 32->64 3x3 14x14", 32, 64, 14),
          ("mid 64->64 3x3 32x32", 64, 64, 32))
LAYERS = tuple(Layer(name, batch, c_in, c_out, size, 3, 1)
               for batch in (64, 128) for name, c_in, c_out, size in SHAPES)


def quick(layer: Layer) -> Layer:
    """The layer at a quarter of its batch, for ``--quick``."""
    return layer._replace(batch=max(1, layer.batch // 4))


def generic(call):
    """``call`` with the generic kernels (``nn_conv.CPU_KERNELS`` off while it runs)."""
    def run():
        nn_conv.CPU_KERNELS = False
        try:
            return call()
        finally:
            nn_conv.CPU_KERNELS = True
    return run


def host_inputs(layer: Layer, seed: int = 0) -> dict:
    """Random float32 x, w, b and dy for ``layer``."""
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal(s, dtype=np.float32) for k, s in layer.shapes().items()}


# ---------------------------------------------------------------- the three systems
def numpy_calls(layer: Layer, a: dict) -> tuple[dict, dict]:
    """Per op, a no-argument call of its registered kernel on NumPy into a fixed buffer;
    and the buffers, by result name (y, dx, dw, db)."""
    geo = dict(stride=(1, 1), pad=(layer.pad, layer.pad))
    impl = {name: registry.get(name).impl for name in OPS}
    out = {k: np.empty(a[src].shape, np.float32)
           for k, src in (("y", "dy"), ("dx", "x"), ("dw", "w"), ("db", "b"))}
    return out, {
        "conv2d": lambda: impl["conv2d"](np, a["x"], a["w"], a["b"], out=out["y"], **geo),
        "conv2d_backward_data": lambda: impl["conv2d_backward_data"](
            np, a["dy"], a["w"], out=out["dx"], x_shape=a["x"].shape, **geo),
        "conv2d_backward_filter": lambda: impl["conv2d_backward_filter"](
            np, a["dy"], a["x"], out=out["dw"], w_shape=a["w"].shape, **geo),
        "conv2d_backward_bias": lambda: impl["conv2d_backward_bias"](np, a["dy"], out=out["db"]),
    }


def numpy_step(calls: dict):
    """One forward + backward step of plain kernel calls."""
    def step():
        for name in OPS:
            calls[name]()
    return step


def minerva_step(layer: Layer, a: dict):
    """One forward + backward step through ``mv.nn``; returns the four result handles."""
    x, w, b, dy = (mv.array(a[k]) for k in ("x", "w", "b", "dy"))
    pad = layer.pad

    def step():
        return (mv.nn.conv2d(x, w, b, pad=pad),
                mv.nn.conv2d_backward_data(dy, w, x.shape, pad=pad),
                mv.nn.conv2d_backward_filter(dy, x, w.shape, pad=pad),
                mv.nn.conv2d_backward_bias(dy))
    return step


def torch_calls(layer: Layer, a: dict, threads: int):
    """Per op, a PyTorch CPU call on ``threads`` threads (``None`` without torch)."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    x, w, b, dy = (torch.from_numpy(a[k]) for k in ("x", "w", "b", "dy"))
    conv = torch.nn.functional.conv2d
    pad = layer.pad

    def backward(mask):
        return torch.ops.aten.convolution_backward(
            dy, x, w, [w.shape[0]], [1, 1], [pad, pad], [1, 1], False, [0, 0], 1, mask)
    return {"conv2d": lambda: conv(x, w, b, padding=pad),
            "conv2d_backward_data": lambda: backward([True, False, False]),
            "conv2d_backward_filter": lambda: backward([False, True, False]),
            "conv2d_backward_bias": lambda: dy.sum((0, 2, 3)),
            "step": lambda: (conv(x, w, b, padding=pad), backward([True, True, True]))}


def repeated(step, n: int, wait=None):
    """``step`` ``n`` times, then ``wait()`` (minerva: block once, at the end)."""
    def run():
        for _ in range(n):
            result = step()
        if wait is not None:
            wait()
        return result
    return run


# ---------------------------------------------------------------- measuring
def paired_samples(functions: dict, repeat: int, warmup: int = 1) -> tuple[dict, dict]:
    """Wall and process-CPU seconds of each named function over ``repeat`` rounds; each
    round runs them all back to back (order rotated per round), so a round's figures share
    the machine's state."""
    for function in functions.values():
        for _ in range(warmup):
            function()
    names = list(functions)
    wall, cpu = ({name: [] for name in names} for _ in range(2))
    for i in range(repeat):
        for name in names[i % len(names):] + names[:i % len(names)]:
            start, start_cpu = time.perf_counter(), time.process_time()
            functions[name]()
            cpu[name].append(time.process_time() - start_cpu)
            wall[name].append(time.perf_counter() - start)
    return wall, cpu


def overhead(samples: dict) -> float:
    """Median over rounds of ``minerva / numpy - 1``: paired, so machine noise that hits a
    whole round cancels."""
    return statistics.median(m / n - 1 for m, n in zip(samples["minerva"], samples["numpy"]))


def check_same(minerva_out, calls: dict, out: dict) -> None:
    """minerva's results equal the kernel calls' (float32 sums of up to 10^5 terms, in
    another order for the generic kernels: equal up to rounding of the largest value)."""
    for name in OPS:
        calls[name]()
    for got, key in zip(minerva_out, ("y", "dx", "dw", "db")):
        want = out[key]
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-4,
                                   atol=1e-5 * max(1.0, float(np.abs(want).max())), err_msg=key)


def per_op_ms(calls: dict, repeat: int) -> dict:
    """Median milliseconds of each op call."""
    result = {}
    for name in OPS:
        calls[name]()
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            calls[name]()
            times.append(time.perf_counter() - start)
        result[name] = statistics.median(times) * 1e3
    return result


def measure_layer(layer: Layer, steps: int, repeat: int, threads: int) -> dict:
    """Step times (ms per step) of each system, and per-op times of the kernels (CPU and
    generic) and of torch, on ``threads`` threads."""
    a = host_inputs(layer)
    (out, calls), torch_ops = numpy_calls(layer, a), torch_calls(layer, a, threads)
    generic_calls = {name: generic(call) for name, call in calls.items()}
    step = minerva_step(layer, a)
    check_same(step(), calls, out)
    check_same(step(), generic_calls, out)
    systems = {"numpy": repeated(numpy_step(calls), steps),
               "generic": repeated(numpy_step(generic_calls), steps),
               "minerva": repeated(step, steps, mv.wait_for_all)}
    if torch_ops is not None:
        systems["torch"] = repeated(torch_ops["step"], steps)
    wall, cpu = paired_samples(systems, repeat)
    ops = {"numpy": per_op_ms(calls, repeat), "generic": per_op_ms(generic_calls, repeat)}
    if torch_ops is not None:
        ops["torch"] = per_op_ms(torch_ops, repeat)
    return {"ms_per_step": {k: statistics.median(v) / steps * 1e3 for k, v in wall.items()},
            "overhead": overhead(wall), "cpu_overhead": overhead(cpu), "ops_ms": ops}


# ---------------------------------------------------------------- reporting
def _ratio(a, b) -> str:
    return "-" if a is None or b is None else f"{a / b:.2f}x"


def _ms(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def step_rows(results: dict) -> list[tuple]:
    """One row per layer and thread count: ms per step of each system and the ratios."""
    rows = []
    for (name, threads), r in results.items():
        ms = r["ms_per_step"]
        rows.append((name, threads, _ms(ms["generic"]), _ms(ms["numpy"]), _ms(ms["minerva"]),
                     _ms(ms.get("torch")), f"{r['overhead'] * 100:+.1f}%",
                     _ratio(ms["numpy"], ms["generic"]), _ratio(ms["numpy"], ms.get("torch"))))
    return rows


def op_rows(results: dict) -> list[tuple]:
    """One row per layer, thread count and op: milliseconds of the CPU and generic kernels
    and of torch."""
    rows = []
    for (name, threads), r in results.items():
        ops = r["ops_ms"]
        for op in OPS:
            np_ms, t_ms = ops["numpy"][op], ops.get("torch", {}).get(op)
            rows.append((name, threads, op, _ms(ops["generic"][op]), _ms(np_ms), _ms(t_ms),
                         _ratio(np_ms, ops["generic"][op]), _ratio(np_ms, t_ms)))
    return rows


def ratios(results: dict) -> dict:
    """Scheduler overhead, numpy/generic and numpy/torch time per layer and thread count,
    for the JSON output."""
    out = {}
    for (name, threads), r in results.items():
        ms, key = r["ms_per_step"], f"{name} t{threads}"
        out[f"overhead[{key}]"] = r["overhead"]
        out[f"cpu_overhead[{key}]"] = r["cpu_overhead"]
        out[f"numpy_over_generic[{key}]"] = ms["numpy"] / ms["generic"]
        if "torch" in ms:
            out[f"numpy_over_torch[{key}]"] = ms["numpy"] / ms["torch"]
    return out


def measure_threads(layers: list, steps: int, repeat: int, threads: int) -> dict:
    """Every layer on ``threads`` threads: BLAS limited, the device created with as many."""
    mv.shutdown()
    with threadpool_limits(limits=threads, user_api="blas"):
        mv.init(engine="dag")
        mv.set_device(mv.create_cpu_device(threads=threads))
        results = {(f"{layer.name} b{layer.batch}", threads):
                   measure_layer(layer, steps, repeat, threads) for layer in layers}
        mv.shutdown()
    return results


@scenario("conv")
def conv(args) -> dict:
    """conv2d forward + backward: minerva vs its kernels called directly vs PyTorch."""
    layers = [quick(layer) for layer in LAYERS] if args.quick else list(LAYERS)
    steps = 2 if args.quick else 3
    results = {}
    for threads in sorted({1, usable_cores()}):
        results.update(measure_threads(layers, steps, args.repeat, threads))
    print(f"\nconv: BLAS, the minerva device and torch on 1 thread and on all "
          f"{usable_cores()} cores; {steps} steps per run, median of {args.repeat} runs; "
          f"load average {os.getloadavg()}")
    table("conv: ms per forward+backward step (conv2d, backward data, filter, bias)",
          step_rows(results), ("layer", "threads", "generic", "numpy", "minerva", "torch",
                               "overhead", "numpy/generic", "numpy/torch"))
    table("conv: ms per op (numpy = minerva's kernels called directly; generic = the "
          "GPU's kernels on NumPy)", op_rows(results),
          ("layer", "threads", "op", "generic", "numpy", "torch", "numpy/generic",
           "numpy/torch"))
    worst = max(r["overhead"] for r in results.values())
    verdict = "met" if worst < GOAL else "MISSED"
    print("  overhead = median over paired runs of minerva/numpy - 1, in wall time; cpu "
          "overhead = the same in process CPU time (all threads; steadier on a busy machine)")
    print(f"  worst wall overhead {worst * 100:+.1f}% (goal < {GOAL:.0%}): {verdict}")
    return {"layers": [layer._asdict() for layer in layers], "steps": steps,
            "results": {f"{name} t{threads}": r for (name, threads), r in results.items()},
            "ratios": ratios(results)}
