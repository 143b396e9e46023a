"""fusion: jitted replays with element-wise fusion (``mv.jit``, doc/jit.md "Fusion") against
NumPy running the same code, every ratio in one run (issue 26):

- ``chain``: a jitted chain of 200 tiny ops (``x = x * 1.0001 + 0.5`` and the like, on 4
  float32) against the same chain in NumPy (goal: <= 0.1x);
- ``black_scholes``: jitted Black-Scholes prices of 2M float64 options on a CPU device of
  2 threads, against NumPy on the same code (goal: <= 0.33x);
- ``mlp-256`` and ``mlp-512``: the MLP training step of ``apps/mnist_mlp.py`` (784-256-10
  and 784-512-512-10, batch 100, float32, hand-written backward, SGD in place) jitted,
  against the same model code and kernels run eagerly with NumPy (goal: <= 0.85x);
- ``peak``: ``peak_bytes`` of the 784-512-512-10 loop jitted against the same loop run
  eagerly by minerva (goal: <= 0.8x).

The MLP steps run first, in a fresh process, as in the ``jit`` scenario; the 784-512-512-10
step runs again after Black-Scholes, whose freed 16 MB arrays raise glibc's mmap
threshold: NumPy's temporaries then come from the heap, not from fresh mappings whose
pages fault in at each step, and eager NumPy runs the step about 1.4x faster.

Each case also reports the unfused replay (``fuse=False``) for comparison. For
Black-Scholes it also reports, from Linux's per-thread scheduler statistics, how long the
busiest thread of the jitted replay ran and how long the replay's threads waited for a
core that another process held: on a shared machine the wall time then exceeds what the
kernel needs.
"""
from __future__ import annotations

import functools
import glob
import math
import time
from unittest import mock

import numpy as np
from threadpoolctl import threadpool_limits

import minerva as mv
from benchmarks import jit as jit_bench
from benchmarks.harness import check_goal, interleaved, scenario, table

from apps import mnist_mlp  # noqa: E402  (jit_bench puts the repository on the path)

GOALS = {"chain": 0.1, "black_scholes": 0.33, "mlp-256": 0.85, "mlp-512": 0.85, "peak": 0.8}
N_CHAIN = 200
BS_THREADS = 2


# ---- a chain of tiny ops ----------------------------------------------------------------

def tiny_chain(x):
    """200 element-wise ops on ``x`` (NumPy arrays or NArrays alike)."""
    for k in range(N_CHAIN // 4):
        x = x * 1.0001 + 0.5
        x = abs(x) - 0.25 if k % 2 else x / 1.5 - 0.125
    return x


def chain_runs() -> dict:
    host = np.linspace(-1, 1, 4, dtype=np.float32)
    x = mv.array(host)
    runs = {"numpy-eager": lambda: tiny_chain(host)}
    for name, fuse in (("minerva-jit", True), ("minerva-jit-unfused", False)):
        step = mv.jit(tiny_chain, fuse=fuse)
        np.testing.assert_allclose(step(x).to_numpy(), tiny_chain(host), rtol=1e-5)
        runs[name] = (lambda s: lambda: s(x).wait())(step)
    return runs


# ---- Black-Scholes -------------------------------------------------------------------------

def cnd(ns, x):
    """The cumulative normal distribution, by Abramowitz and Stegun's polynomial."""
    a1, a2, a3, a4, a5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
    big_l = ns.abs(x)
    k = 1.0 / (1.0 + 0.2316419 * big_l)
    poly = k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5))))
    w = 1.0 - 1.0 / math.sqrt(2 * math.pi) * ns.exp(-big_l * big_l / 2.0) * poly
    return ns.where(x < 0, 1.0 - w, w)


def black_scholes(ns, s, x, t, r=0.02, v=0.30):
    """Call prices of options with spot ``s``, strike ``x``, maturity ``t``."""
    sqrt_t = ns.sqrt(t)
    d1 = (ns.log(s / x) + (r + v * v / 2.0) * t) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    return s * cnd(ns, d1) - x * ns.exp(-r * t) * cnd(ns, d2)


def options(n: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    return [rng.uniform(10, 50, n), rng.uniform(10, 50, n), rng.uniform(0.1, 2.0, n)]


def black_scholes_runs(n: int) -> tuple:
    """The runs of ``interleaved`` and the jitted function's stats."""
    host = options(n)
    mv.set_device(mv.create_cpu_device(threads=BS_THREADS))
    args = [mv.array(a) for a in host]
    want = black_scholes(np, *host)
    runs = {"numpy-eager": lambda: black_scholes(np, *host)}
    stats = None
    for name, fuse in (("minerva-jit", True), ("minerva-jit-unfused", False)):
        step = mv.jit(lambda *a: black_scholes(mv, *a), fuse=fuse)
        step(*args)
        np.testing.assert_allclose(step(*args).to_numpy(), want, rtol=1e-9, atol=1e-9)
        runs[name] = (lambda f: lambda: f(*args).wait())(step)
        stats = stats or step.stats()
    return runs, stats


def thread_times(run, repeat: int = 3) -> dict | None:
    """Of ``repeat`` calls of ``run`` (the median one by its busiest thread): its wall time,
    the most CPU time one thread of the process took and the longest a thread waited,
    runnable, for a core (ms; /proc/self/task/*/schedstat), or None where Linux gives
    none."""
    def snapshot() -> dict:
        times = {}
        for path in glob.glob("/proc/self/task/*/schedstat"):
            try:
                with open(path, encoding="ascii") as f:
                    times[path] = tuple(int(v) for v in f.read().split()[:2])
            except (OSError, ValueError):
                pass
        return times
    samples = []
    for _ in range(repeat):
        before = snapshot()
        start = time.perf_counter()
        run()
        wall = time.perf_counter() - start
        after = snapshot()
        deltas = [(after[k][0] - before[k][0], after[k][1] - before[k][1])
                  for k in after if k in before]
        if not deltas:
            return None
        samples.append((max(d[0] for d in deltas) / 1e6, max(d[1] for d in deltas) / 1e6,
                        wall * 1e3))
    busiest, waited, wall = sorted(samples)[len(samples) // 2]
    return {"busiest_thread_ms": busiest, "waited_for_a_core_ms": waited, "wall_ms": wall}


# ---- the MLP steps --------------------------------------------------------------------------

def mlp_ratio(sizes: tuple, n_steps: int, repeat: int) -> dict:
    """ms per step of the MLP app with layers ``sizes``: eager NumPy, jitted (fused) and
    jitted unfused, interleaved; the ratios to NumPy."""
    with mock.patch.multiple(mnist_mlp, SIZES=sizes, N_LAYERS=len(sizes) - 1):
        app = mnist_mlp.APP
        mv.shutdown()
        mv.init()
        mv.set_device(mv.create_cpu_device())
        host, data = jit_bench.initial_params(app), jit_bench.batches(app, 100, n_steps)
        jit_bench.check_same(app, host, data)
        runs = {"numpy-eager": jit_bench.numpy_steps(app, host, data)}
        for name, fuse in (("minerva-jit", True), ("minerva-jit-unfused", False)):
            with mock.patch.object(mv, "jit", functools.partial(mv.jit, fuse=fuse)):
                runs[name], _, step = jit_bench.jit_steps(app, host, data)
            if fuse:
                stats = step.stats()
        with threadpool_limits(1, user_api="blas"):
            seconds = interleaved(runs, repeat=repeat)
        mv.shutdown()
    ms = {k: v / n_steps * 1e3 for k, v in seconds.items()}
    return {"ms_per_step": ms, "ratio": ms["minerva-jit"] / ms["numpy-eager"],
            "ratio_unfused": ms["minerva-jit-unfused"] / ms["numpy-eager"],
            "n_ops": stats["n_ops"], "n_fused": stats["n_fused"],
            "plan_bytes": stats["plan_bytes"]}


@scenario("fusion")
def fusion(args) -> dict:
    """Fused jit replays: a 200-op tiny chain, Black-Scholes, MLP steps, MLP peak memory."""
    n_bs, n_mlp = (200_000, 5) if args.quick else (2_000_000, 20)
    mv.shutdown()
    mv.init()
    mv.set_device(mv.create_cpu_device())
    chain = interleaved(chain_runs(), repeat=max(args.repeat, 5) * 20)
    mlps = {f"mlp-{sizes[1]}": mlp_ratio(sizes, n_mlp, args.repeat)
            for sizes in ((784, 256, 10), (784, 512, 512, 10))}
    host = jit_bench.initial_params(mnist_mlp.APP)
    data = jit_bench.batches(mnist_mlp.APP, 100, n_mlp)
    peaks = {name: jit_bench.peak_bytes(mnist_mlp.APP, host, data, jitted)
             for name, jitted in (("minerva-eager", False), ("minerva-jit", True))}
    mv.shutdown()
    mv.init()
    bs_runs, bs_stats = black_scholes_runs(n_bs)
    bs = interleaved(bs_runs, repeat=args.repeat)
    bs_threads = thread_times(bs_runs["minerva-jit"])
    # Black-Scholes freed arrays of 16 MB: glibc now serves NumPy's temporaries from its
    # heap instead of fresh mappings (its mmap threshold rose): the same MLP step again
    warm = mlp_ratio((784, 512, 512, 10), n_mlp, args.repeat)
    rows = [("chain", f"{N_CHAIN} ops", *(f"{chain[k] * 1e6:.1f} us" for k in
                                          ("numpy-eager", "minerva-jit",
                                           "minerva-jit-unfused"))),
            ("black_scholes", f"{n_bs} options, {BS_THREADS} threads",
             *(f"{bs[k] * 1e3:.1f} ms" for k in ("numpy-eager", "minerva-jit",
                                                 "minerva-jit-unfused")))]
    rows += [(name, f"{r['n_ops']} ops, {r['n_fused']} fused",
              *(f"{r['ms_per_step'][k]:.2f} ms/step" for k in
                ("numpy-eager", "minerva-jit", "minerva-jit-unfused")))
             for name, r in mlps.items()]
    table("fusion: minerva jitted (fused, unfused) vs NumPy eager", rows,
          ("case", "size", "numpy", "jit", "jit unfused"))
    print(f"  black_scholes plan: {bs_stats['n_ops']} ops, {bs_stats['n_fused']} fused into "
          f"{bs_stats['n_fused_kernels']} kernels, plan {bs_stats['plan_bytes'] / 2**20:.1f} MiB")
    if bs_threads is not None:
        print(f"  black_scholes jit, 3 more calls: {bs_threads['wall_ms']:.1f} ms, its busiest "
              f"thread ran {bs_threads['busiest_thread_ms']:.1f} ms "
              f"({bs_threads['busiest_thread_ms'] / 1e3 / bs['numpy-eager']:.3f}x NumPy's "
              f"time), its threads waited up to {bs_threads['waited_for_a_core_ms']:.1f} ms "
              "for a core held by another process")
    table("fusion: MLP memory in use (MiB)",
          [(k, *(f"{v[key] / 2**20:.2f}" for key in ("peak_bytes", "steady_peak_bytes",
                                                     "plan_bytes"))) for k, v in peaks.items()],
          ("system", "peak", "peak after step 1", "plan"))
    ratios: dict = {}
    check_goal(GOALS, "chain", chain["minerva-jit"] / chain["numpy-eager"], ratios)
    check_goal(GOALS, "black_scholes", bs["minerva-jit"] / bs["numpy-eager"], ratios)
    for name, r in mlps.items():
        check_goal(GOALS, name, r["ratio"], ratios)
    check_goal(GOALS, "peak",
               peaks["minerva-jit"]["peak_bytes"] / peaks["minerva-eager"]["peak_bytes"], ratios)
    ratios["chain_unfused"] = chain["minerva-jit-unfused"] / chain["numpy-eager"]
    ratios["black_scholes_unfused"] = bs["minerva-jit-unfused"] / bs["numpy-eager"]
    for name, r in mlps.items():
        ratios[f"{name}_unfused"] = r["ratio_unfused"]
    ratios["mlp-512_warm_malloc"] = warm["ratio"]
    print(f"  mlp-512 after Black-Scholes (NumPy's temporaries from glibc's heap): "
          f"{warm['ms_per_step']['numpy-eager']:.2f} ms/step NumPy, "
          f"{warm['ms_per_step']['minerva-jit']:.2f} jit: {warm['ratio']:.3f}x")
    ratios["steady_peak"] = (peaks["minerva-jit"]["steady_peak_bytes"]
                             / peaks["minerva-eager"]["steady_peak_bytes"])
    print("  unfused: " + ", ".join(f"{k.removesuffix('_unfused')} {v:.3f}x"
                                    for k, v in ratios.items() if k.endswith("_unfused"))
          + f"; steady_peak {ratios['steady_peak']:.3f}x")
    return {"chain_seconds": chain, "black_scholes_seconds": bs, "mlp": mlps,
            "mlp_warm_malloc": warm, "peak": peaks, "black_scholes_threads": bs_threads,
            "ratios": ratios, "goals": GOALS}
