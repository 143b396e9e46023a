"""overlap: two independent chains of 512x512 float32 matmuls, one per CPU device, against
the same matmuls one after another in plain NumPy with BLAS on one thread. On a machine
with two free cores the two devices should run side by side (goal: >= 1.8x)."""
from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

import minerva as mv
from benchmarks.harness import interleaved, scenario, table

GOAL = 1.8


def _weights(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    return (rng.random((n, n), dtype=np.float32) / n).astype(np.float32)


def numpy_sequential(a: np.ndarray, n_chains: int, steps: int):
    def run():
        with threadpool_limits(1, user_api="blas"):
            for _ in range(n_chains):
                x = a
                for _ in range(steps):
                    x = x @ a
    return run


def minerva_parallel(a: np.ndarray, devices: list, steps: int):
    weights = []
    for dev in devices:
        with mv.device(dev):
            weights.append(mv.array(a))

    def run():
        outs = []
        for dev, w in zip(devices, weights):
            with mv.device(dev):
                x = w
                for _ in range(steps):
                    x = x @ w
                outs.append(x)
        mv.wait_for_all()
    return run


@scenario("overlap")
def overlap(args) -> dict:
    """Two chains of matmuls on two CPU devices vs one after another in NumPy."""
    n, steps = (256, 10) if args.quick else (512, 40)
    a = _weights(n)
    mv.shutdown()
    mv.init()
    devices = [mv.create_cpu_device() for _ in range(2)]
    seconds = interleaved({"numpy-sequential": numpy_sequential(a, 2, steps),
                           "minerva-2-devices": minerva_parallel(a, devices, steps)},
                          repeat=args.repeat)
    mv.shutdown()
    speedup = seconds["numpy-sequential"] / seconds["minerva-2-devices"]
    table(f"overlap: 2 chains x {steps} matmuls {n}x{n}",
          [(name, f"{s * 1e3:.1f} ms") for name, s in seconds.items()], ("system", "time"))
    print(f"  speedup {speedup:.2f}x (goal >= {GOAL}x)")
    return {"seconds": seconds, "ratios": {"speedup": speedup}}
