"""memory: an MLP training loop (784-512-512-10, batch 256, SGD) written once and run with
minerva and with plain NumPy (eager), side by side in one process.

The step is one function over a small table of ops (``MINERVA`` or ``NUMPY``): matmul,
relu, ``relu_backward``, softmax cross-entropy and its backward, SGD — the same math in
both. Figures, per memory strategy (``pooled``, ``round``, ``naive``):

- peak bytes: ``tracemalloc`` around the whole loop for both systems (NumPy reports its data
  allocations to it; minerva's host pool chunks are NumPy arrays, and the host copies that
  ``mv.array`` keeps until its op runs are too), and minerva's own ``peak_bytes`` (in use)
  and ``peak_reserved_bytes`` (in use + cached) from ``mv.memory_stats``;
- pool hit rate in steady state: hits / allocs after the warm-up steps;
- step time: median over ``--repeat`` runs, systems in turns.

Goals: peak within 1.1x of NumPy eager; hit rate >= 95%; ``pooled`` no slower than
``naive``. A second table measures how ``MINERVA_MAX_PENDING`` (the run-ahead bound) moves
the peak, under ``pooled`` and under ``naive`` (which caches nothing, so its reserved bytes
are its in-use bytes: the gap between the two is what the cache holds). The row
``minerva-pooled-naive-engine`` runs every op at once (no run-ahead). Data are synthetic
(seeded random batches); BLAS runs on one thread throughout.
"""
from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from types import SimpleNamespace

import numpy as np
from threadpoolctl import threadpool_limits

import minerva as mv
from benchmarks.harness import scenario, table

LAYERS = (784, 512, 512, 10)
BATCH, LR, N_BATCHES = 256, 0.05, 8
STRATEGIES = ("pooled", "round", "naive")
PENDING_SWEEP = (16, 64, 256, 1024)
GOALS = {"peak_ratio": 1.1, "hit_rate": 0.95, "pooled_over_naive_step": 1.0}
MIB = float(1 << 20)


# ---- the two op tables and the step -------------------------------------------------------

def _np_log_softmax(z):
    shifted = z - z.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _np_cross_entropy(logits, labels):
    return -_np_log_softmax(logits)[np.arange(len(labels)), labels].mean()


def _np_cross_entropy_backward(logits, labels):
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(labels)), labels] -= 1
    p *= p.dtype.type(1.0 / len(labels))
    return p


NUMPY = SimpleNamespace(
    array=lambda a: a, relu=lambda x: np.maximum(x, 0),
    relu_backward=lambda dy, x: dy * (x > 0), sum0=lambda x: x.sum(axis=0),
    cross_entropy=_np_cross_entropy, cross_entropy_backward=_np_cross_entropy_backward)

MINERVA = SimpleNamespace(
    array=mv.array, relu=mv.relu, relu_backward=mv.nn.relu_backward,
    sum0=lambda x: mv.sum(x, axis=0), cross_entropy=mv.nn.cross_entropy,
    cross_entropy_backward=mv.nn.cross_entropy_backward)


def step(ops, params, x_host, labels_host):
    """One SGD step of the MLP; ``(new params, loss)``. Same code for both systems."""
    x, labels = ops.array(x_host), ops.array(labels_host)
    w1, b1, w2, b2, w3, b3 = params
    h1 = x @ w1 + b1
    a1 = ops.relu(h1)
    h2 = a1 @ w2 + b2
    a2 = ops.relu(h2)
    logits = a2 @ w3 + b3
    loss = ops.cross_entropy(logits, labels)
    d3 = ops.cross_entropy_backward(logits, labels)
    d2 = ops.relu_backward(d3 @ w3.T, h2)
    d1 = ops.relu_backward(d2 @ w2.T, h1)
    grads = (x.T @ d1, ops.sum0(d1), a1.T @ d2, ops.sum0(d2), a2.T @ d3, ops.sum0(d3))
    return [p - LR * g for p, g in zip(params, grads)], loss


def make_problem(seed: int = 0):
    """Initial parameters and ``N_BATCHES`` synthetic batches (NumPy, float32 / int64)."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(LAYERS, LAYERS[1:]):
        w = rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)
        params += [w.astype(np.float32), np.zeros(fan_out, np.float32)]
    batches = [(rng.standard_normal((BATCH, LAYERS[0])).astype(np.float32),
                rng.integers(0, LAYERS[-1], BATCH).astype(np.int64))
               for _ in range(N_BATCHES)]
    return params, batches


def train(ops, params, batches, first: int, n_steps: int):
    """``n_steps`` steps from step number ``first``; ``(params, last loss)``."""
    loss = None
    for i in range(first, first + n_steps):
        params, loss = step(ops, params, *batches[i % len(batches)])
    return params, loss


# ---- one measured run ---------------------------------------------------------------------

def start_minerva(strategy: str, engine: str = "dag", max_pending: int | None = None):
    """A fresh runtime with one CPU device."""
    mv.shutdown()
    options = {} if max_pending is None else {"max_pending": max_pending}
    mv.init(engine=engine, mem_pool=strategy, **options)
    mv.set_device(mv.create_cpu_device())


def minerva_run(problem, steps: int, warmup: int, traced: bool, **config) -> dict:
    """One minerva run: warm-up steps, then ``steps`` timed; figures and final params."""
    start_minerva(**config)
    params0, batches = problem
    gc.collect()
    if traced:
        tracemalloc.start()
    params, _ = train(MINERVA, [mv.array(p) for p in params0], batches, 0, warmup)
    mv.wait_for_all(timeout=600)
    before, t0 = mv.memory_stats(0), time.perf_counter()
    params, loss = train(MINERVA, params, batches, warmup, steps)
    mv.wait_for_all(timeout=600)
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] if traced else None
    tracemalloc.stop()
    after = mv.memory_stats(0)
    result = {"step_s": seconds / steps, "traced_peak": peak, "loss": float(loss),
              "params": [p.to_numpy() for p in params], "stats": after,
              "hit_rate": _hit_rate(before, after)}
    mv.shutdown()
    return result


def numpy_run(problem, steps: int, warmup: int, traced: bool) -> dict:
    """The same loop in NumPy, eager."""
    params0, batches = problem
    gc.collect()
    if traced:
        tracemalloc.start()
    params, _ = train(NUMPY, [p.copy() for p in params0], batches, 0, warmup)
    t0 = time.perf_counter()
    params, loss = train(NUMPY, params, batches, warmup, steps)
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] if traced else None
    tracemalloc.stop()
    return {"step_s": seconds / steps, "traced_peak": peak, "loss": float(loss),
            "params": params}


def _hit_rate(before: dict, after: dict) -> float:
    n_allocs = after["n_allocs"] - before["n_allocs"]
    return (after["n_pool_hits"] - before["n_pool_hits"]) / n_allocs if n_allocs else 0.0


# ---- the scenario -------------------------------------------------------------------------

def systems() -> dict:
    """Name -> ``run(problem, steps, warmup, traced)`` of every system measured."""
    runs = {"numpy-eager": numpy_run}
    for strategy in STRATEGIES:
        runs[f"minerva-{strategy}"] = _minerva_system(strategy=strategy)
    runs["minerva-pooled-naive-engine"] = _minerva_system(strategy="pooled", engine="naive")
    return runs


def _minerva_system(**config):
    return lambda problem, steps, warmup, traced: minerva_run(problem, steps, warmup, traced,
                                                              **config)


def measure(problem, steps: int, warmup: int, repeat: int) -> dict:
    """Per system: one traced run (peak, hit rate, final params) and ``repeat`` timed runs
    in turns (median step time)."""
    runs = systems()
    results = {name: run(problem, steps, warmup, True) for name, run in runs.items()}
    times = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            times[name].append(run(problem, steps, warmup, False)["step_s"])
    for name, samples in times.items():
        results[name]["step_s"] = statistics.median(samples)
    return results


def sweep_pending(problem, steps: int, warmup: int) -> dict:
    """``(strategy, MINERVA_MAX_PENDING)`` -> a traced run (peak) with the step time of an
    untraced one, for the ``pooled`` and ``naive`` strategies."""
    sweep = {}
    for strategy in ("pooled", "naive"):
        for n in PENDING_SWEEP:
            config = dict(strategy=strategy, max_pending=n)
            sweep[strategy, n] = minerva_run(problem, steps, warmup, True, **config)
            sweep[strategy, n]["step_s"] = minerva_run(problem, steps, warmup, False,
                                                       **config)["step_s"]
    return sweep


def print_main(results: dict) -> dict:
    """The main table; the ratios against NumPy eager."""
    base = results["numpy-eager"]
    rows, ratios = [], {}
    for name, r in results.items():
        stats = r.get("stats", {})
        peak_ratio = r["traced_peak"] / base["traced_peak"]
        step_ratio = r["step_s"] / base["step_s"]
        ratios[name] = {"peak_over_numpy": peak_ratio, "step_over_numpy": step_ratio}
        rows.append((name, f"{r['traced_peak'] / MIB:.2f}", f"{peak_ratio:.2f}x",
                     _mib(stats.get("peak_bytes")), _mib(stats.get("peak_reserved_bytes")),
                     _pct(r.get("hit_rate")), f"{r['step_s'] * 1e3:.2f}",
                     f"{step_ratio:.2f}x", _drift(r, base)))
    table("memory: MLP 784-512-512-10, batch 256, SGD", rows,
          ("system", "traced peak MiB", "/numpy", "mv peak MiB", "mv reserved MiB",
           "hit rate", "step ms", "/numpy", "max |dW| vs numpy"))
    return ratios


def print_sweep(sweep: dict, numpy_peak: int) -> None:
    """The MINERVA_MAX_PENDING table."""
    rows = [(strategy, n, f"{r['traced_peak'] / MIB:.2f}",
             f"{r['traced_peak'] / numpy_peak:.2f}x", _mib(r["stats"]["peak_bytes"]),
             _mib(r["stats"]["peak_reserved_bytes"]), f"{r['step_s'] * 1e3:.2f}")
            for (strategy, n), r in sweep.items()]
    table("memory: run-ahead bound MINERVA_MAX_PENDING (dag engine)", rows,
          ("strategy", "MAX_PENDING", "traced peak MiB", "/numpy", "mv peak MiB",
           "mv reserved MiB", "step ms"))


def goals(results: dict) -> dict:
    """Each goal's measured value and whether it is met."""
    pooled, naive = results["minerva-pooled"], results["minerva-naive"]
    measured = {"peak_ratio": pooled["traced_peak"] / results["numpy-eager"]["traced_peak"],
                "hit_rate": pooled["hit_rate"],
                "pooled_over_naive_step": pooled["step_s"] / naive["step_s"]}
    met = {"peak_ratio": measured["peak_ratio"] <= GOALS["peak_ratio"],
           "hit_rate": measured["hit_rate"] >= GOALS["hit_rate"],
           "pooled_over_naive_step": measured["pooled_over_naive_step"] <= GOALS[
               "pooled_over_naive_step"]}
    for key, value in measured.items():
        print(f"  goal {key}: {value:.3f} (goal {GOALS[key]}) "
              f"{'met' if met[key] else 'MISSED'}")
    return {"measured": measured, "met": met}


def _mib(nbytes) -> str:
    return "-" if nbytes is None else f"{nbytes / MIB:.2f}"


def _pct(rate) -> str:
    return "-" if rate is None else f"{rate:.1%}"


def _drift(run: dict, base: dict) -> str:
    return f"{max(float(np.abs(a - b).max()) for a, b in zip(run['params'], base['params'])):.1e}"


def _strip(results: dict) -> dict:
    """Figures only, for the JSON output."""
    keep = ("step_s", "traced_peak", "hit_rate", "loss")
    return {name: {**{k: r.get(k) for k in keep},
                   **{k: r["stats"][k] for k in ("peak_bytes", "peak_reserved_bytes",
                                                 "n_pool_hits", "n_allocs", "n_mallocs")
                      if "stats" in r}}
            for name, r in results.items()}


@scenario("memory")
def memory(args) -> dict:
    """MLP training loop, minerva (three strategies) beside NumPy eager."""
    steps, warmup = (30, 5) if args.quick else (200, 10)
    problem = make_problem()
    with threadpool_limits(limits=1, user_api="blas"):
        results = measure(problem, steps, warmup, args.repeat)
        sweep = sweep_pending(problem, min(steps, 50), warmup)
    print(f"\n  {steps} steps after {warmup} warm-up steps; step time: median of "
          f"{args.repeat} runs")
    ratios = print_main(results)
    print_sweep(sweep, results["numpy-eager"]["traced_peak"])
    sweep_json = _strip({f"{strategy}-{n}": r for (strategy, n), r in sweep.items()})
    return {"results": _strip(results), "max_pending": sweep_json, "ratios": ratios,
            "goals": goals(results)}
