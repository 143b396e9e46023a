"""Failure cases, one per mode (``python failures.py MODE`` under mpiexec):

- ``mismatch``: shape, dtype, kind, op and root mismatches, and a rank whose input
  failed: each fails on every rank with an OpError of the right cause, and the
  collectives after it still work. Prints ``OK <rank>``.
- ``early``: the last rank leaves at once; the others' next collective fails within
  MINERVA_DIST_TIMEOUT with CommunicationLost, and so does every later one. The others
  print ``LOST <rank> <seconds>`` and exit with status 3.
- ``loop``: collectives for ever (for Ctrl-C); prints ``READY <rank>`` first.
"""
from __future__ import annotations

import os
import sys
import time

import helpers  # noqa: F401  (paths)
import numpy as np
from helpers import check

import minerva as mv
import minerva.distributed as dist
from minerva import builder
from minerva.ops import registry


def expect_failure(result, rank, cause_type, words: str, what: str):
    try:
        result.wait(timeout=60)
    except mv.OpError as err:
        cause = err.__cause__
        check(isinstance(cause, cause_type), rank, f"{what}: cause {cause!r}")
        check(words in str(cause), rank, f"{what}: {words!r} not in {cause}")
        return str(cause)
    check(False, rank, f"{what}: no error")


def still_works(rank):
    got = dist.allreduce(mv.full((2,), float(rank))).to_numpy()
    check(np.array_equal(got, np.full(2, float(sum(range(dist.size()))))), rank, "after")


def failing_op():
    def infer(x):
        return (registry.ArraySpec(x.shape, x.dtype),)

    def impl(xp, x, *, out):
        raise RuntimeError("this input failed on purpose")
    return registry.register("test_dist_failing", infer, impl)


def mismatch(rank, last):
    cases = [
        ("shape", lambda: dist.allreduce(mv.ones((2 + (rank == last), 3)))),
        ("dtype", lambda: dist.allreduce(mv.ones(3, dtype="f4" if rank else "f8"))),
        ("op", lambda: dist.allreduce(mv.ones(3), op="max" if rank == last else "sum")),
        ("kind", lambda: (dist.broadcast if rank == last else dist.allreduce)(mv.ones(3))),
        ("root", lambda: dist.broadcast(mv.ones(3), root=int(rank == last))),
    ]
    messages = []
    for name, issue in cases:
        messages.append(expect_failure(issue(), rank, dist.CollectiveMismatchError,
                                       "differs between ranks", name))
        still_works(rank)
    check("rank 0: allreduce(sum) of float64 (2, 3)" in messages[0], rank, messages[0])
    fail = failing_op()
    x = mv.ones(3)
    poisoned = builder.build(fail, [x]) if rank == last else x
    if rank == last:  # the failure of its own input
        expect_failure(dist.allreduce(poisoned), rank, RuntimeError, "on purpose", "own")
    else:
        expect_failure(dist.allreduce(poisoned), rank, dist.PeerInputError,
                       f"rank(s) [{last}]", "input failed")
    still_works(rank)
    print(f"OK {rank}", flush=True)


def early(rank, last):
    if rank == last:
        print(f"LEAVING {rank}", flush=True)
        return 0
    start = time.monotonic()
    expect_failure(dist.allreduce(mv.ones(3)), rank, dist.CommunicationLost,
                   "MINERVA_DIST_TIMEOUT", "rank gone")
    expect_failure(dist.allreduce(mv.ones(3)), rank, dist.CommunicationLost,
                   "lost earlier", "after the loss")
    print(f"LOST {rank} {time.monotonic() - start:.1f}", flush=True)
    return 3


def loop(rank):
    x = mv.ones((128, 128))
    print(f"READY {rank}", flush=True)
    i = 0
    while True:
        y = dist.allreduce(x @ x)
        i += 1
        if i % 8 == 0:
            y.wait()


def main():
    dist.init()
    rank, last = dist.rank(), dist.size() - 1
    mode = sys.argv[1]
    if mode == "mismatch":
        mismatch(rank, last)
        return 0
    if mode == "early":
        return early(rank, last)
    loop(rank)
    return 0


if __name__ == "__main__":
    sys.exit(main())
