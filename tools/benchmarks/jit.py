"""jit: what ``mv.jit`` buys, every ratio in one run.

- ``chain``: a jitted chain of 20,000 tiny ops (``x = x + 1.0`` on 4 float32) against the
  same chain in NumPy, eager (goal: <= 2x NumPy);
- ``replay_op_us``: what a replay costs per unfused op beyond its kernel (``fuse=False``,
  chains of 200 and 1,000 ``x + 1.0``, minus as many bare kernel calls; goal <= 0.3 us);
- ``mlp``: the training step of ``apps/mnist_mlp.py`` (784-512-512-10, batch 100, float32,
  the app's hand-written backward, plain SGD in place) jitted, against the same model code
  and kernels run eagerly with NumPy (``benchmarks.eager``; goal: <= 0.85x NumPy);
- ``cnn``: the same for ``apps/mnist_cnn.py`` (batch 64; goal: <= 0.85x NumPy);
- ``peak``: ``mv.memory_stats()["peak_bytes"]`` of the MLP loop jitted against the same
  loop run eagerly by minerva, each in a fresh runtime (goal: <= 0.8x). The jitted run's
  peak includes its recording, which is an eager step; ``steady_peak`` compares the peaks
  after the first step (from the "memory in use" counter of a trace of the later steps).

Each timed run issues its steps back to back (minerva uploads each batch in its step, as a
training loop does), then waits once; BLAS runs on one thread. Batches are random images
of MNIST's shape.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from unittest import mock

import numpy as np
from threadpoolctl import threadpool_limits

import minerva as mv
import minerva.nn
from benchmarks.eager import EAGER_MV, eager_apply
from benchmarks.harness import check_goal, interleaved, scenario, table

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
from apps import mnist_cnn, mnist_mlp  # noqa: E402

GOALS = {"chain": 2.0, "mlp": 0.85, "cnn": 0.85, "peak": 0.8}
OVERHEAD_OPS = 1000
"""The chain whose replay gives the per-op overhead figure (run on the calling thread)."""
OVERHEAD_GOAL_US = 0.3
"""Issue 26: a replayed unfused op costs at most this much beyond its kernel."""
LR = 0.01


@contextlib.contextmanager
def eager_numpy():
    """Inside: ``apps.layers`` and ``mv.nn`` run their registered kernels at once with
    NumPy on host arrays (``benchmarks.eager``'s twin, patching ``mv.nn``'s op builder)."""
    from apps import layers
    with mock.patch.object(layers, "mv", EAGER_MV), \
            mock.patch.object(minerva.nn, "build", _eager_build), \
            mock.patch.object(minerva.nn, "to_narray", lambda x, _name=None: np.asarray(x)):
        yield


def _eager_build(op_def, inputs, attrs=None):
    return eager_apply(op_def, inputs, **(attrs or {}))


# ---- (a) a chain of tiny ops ----------------------------------------------------------

def add_chain(x, n: int):
    """``x + 1.0``, ``n`` times (the same code for NumPy and minerva)."""
    for _ in range(n):
        x = x + 1.0
    return x


def chain_runs(n: int) -> dict:
    """The jitted chain and the NumPy one, as runs of ``interleaved``."""
    step = mv.jit(lambda x: add_chain(x, n))
    x = mv.zeros(4, dtype=np.float32)
    assert float(step(x)[0]) == n  # records
    host = np.zeros(4, np.float32)
    return {"numpy-eager": lambda: add_chain(host, n),
            "minerva-jit": lambda: step(x).wait()}


def replay_overhead(n: int, repeat: int, calls: int = 20) -> dict:
    """What a replay costs per unfused op beyond its kernel: a chain of ``n`` ``x + 1.0``
    on 4 float32 jitted with ``fuse=False`` and waited for, minus ``n`` calls of the bare
    kernel in a Python loop (``numpy.add(x, c, out)``: the call a replay's bound step
    makes, a 0-d float32 ``c`` and a preallocated ``out``), per op, in microseconds;
    ``calls`` replays and as many loops per sample."""
    step = mv.jit(lambda x: add_chain(x, n), fuse=False)
    x = mv.zeros(4, dtype=np.float32)
    assert float(step(x)[0]) == n  # records
    host, out, one = np.zeros(4, np.float32), np.empty(4, np.float32), np.float32(1.0)
    one = np.asarray(one)

    def replays():
        for _ in range(calls):
            step(x).wait()

    def bare():
        for _ in range(calls):
            for _ in range(n):
                np.add(host, one, out)
    seconds = interleaved({"replay": replays, "bare": bare}, repeat=repeat)
    replay_us, bare_us = (seconds[k] / calls * 1e6 for k in ("replay", "bare"))
    return {"n_ops": n, "replay_us": replay_us, "bare_us": bare_us,
            "us_per_op": (replay_us - bare_us) / n}


# ---- (b, c) training steps ------------------------------------------------------------

def sgd_in_place(params: dict, grads: dict) -> None:
    """``w -= lr * g`` for every parameter (NumPy arrays or NArrays alike)."""
    for name, w in params.items():
        w -= grads[name] * LR


def train_step(app, params: dict, x, y):
    """One step of ``app`` (its hand-written backward), updating ``params`` in place;
    the summed loss."""
    loss, grads = app.loss_and_grads(params, x, y, y.shape[0])
    sgd_in_place(params, grads)
    return loss


def batches(app, batch: int, n: int, seed: int = 0) -> list:
    """``n`` random batches of images and labels (NumPy)."""
    rng = np.random.default_rng(seed)
    return [(rng.random((batch,) + app.image_shape, dtype=np.float32),
             rng.integers(0, 10, batch)) for _ in range(n)]


def initial_params(app) -> dict:
    """The app's initial parameters, as NumPy arrays (seeded)."""
    mv.random.seed(0)
    return {k: v.to_numpy().astype(np.float32) for k, v in app.init_params().items()}


def numpy_steps(app, host: dict, data: list):
    """The steps computed eagerly with NumPy and the same kernels."""
    def run():
        params = {k: v.copy() for k, v in host.items()}
        with eager_numpy(), threadpool_limits(1, user_api="blas"):
            for x, y in data:
                train_step(app, params, x, y)
    return run


def jit_steps(app, host: dict, data: list, jitted: bool = True):
    """The steps run by minerva on its current device (``jitted``: through ``mv.jit``,
    recorded before the timed runs); the run and its parameters."""
    params = {k: mv.array(v) for k, v in host.items()}
    step = (mv.jit if jitted else lambda f: f)(lambda x, y: train_step(app, params, x, y))
    step(mv.array(data[0][0]), mv.array(data[0][1]))
    mv.wait_for_all()

    def run():
        for x, y in data:
            step(mv.array(x), mv.array(y))
        mv.wait_for_all()
    return run, params, step


def check_same(app, host: dict, data: list) -> None:
    """A few jitted steps and the NumPy ones give the same parameters (else the comparison
    is void)."""
    _, params, _ = jit_steps(app, host, data[:1])
    want = {k: v.copy() for k, v in host.items()}
    with eager_numpy():
        train_step(app, want, *data[0])
    for name, value in want.items():
        np.testing.assert_allclose(params[name].to_numpy(), value, rtol=1e-4, atol=1e-6)


def step_ratio(app, batch: int, n_steps: int, repeat: int) -> dict:
    """ms per step, jitted minerva and eager NumPy, and their ratio."""
    mv.shutdown()
    mv.init()
    mv.set_device(mv.create_cpu_device())
    host, data = initial_params(app), batches(app, batch, n_steps)
    check_same(app, host, data)
    run, _, step = jit_steps(app, host, data)
    with threadpool_limits(1, user_api="blas"):
        seconds = interleaved({"numpy-eager": numpy_steps(app, host, data),
                               "minerva-jit": run}, repeat=repeat)
    stats = step.stats()
    mv.shutdown()
    ms = {k: v / n_steps * 1e3 for k, v in seconds.items()}
    return {"ms_per_step": ms, "ratio": ms["minerva-jit"] / ms["numpy-eager"],
            "n_ops": stats["n_ops"], "plan_bytes": stats["plan_bytes"]}


# ---- (d) peak memory ----------------------------------------------------------------------

def peak_bytes(app, host: dict, data: list, jitted: bool) -> dict:
    """Bytes in use by the MLP loop in a fresh runtime: ``peak_bytes`` over the whole run
    (the first step included: for the jitted loop, its recording, an eager step) and
    ``steady_peak_bytes`` over the later steps (the largest "memory in use" of a trace of
    them), with what is in use at the end and the plan's bytes."""
    mv.shutdown()
    mv.init()
    mv.set_device(mv.create_cpu_device())
    run, _, step = jit_steps(app, host, data, jitted)
    with tempfile.TemporaryDirectory() as tmp, threadpool_limits(1, user_api="blas"):
        mv.profiler.start(os.path.join(tmp, "trace.json"))
        run()
        with open(mv.profiler.stop(), encoding="utf-8") as trace:
            events = json.load(trace)["traceEvents"]
    stats = mv.memory_stats()
    plan = step.stats()["plan_bytes"] if jitted else 0
    mv.shutdown()
    steady = max(e["args"]["bytes"] for e in events
                 if e["ph"] == "C" and e["name"] == "memory in use")
    return {"peak_bytes": stats["peak_bytes"], "steady_peak_bytes": steady,
            "in_use_bytes": stats["in_use_bytes"], "plan_bytes": plan}


# ---- the scenario ----------------------------------------------------------------------

@scenario("jit")
def jit(args) -> dict:
    """mv.jit: a chain of tiny ops, the MLP and CNN steps, the MLP's peak memory."""
    n_chain, n_mlp, n_cnn = (2_000, 5, 2) if args.quick else (20_000, 20, 5)
    mv.shutdown()
    mv.init()
    mv.set_device(mv.create_cpu_device())
    chain = interleaved(chain_runs(n_chain), repeat=args.repeat)
    overheads = [replay_overhead(n, args.repeat) for n in (200, OVERHEAD_OPS)]
    mlp = step_ratio(mnist_mlp.APP, 100, n_mlp, args.repeat)
    cnn = step_ratio(mnist_cnn.APP, 64, n_cnn, args.repeat)
    host, data = initial_params(mnist_mlp.APP), batches(mnist_mlp.APP, 100, n_mlp)
    peaks = {name: peak_bytes(mnist_mlp.APP, host, data, jitted)
             for name, jitted in (("minerva-eager", False), ("minerva-jit", True))}
    rows = [("chain", f"{n_chain} ops", f"{chain['numpy-eager'] * 1e3:.2f} ms",
             f"{chain['minerva-jit'] * 1e3:.2f} ms")]
    rows += [(name, f"{r['n_ops']} ops", f"{r['ms_per_step']['numpy-eager']:.2f} ms/step",
              f"{r['ms_per_step']['minerva-jit']:.2f} ms/step")
             for name, r in (("mlp", mlp), ("cnn", cnn))]
    table("jit: minerva jitted vs NumPy eager", rows, ("case", "size", "numpy", "jit"))
    table("jit: a replay's cost per unfused op beyond its kernel (fuse=False, waited for)",
          [(f"{r['n_ops']} ops", f"{r['replay_us']:.1f} us", f"{r['bare_us']:.1f} us",
            f"{r['us_per_op']:.3f} us") for r in overheads],
          ("chain", "replay", "bare kernels", "per op"))
    table("jit: MLP memory in use (MiB; mv.memory_stats, trace counters)",
          [(k, *(f"{v[key] / 2**20:.2f}" for key in ("peak_bytes", "steady_peak_bytes",
                                                     "in_use_bytes", "plan_bytes")))
           for k, v in peaks.items()],
          ("system", "peak", "peak after step 1", "at the end", "plan"))
    ratios: dict = {}
    check_goal(GOALS, "chain", chain["minerva-jit"] / chain["numpy-eager"], ratios)
    overhead = overheads[-1]["us_per_op"]
    ratios["replay_op_us"] = overhead
    print(f"  replay_op_us: {overhead:.3f} us per unfused op beyond its kernel "
          f"({OVERHEAD_OPS} ops; goal <= {OVERHEAD_GOAL_US} us) "
          f"{'met' if overhead <= OVERHEAD_GOAL_US else 'MISSED'}")
    check_goal(GOALS, "mlp", mlp["ratio"], ratios)
    check_goal(GOALS, "cnn", cnn["ratio"], ratios)
    check_goal(GOALS, "peak",
               peaks["minerva-jit"]["peak_bytes"] / peaks["minerva-eager"]["peak_bytes"], ratios)
    steady = (peaks["minerva-jit"]["steady_peak_bytes"]
              / peaks["minerva-eager"]["steady_peak_bytes"])
    ratios["steady_peak"] = steady
    print(f"  steady_peak (after the first step): {steady:.3f}x")
    return {"chain_seconds": chain, "replay_overhead": overheads, "mlp": mlp, "cnn": cnn,
            "peak": peaks, "ratios": ratios, "goals": GOALS}

