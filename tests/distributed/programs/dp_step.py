"""A data-parallel step over the ranks equals a single-process step on the combined batch.

Every rank runs ``apps/dist_train.DistStep`` (the CNN of apps/mnist_cnn.py, SGD with
momentum) for a few steps on its shard of the same global batches. Rank 0 also runs, in
this process, the single-process references: ``DataParallelStep`` over one CPU device per
rank (the same shards, gradients added in a fixed order: bitwise equal with 2 ranks,
where the sum of two is the same either way), and one device on the whole batch (equal
up to rounding). Then, with the proposed ``CpuDevice.submit`` edit applied (a collective
starts when it is ready, not after older compute), the first gradient bucket is on the
wire while the backward pass still runs. Prints ``OK <rank>``.
"""
from __future__ import annotations

import threading

import device_patches
import helpers  # noqa: F401  (paths)
import numpy as np
from helpers import check

import minerva as mv
import minerva.distributed as dist
from apps import dist_train, mnist_cnn, mnist_cnn_2gpu, train
from minerva import optim
from minerva.distributed import session as sessions

BATCH, N_STEPS = 24, 3


def batches(n: int):
    rng = np.random.default_rng(7)
    return [(rng.random((BATCH, 1, 28, 28), dtype=np.float32),
             rng.integers(0, 10, BATCH)) for _ in range(n)]


def run(step_class, devices, data) -> dict:
    """Parameters (NumPy) after ``step_class`` steps over ``data`` from seed-0 weights."""
    with mv.device(devices[0]):
        mv.random.seed(0)
        params = train.attach_grads(mnist_cnn.APP.init_params())
        opt = optim.SGD(params, lr=0.05, momentum=0.9)
        step = step_class(mnist_cnn.APP, devices, params, opt)
    for x, y in data:
        loss = step(x, y)
    loss.wait()
    return {name: p.to_numpy() for name, p in params.items()}, float(loss)


def check_equal_steps(rank, size, device, data):
    got, loss = run(dist_train.DistStep, [device], data)
    if rank != 0:
        return
    devices = [mv.create_cpu_device(threads=1) for _ in range(size)]
    tree, tree_loss = run(mnist_cnn_2gpu.DataParallelStep, devices, data)
    single, _ = run(train.Step, devices[:1], data)
    for name in got:
        if size == 2:
            check(np.array_equal(got[name], tree[name]), rank, f"{name} not bitwise equal")
        check(np.allclose(got[name], tree[name], rtol=1e-5, atol=1e-6), rank, name)
        check(np.allclose(got[name], single[name], rtol=1e-4, atol=1e-5), rank, name)
    check(np.isclose(loss, tree_loss, rtol=1e-5), rank, f"loss {loss} vs {tree_loss}")


def check_overlap(rank, device, data):
    """The first bucket is posted before the last gradient of the backward pass is done."""
    device_patches.apply(cpu=True)
    session = sessions.current()
    seen, post = {}, session.post

    def noting(job):
        if "first" not in seen:
            seen["first"] = _pending(seen["probe"])
        post(job)
    with mv.device(device):
        mv.random.seed(0)
        params = train.attach_grads(mnist_cnn.APP.init_params())
        reducer = dist.GradientReducer(params)
        x, y = data[0]
        train.backward_pass(mnist_cnn.APP, params, mv.array(x), mv.array(y), BATCH)
        seen["probe"] = params["w1"].grad + 0   # done when the backward pass is done
        session.post = noting
        with mv.autograd.pause():
            reducer.reduce()
        mv.wait_for_all()
    session.post = post
    check(seen.get("first") is True, rank, "the first bucket waited for the whole backward")


def _pending(x) -> bool:
    try:
        x.wait(timeout=0)
    except mv.WaitTimeoutError:
        return True
    return False


def main():
    dist.init()
    rank, size = dist.rank(), dist.size()
    device = mv.create_cpu_device(threads=1)
    data = batches(N_STEPS)
    check_equal_steps(rank, size, device, data)
    check_overlap(rank, device, data)
    check(threading.current_thread() is threading.main_thread(), rank, "thread")
    print(f"OK {rank}", flush=True)


if __name__ == "__main__":
    main()
