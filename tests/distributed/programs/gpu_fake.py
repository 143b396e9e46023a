"""GPU collectives against NumPy on the CUDA test double (``tests/support/fake_cuda.py``, lazy
streams: work runs only when waited for, in stream order), with the NCCL double
(``fake_nccl.py``: minerva's NcclLibrary over a fake ``cupy.cuda.nccl`` of one CuPy
version). Modes (``python gpu_fake.py MODE [CONTRACT]`` under mpiexec; ``CONTRACT``, 13 or
14, is the CuPy version whose contract the fake follows, by default the installed one's):

- ``nccl``: every rank on its own GPU, NCCL present: every collective goes through NCCL
  (the communicator is made once, with rank 0's unique id, on the rank's GPU), nothing is
  staged through the host;
- ``mixed``: rank 0 on a CPU device, the others on GPUs with NCCL present: the ranks
  agree to move everything over MPI, the GPU ranks staging through pinned memory;
- ``shared``: rank r on GPU ``r // 2`` (ranks 0 and 1 share a GPU), NCCL present: NCCL
  would refuse the duplicate GPU, so every rank stages every collective through the host
  and no communicator is made;
- ``init-hang`` / ``init-fail``: every rank on its own GPU, but rank 1's NCCL
  communicator creation never returns / fails at once: every rank's first collective
  fails with CommunicationLost (rank 1's at once for ``init-fail``, the others within
  MINERVA_DIST_TIMEOUT), and the next one at once. Prints ``LOST <rank> <seconds>``.

Prints ``OK <rank>`` (the first three modes).
"""
from __future__ import annotations

import sys
import time

import device_patches
import helpers
import numpy as np
from tests.support.fake_cuda import FakeCuda
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


def check_paths(mode, rank, layer, library, links):
    """NCCL carried every collective (``nccl``), or none and each was staged."""
    staged = [c for c in layer.of("d2h") if any(c[1] is ln.stream for ln in links.values())]
    reduced = [c for c in library.calls if c[0] in ("allreduce", "broadcast", "allgather")]
    made = [c for c in library.calls if c[0] == "communicator"]
    if mode == "nccl":
        check(len(reduced) >= len(CASES) and not staged, rank, f"{len(reduced)} {staged}")
        check(len(made) == 1 and made[0][3] == rank, rank, f"one comm on GPU {rank}: {made}")
    elif links:
        check(not reduced and not made and len(staged) >= len(CASES), rank,
              f"{reduced} {made} {len(staged)}")
    return len(reduced), len(staged)


def init_fails(rank):
    """The first collective is lost (the communicator cannot be made), then every one.
    Each rank stays until every rank could have seen its loss (a rank that fails at once
    would otherwise reach its bounded exit while the others still wait)."""
    start = first = time.monotonic()
    for what in ("first", "next"):
        try:
            dist.allreduce(mv.ones(3)).wait(timeout=60)
            check(False, rank, f"{what}: no error")
        except mv.OpError as err:
            cause = err.__cause__
            check(isinstance(cause, dist.CommunicationLost), rank, f"{what}: {cause!r}")
        if what == "first":
            print(f"LOST {rank} {time.monotonic() - start:.2f}", flush=True)
            start = time.monotonic()
    check(time.monotonic() - start < 1, rank, "the next collective failed at once")
    time.sleep(max(0.0, first + sessions.current().timeout + 1 - time.monotonic()))


def main():
    mode = sys.argv[1]
    contract = int(sys.argv[2]) if len(sys.argv) > 2 else None
    helpers.os.environ.setdefault("MINERVA_LOG", "warning")
    device_patches.apply(cpu=False)
    layer = FakeCuda(n_devices=4)
    gpu.load_cuda_layer = lambda: layer
    fault = mode[len("init-"):] if mode.startswith("init-") else None
    dist.init()
    rank = dist.rank()
    library = FakeNcclLibrary(layer, contract, init_fault=fault if rank == 1 else None)
    nccl.load_nccl = lambda: library
    on_gpu = mode != "mixed" or rank > 0
    ordinal = rank // 2 if mode == "shared" else rank
    device = mv.create_gpu_device(ordinal) if on_gpu else mv.create_cpu_device()
    mv.set_device(device)
    if fault:
        init_fails(rank)
        return
    run_cases(rank)
    run_buckets(rank)
    mv.wait_for_all()
    links = sessions.current().runner.gpu._links if on_gpu else {}
    n_nccl, n_staged = check_paths(mode, rank, layer, library, links)
    print(f"OK {rank} {mv.device_info(device)['kind']} nccl={n_nccl} staged={n_staged}",
          flush=True)


if __name__ == "__main__":
    main()
