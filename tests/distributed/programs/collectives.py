"""Every collective against NumPy, issue order, and overlap with compute (any number of
ranks). Prints ``OK <rank>``."""
from __future__ import annotations

import time

import helpers
import numpy as np
from helpers import check, check_equal, expected, value

import minerva as mv
import minerva.distributed as dist
from minerva.device.cpu.blas import usable_cores
from minerva.distributed import session as sessions

SHAPES = [(), (5,), (3, 4, 2), (0, 3)]
REDUCE = {"float32": ("sum", "mean", "max", "min"),
          "float64": ("sum", "mean", "max", "min"),
          "int32": ("sum", "max", "min"), "uint8": ("max", "min"), "int64": ("sum",),
          "float16": ("sum", "max"), "complex128": ("sum", "mean")}


def every_rank(shape, dtype, salt=0):
    return [value(r, shape, dtype, salt) for r in range(dist.size())]


def check_allreduce(rank):
    results = []
    for salt, (dtype, ops) in enumerate(REDUCE.items()):
        for shape in SHAPES:
            inputs = every_rank(shape, dtype, salt)
            for op in ops:
                got = dist.allreduce(mv.array(inputs[rank]), op=op)
                results.append((got, expected("allreduce", inputs, op), f"{op} {dtype}"))
    for got, want, what in results:     # issued all at once, read afterwards
        check_equal(got.to_numpy(), want, rank, f"allreduce {what} {want.shape}")


def check_views(rank):
    inputs = every_rank((4, 6), "float64", 7)
    x = mv.array(inputs[rank])
    got = dist.allreduce(x.T).to_numpy()
    check_equal(got, expected("allreduce", [a.T for a in inputs], "sum"), rank, "view .T")
    got = dist.allreduce(x[1:3]).to_numpy()
    check_equal(got, expected("allreduce", [a[1:3] for a in inputs], "sum"), rank, "slice")


def check_broadcast_allgather(rank):
    for dtype in ("float32", "int64", "bool", "complex64"):
        for shape in ((), (3, 2)):
            inputs = every_rank(shape, dtype, 3)
            x = mv.array(inputs[rank])
            for root in range(dist.size()):
                check_equal(dist.broadcast(x, root=root).to_numpy(),
                            expected("broadcast", inputs, root=root), rank, f"bcast {root}")
            check_equal(dist.allgather(x).to_numpy(), expected("allgather", inputs),
                        rank, f"allgather {dtype} {shape}")


def check_buckets(rank):
    specs = [((3,), "float32"), ((2, 5), "float32"), ((7,), "float64"), ((4, 4), "float32"),
             ((), "float32"), ((100,), "float32")]
    inputs = [every_rank(shape, dtype, 10 + i) for i, (shape, dtype) in enumerate(specs)]
    arrays = [mv.array(per_rank[rank]) for per_rank in inputs]
    for bucket_bytes in (64, 25 << 20):
        got = dist.allreduce_many(arrays, op="sum", bucket_bytes=bucket_bytes)
        for g, per_rank in zip(got, inputs):
            want = expected("allreduce", per_rank, "sum")
            check_equal(g.to_numpy(), want, rank, "bucket")
    got = dist.broadcast_many(arrays, root=dist.size() - 1, bucket_bytes=64)
    for g, per_rank in zip(got, inputs):
        check_equal(g.to_numpy(), per_rank[-1], rank, "broadcast_many")


def check_issue_order(rank, order):
    """A collective whose input is slow runs before a later one that is ready first."""
    del order[:]
    x = mv.array(np.eye(200) * (rank + 1))
    slow = x
    for _ in range(20):
        slow = slow @ x / (rank + 1)
    first = dist.allreduce(slow)
    second = dist.allreduce(mv.array(np.full(3, rank, np.float64)))
    check_equal(second.to_numpy(), np.full(3, sum(range(dist.size())), np.float64), rank,
                "second")
    check(np.allclose(first.to_numpy(), np.eye(200) * sum(range(1, dist.size() + 1))),
          rank, "first")
    check(order == sorted(order) and len(order) == 2, rank, f"run order {order}")


def check_overlap(rank):
    """A collective issued before independent compute finishes while it still runs."""
    x = mv.array(np.random.default_rng(rank).random((256, 256)))
    reduced = dist.allreduce(mv.ones((1000,)))
    y = x
    for _ in range(60):
        y = mv.tanh(y @ x)
    reduced.wait()
    t_reduced = time.perf_counter()
    y.wait()
    t_compute = time.perf_counter()
    check(t_reduced < t_compute, rank, "the collective waited for unrelated compute")


def check_cores_shared(rank, made_before_init):
    """The ranks on this host share its cores: each rank's CPU devices get their part,
    also a device made before ``init``."""
    per_rank = max(1, usable_cores() // dist.size())   # every rank runs on this host
    got = mv.device_info(made_before_init)["blas_threads"]
    check(got == per_rank, rank, f"the device has {got} threads, not {per_rank}")
    second = mv.create_cpu_device()
    for device in (made_before_init, second):
        got = mv.device_info(device)["blas_threads"]
        want = max(1, per_rank // 2)
        check(got == want, rank, f"device {device} has {got} threads, not {want}")


def main():
    made_before_init = mv.create_cpu_device()
    dist.init()
    rank = dist.rank()
    check_cores_shared(rank, made_before_init)
    mv.set_device(made_before_init)
    order = helpers.record_order(sessions.current())
    check_allreduce(rank)
    check_views(rank)
    check_broadcast_allgather(rank)
    check_buckets(rank)
    check_issue_order(rank, order)
    check_overlap(rank)
    dist.barrier(timeout=30)
    check(dist.size() == int(helpers.os.environ.get("PMI_SIZE", dist.size())), rank, "size")
    print(f"OK {rank}", flush=True)


if __name__ == "__main__":
    main()
