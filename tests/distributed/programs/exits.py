"""How a rank ends, one way per mode (``python exits.py MODE`` under mpiexec): the job's
exit status must say whether a rank failed.

After a first all-reduce every rank agrees on, the last rank ends as MODE says:

- ``raise``: an uncaught exception;
- ``exit3``: ``sys.exit(3)``;
- ``kernel``: the kernel of the op that feeds its next collective raises, and the rank
  waits for that collective without catching the OpError;
- ``kill``: SIGKILL, sent to itself;
- ``hang``: it stops answering for ``HANG_S`` seconds (past the others' timeouts), then
  ends normally;
- ``clean``: it goes on like the others (every rank ends with ``sys.exit(0)``).

The other ranks go on issuing collectives (one, or two after ``kernel``: the first fails
with PeerInputError). Once one fails with CommunicationLost (MINERVA_DIST_TIMEOUT is
short) they catch it, print ``LOST <rank>`` and end normally: ``DONE <rank>``, then
``sys.exit(0)``.
"""
from __future__ import annotations

import os
import signal
import sys
import time

import helpers  # noqa: F401  (paths)
import numpy as np
from helpers import check

import minerva as mv
import minerva.distributed as dist
from minerva import builder
from minerva.ops import registry

HANG_S = 20.0


def failing_input(x):
    """``x`` through an op whose kernel raises."""
    def infer(a):
        return (registry.ArraySpec(a.shape, a.dtype),)

    def impl(xp, a, *, out):
        raise RuntimeError("this kernel failed on purpose")
    return builder.build(registry.register("test_dist_exit_kernel", infer, impl), [x])


def first_allreduce(rank: int, size: int) -> None:
    got = dist.allreduce(mv.full((3,), float(rank))).to_numpy()
    check(np.array_equal(got, np.full(3, float(sum(range(size))))), rank, "first")


def end_last_rank(mode: str, rank: int) -> None:
    """The last rank ends as ``mode`` says (it never returns, but in ``clean``)."""
    if mode == "raise":
        raise RuntimeError(f"rank {rank} failed on purpose")
    if mode == "exit3":
        sys.exit(3)
    if mode == "kernel":
        dist.allreduce(failing_input(mv.ones(3))).wait(timeout=60)  # raises OpError
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "hang":
        time.sleep(HANG_S)
        sys.exit(0)


def survive(mode: str, rank: int) -> None:
    """Go on issuing collectives until one reports the loss of the last rank."""
    if mode == "kernel":
        try:
            dist.allreduce(mv.ones(3)).wait(timeout=60)
        except mv.OpError as err:
            check(isinstance(err.__cause__, dist.PeerInputError), rank, repr(err.__cause__))
    try:
        dist.allreduce(mv.ones(3)).wait(timeout=60)
    except mv.OpError as err:
        check(isinstance(err.__cause__, dist.CommunicationLost), rank, repr(err.__cause__))
        print(f"LOST {rank}", flush=True)
        return
    check(False, rank, "the collective after the last rank ended did not fail")


def main() -> int:
    dist.init()
    rank, last, mode = dist.rank(), dist.size() - 1, sys.argv[1]
    first_allreduce(rank, dist.size())
    if mode == "clean":
        first_allreduce(rank, dist.size())
    elif rank == last:
        end_last_rank(mode, rank)
    else:
        survive(mode, rank)
    print(f"DONE {rank}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
