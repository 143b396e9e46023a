"""conv: conv2d forward + backward (data, filter, bias) on one CPU device.

Three systems run the same step side by side, in turns (median of ``--repeat`` runs):

- ``numpy``: the registered minerva kernels (``impl(numpy, ..., out=preallocated)``) called
  directly in a loop: the same im2col code with no runtime at all;
- ``minerva``: ``mv.nn`` on one CPU device (dag engine), ops issued asynchronously and
  waited for once per run;
- ``torch``: PyTorch CPU (``conv2d`` + ``aten.convolution_backward``), when installed.

Everything is single-threaded: BLAS is pinned to one thread with threadpoolctl for the whole
scenario (minerva's CPU worker pins it the same way) and ``torch.set_num_threads(1)``.
Scheduler overhead is ``minerva / numpy - 1``; the goal is under 5%.

Layers: MNIST-size is the two 5x5 conv layers of a LeNet-style net on 28x28 digits with
"same" padding (pad 2), batch 128: ``1->16`` on 28x28, then ``16->32`` on the 2x2-pooled
14x14 map. Mid-size: batch 32, ``64->64``, 3x3, 32x32, pad 1.
"""
from __future__ import annotations

import statistics
import time
from typing import NamedTuple

import numpy as np
from threadpoolctl import threadpool_limits

import minerva as mv
from benchmarks.harness import scenario, table
from minerva.ops import registry

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


LAYERS = (Layer("mnist-conv1 1->16 5x5 28x28", 128, 1, 16, 28, 5, 2),
          Layer("mnist-conv2 16->32 5x5 14x14", 128, 16, 32, 14, 5, 2),
          Layer("mid 64->64 3x3 32x32", 32, 64, 64, 32, 3, 1))


def quick(layer: Layer) -> Layer:
    """The layer at a quarter of its batch, for ``--quick``."""
    return layer._replace(batch=max(1, layer.batch // 4))


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


def torch_calls(layer: Layer, a: dict):
    """Per op, a PyTorch CPU call (``None`` without torch)."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
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
    """minerva's results equal the plain kernel calls' (the same code, the same inputs)."""
    for name in OPS:
        calls[name]()
    for got, key in zip(minerva_out, ("y", "dx", "dw", "db")):
        np.testing.assert_allclose(got.to_numpy(), out[key], rtol=1e-5, atol=1e-4)


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


def measure_layer(layer: Layer, steps: int, repeat: int) -> dict:
    """Step times (ms per step) of each system, and per-op times of numpy and torch."""
    a = host_inputs(layer)
    (out, calls), torch_ops = numpy_calls(layer, a), torch_calls(layer, a)
    step = minerva_step(layer, a)
    check_same(step(), calls, out)
    systems = {"numpy": repeated(numpy_step(calls), steps),
               "minerva": repeated(step, steps, mv.wait_for_all)}
    if torch_ops is not None:
        systems["torch"] = repeated(torch_ops["step"], steps)
    wall, cpu = paired_samples(systems, repeat)
    ops = {"numpy": per_op_ms(calls, repeat)}
    if torch_ops is not None:
        ops["torch"] = per_op_ms(torch_ops, repeat)
    return {"ms_per_step": {k: statistics.median(v) / steps * 1e3 for k, v in wall.items()},
            "overhead": overhead(wall), "cpu_overhead": overhead(cpu), "ops_ms": ops}


# ---------------------------------------------------------------- reporting
def step_rows(results: dict) -> list[tuple]:
    """One row per layer: ms per step of each system and the ratios."""
    rows = []
    for name, r in results.items():
        ms = r["ms_per_step"]
        torch_ms = ms.get("torch")
        rows.append((name, f"{ms['numpy']:.2f}", f"{ms['minerva']:.2f}",
                     "-" if torch_ms is None else f"{torch_ms:.2f}",
                     f"{r['overhead'] * 100:+.1f}%", f"{r['cpu_overhead'] * 100:+.1f}%",
                     "-" if torch_ms is None else f"{ms['numpy'] / torch_ms:.2f}x"))
    return rows


def op_rows(results: dict) -> list[tuple]:
    """One row per layer and op: numpy-kernel and torch milliseconds."""
    rows = []
    for name, r in results.items():
        for op in OPS:
            np_ms, t_ms = r["ops_ms"]["numpy"][op], r["ops_ms"].get("torch", {}).get(op)
            rows.append((name, op, f"{np_ms:.2f}", "-" if t_ms is None else f"{t_ms:.2f}",
                         "-" if t_ms is None else f"{np_ms / t_ms:.2f}x"))
    return rows


def ratios(results: dict) -> dict:
    """Scheduler overhead and numpy/torch time per layer, for the JSON output."""
    out = {}
    for name, r in results.items():
        ms = r["ms_per_step"]
        out[f"overhead[{name}]"] = r["overhead"]
        out[f"cpu_overhead[{name}]"] = r["cpu_overhead"]
        if "torch" in ms:
            out[f"numpy_over_torch[{name}]"] = ms["numpy"] / ms["torch"]
    return out


@scenario("conv")
def conv(args) -> dict:
    """conv2d forward + backward: minerva vs its kernels called directly vs PyTorch."""
    layers = [quick(layer) for layer in LAYERS] if args.quick else list(LAYERS)
    steps = 2 if args.quick else 5
    mv.shutdown()
    with threadpool_limits(limits=1, user_api="blas"):
        mv.init(engine="dag")
        mv.set_device(mv.create_cpu_device())
        results = {layer.name: measure_layer(layer, steps, args.repeat) for layer in layers}
        mv.shutdown()
    print("\nconv: single-threaded throughout (BLAS pinned to 1 thread by threadpoolctl, "
          f"torch.set_num_threads(1)); {steps} steps per run, median of {args.repeat} runs")
    table("conv: ms per forward+backward step (conv2d, backward data, filter, bias)",
          step_rows(results),
          ("layer", "numpy", "minerva", "torch", "overhead", "cpu overhead", "numpy/torch"))
    table("conv: ms per op (numpy = minerva's kernel called directly)", op_rows(results),
          ("layer", "op", "numpy", "torch", "numpy/torch"))
    worst = max(r["overhead"] for r in results.values())
    verdict = "met" if worst < GOAL else "MISSED"
    print("  overhead = median over paired runs of minerva/numpy - 1, in wall time; cpu "
          "overhead = the same in process CPU time (all threads; steadier on a busy machine)")
    print(f"  worst wall overhead {worst * 100:+.1f}% (goal < {GOAL:.0%}): {verdict}")
    return {"layers": {layer.name: layer._asdict() for layer in layers}, "steps": steps,
            "results": results, "ratios": ratios(results)}
