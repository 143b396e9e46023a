"""dist: data-parallel training over MPI ranks (``minerva.distributed``), on one machine.

- ``speedup``: the CNN step of apps/mnist_cnn_dist.py on 2 ranks x 1 CPU device against
  the same step on 1 rank alone (the other one idle), global batch 64 (goal: >= 1.6x on
  2 free cores);
- ``bandwidth``: ``dist.allreduce`` of float32 buffers (1, 4 and 25 MB) against raw
  mpi4py ``Allreduce`` of the same buffers on the same ranks (goal: >= 0.9x);
- ``allreduce cost``: the 2-rank step with its gradient reduction against the same step
  without it (goal: <= 1.1x) — with today's devices, and with the proposed
  ``CpuDevice.submit`` edit (a collective starts when ready; see doc/distributed.md).

The figures are measured on 2 ranks launched with ``mpiexec`` (the worker is this file,
run with ``--worker``), BLAS on one thread per rank, the runs of each table interleaved
(drift hits all alike). Skipped without mpi4py and mpiexec.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [ROOT, os.path.dirname(HERE), os.path.join(ROOT, "tests", "distributed", "programs")]

import numpy as np  # noqa: E402

import device_patches  # noqa: E402  (the proposed device edit, applied while measured)
import minerva as mv  # noqa: E402
import minerva.distributed as dist  # noqa: E402
from apps import dist_train, mnist_cnn, train  # noqa: E402
from benchmarks.harness import scenario, table  # noqa: E402
from minerva import optim  # noqa: E402
from minerva.device.cpu.device import CpuDevice  # noqa: E402
GOALS = {"speedup": 1.6, "bandwidth": 0.9, "allreduce_cost": 1.1}
BATCH = 64
SIZES_MB = (1, 4, 25)


# ---- the scenario (the parent process) ---------------------------------------------------

def mpiexec() -> str | None:
    """``mpiexec`` beside this Python, else on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.path.exists(beside) else shutil.which("mpiexec")


def launch(n_ranks: int, *args) -> dict:
    """Run the worker on ``n_ranks`` ranks; rank 0's figures."""
    command = [mpiexec(), "-n", str(n_ranks), sys.executable, os.path.abspath(__file__),
               "--worker", *args]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=ROOT)
    out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900,
                         check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@scenario("dist")
def dist_scenario(args) -> dict:
    """2 ranks x 1 CPU vs 1 process on the CNN step; allreduce vs raw mpi4py; the cost of
    the gradient reduction in a step."""
    if mpiexec() is None or importlib.util.find_spec("mpi4py") is None:
        print("dist: skipped (needs mpi4py and mpiexec: pip install 'minerva[dist]')")
        return {"skipped": "no mpi4py/mpiexec"}
    steps, repeat = (3 if args.quick else 10), args.repeat
    two = launch(2, "steps", "--steps", str(steps), "--repeat", str(repeat))
    bandwidth = launch(2, "bandwidth", "--repeat", str(max(repeat, 5)))
    return _report(steps, two, bandwidth)


def _report(steps: int, two: dict, bandwidth: dict) -> dict:
    ms = two
    table(f"dist: CNN step, global batch {BATCH}, {steps} steps per run",
          [(k, f"{v / steps * 1e3:.1f}") for k, v in ms.items()], ("run", "ms/step"))
    speedup = two["1 rank, full batch"] / two["2 ranks"]
    cost = two["2 ranks"] / two["2 ranks, no reduction"]
    cost_edit = two["2 ranks, edit"] / two["2 ranks, no reduction, edit"]
    rows = [(f"{mb} MB", f"{b['raw'] * 1e3:.2f}", f"{b['minerva'] * 1e3:.2f}",
             f"{b['raw'] / b['minerva']:.2f}") for mb, b in bandwidth.items()]
    table("dist: allreduce of float32 on 2 ranks", rows,
          ("size", "mpi4py ms", "minerva ms", "mpi4py/minerva"))
    worst = min(b["raw"] / b["minerva"] for b in bandwidth.values())
    print(f"  speedup 2 ranks / 1 process {speedup:.2f}x (goal >= {GOALS['speedup']}x)")
    print(f"  bandwidth vs mpi4py, worst size {worst:.2f}x (goal >= {GOALS['bandwidth']}x)")
    print(f"  step with / without reduction {cost:.3f}x, with the CpuDevice.submit edit "
          f"{cost_edit:.3f}x (goal <= {GOALS['allreduce_cost']}x)")
    return {"seconds": ms, "bandwidth": bandwidth,
            "ratios": {"speedup_2_ranks": speedup, "bandwidth_vs_mpi4py_worst": worst,
                       "allreduce_cost": cost, "allreduce_cost_with_edit": cost_edit}}


# ---- the worker (each rank) --------------------------------------------------------------

def _worker(argv) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=("steps", "bandwidth"))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    dist.init()
    mv.init()
    device = mv.create_cpu_device(threads=1)
    mv.set_device(device)
    result = {"steps": _steps, "bandwidth": _bandwidth}[args.what](args, device)
    if dist.rank() == 0:
        print("RESULT " + json.dumps(result), flush=True)
    mv.shutdown()


def _data(n_steps: int, batch: int = BATCH) -> list:
    rng = np.random.default_rng(0)
    return [(rng.random((batch, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, batch))
            for _ in range(n_steps)]


def _runner(step_class, device, data):
    """A run of ``step_class`` steps over ``data`` (fresh seed-0 weights, built once)."""
    with mv.device(device):
        mv.random.seed(0)
        params = train.attach_grads(mnist_cnn.APP.init_params())
        step = step_class(mnist_cnn.APP, [device], params, optim.SGD(params, 0.01, 0.9))

    def run():
        for x, y in data:
            loss = step(x, y)
        loss.wait()
    return run


def _without_reduction():
    """The 2-rank step without its communication: each rank steps on its own shard."""

    class NoReducer:
        def reduce(self):
            pass

    class LocalStep(dist_train.DistStep):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.reducer = NoReducer()

        def total_loss(self, loss):
            return loss
    return LocalStep


def _timed(functions: dict, repeat: int) -> dict:
    """Median seconds of each function, run in turns, ranks in step (a barrier first)."""
    samples = {name: [] for name in functions}
    for _ in range(repeat + 1):
        for name, function in functions.items():
            dist.barrier()
            start = time.perf_counter()
            function()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values[1:]) for name, values in samples.items()}


def _steps(args, device) -> dict:
    data = _data(args.steps)
    original = CpuDevice.submit

    def with_edit(run):
        def edited():
            device_patches.apply(cpu=True)
            try:
                run()
            finally:
                CpuDevice.submit = original
        return edited
    single = _runner(train.Step, device, data) if dist.rank() == 0 else (lambda: None)
    reduced = _runner(dist_train.DistStep, device, data)
    local = _runner(_without_reduction(), device, data)
    return _timed({"1 rank, full batch": single, "2 ranks": reduced,
                   "2 ranks, no reduction": local,
                   "2 ranks, edit": with_edit(reduced),
                   "2 ranks, no reduction, edit": with_edit(local)}, args.repeat)


def _bandwidth(args, device) -> dict:
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    result = {}
    for mb in SIZES_MB:
        host = np.ones((mb << 20) // 4, np.float32)
        out = np.empty_like(host)
        x = mv.array(host)

        def raw():
            comm.Allreduce(host, out, MPI.SUM)

        def ours():
            dist.allreduce(x).wait()
        result[mb] = _timed({"raw": raw, "minerva": ours}, args.repeat)
    return result


if __name__ == "__main__" and "--worker" in sys.argv:
    sys.argv.remove("--worker")
    _worker(sys.argv[1:])
