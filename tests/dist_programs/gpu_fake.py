"""GPU collectives against NumPy on the CUDA test double (``tests/fake_cuda.py``, lazy
streams: work runs only when waited for, in stream order), with the NCCL double
(``fake_nccl.py``). Modes (``python gpu_fake.py MODE`` under mpiexec):

- ``nccl``: every rank on a GPU, NCCL present: every collective goes through NCCL (the
  communicator is made once, with rank 0's unique id), nothing is staged through the host;
- ``mixed``: rank 0 on a CPU device, the others on GPUs with NCCL present: the ranks
  agree to move everything over MPI, the GPU ranks staging through pinned memory.

Prints ``OK <rank>``.
"""
from __future__ import annotations

import sys

import device_patches
import helpers
import numpy as np
from fake_cuda import FakeCuda
from fake_nccl import FakeNcclLibrary
from helpers import check, check_equal, expected, value

import minerva as mv
import minerva.distributed as dist
from minerva.device import gpu
from minerva.distributed import nccl
from minerva.distributed import session as sessions

CASES = [("allreduce", "sum", "float32", (3, 4)), ("allreduce", "mean", "float32", (5,)),
         ("allreduce", "max", "float64", (2, 3)), ("allreduce", "min", "int64", (4,)),
         ("allreduce", "sum", "complex64", (3,)), ("allreduce", "sum", "float16", (6,)),
         ("broadcast", None, "float32", (2, 2)), ("broadcast", None, "bool", (5,)),
         ("allgather", None, "float32", (2, 3)), ("allgather", None, "int32", ())]


def every_rank(shape, dtype, salt):
    return [value(r, shape, dtype, salt) for r in range(dist.size())]


def run_cases(rank):
    results = []
    for salt, (kind, op, dtype, shape) in enumerate(CASES):
        inputs = every_rank(shape, dtype, salt)
        x = mv.array(inputs[rank])
        root = dist.size() - 1
        if kind == "allreduce":
            got = dist.allreduce(x, op=op)
        elif kind == "broadcast":
            got = dist.broadcast(x, root=root)
        else:
            got = dist.allgather(x)
        results.append((got, expected(kind, inputs, op, root), f"{kind} {op} {dtype}"))
    for got, want, what in results:
        check_equal(got.to_numpy(), want, rank, what)


def run_buckets(rank):
    shapes = [(3,), (2, 5), (4, 4), (), (50,)]
    inputs = [every_rank(shape, "float32", 40 + i) for i, shape in enumerate(shapes)]
    got = dist.allreduce_many([mv.array(p[rank]) for p in inputs], bucket_bytes=64)
    for g, per_rank in zip(got, inputs):
        check_equal(g.to_numpy(), expected("allreduce", per_rank, "sum"), rank, "bucket")
    params = {f"p{i}": mv.array(p[rank]) for i, p in enumerate(inputs)}
    for p in params.values():
        p.attach_grad()
        p.grad[...] = p
    dist.GradientReducer(params, bucket_bytes=64, first_bucket_bytes=16).reduce()
    for p, per_rank in zip(params.values(), inputs):
        want = expected("allreduce", per_rank, "sum")
        check_equal(p.grad.to_numpy(), want, rank, "grads")


def main():
    mode = sys.argv[1]
    helpers.os.environ.setdefault("MINERVA_LOG", "warning")
    device_patches.apply(cpu=False)
    layer = FakeCuda(n_devices=4)
    gpu.load_cuda_layer = lambda: layer
    library = FakeNcclLibrary(layer)
    nccl.load_nccl = lambda: library
    dist.init()
    rank = dist.rank()
    on_gpu = mode == "nccl" or rank > 0
    device = mv.create_gpu_device(rank) if on_gpu else mv.create_cpu_device()
    mv.set_device(device)
    run_cases(rank)
    run_buckets(rank)
    mv.wait_for_all()
    links = sessions.current().runner.gpu._links if on_gpu else {}
    staged = [c for c in layer.of("d2h") if any(c[1] is ln.stream for ln in links.values())]
    reduced = [c for c in library.calls if c[0] in ("allreduce", "broadcast", "allgather")]
    if mode == "nccl":
        check(len(reduced) >= len(CASES) and not staged, rank, f"{len(reduced)} {staged}")
        check(sum(c[0] == "communicator" for c in library.calls) == 1, rank, "one comm")
    elif on_gpu:
        check(not reduced and len(staged) >= len(CASES), rank, f"{reduced} {len(staged)}")
    print(f"OK {rank} {mv.device_info(device)['kind']} nccl={len(reduced)} "
          f"staged={len(staged)}", flush=True)


if __name__ == "__main__":
    main()
