"""``minerva.distributed``: data-parallel training over MPI (mpi4py), and NCCL on GPUs.

    import minerva.distributed as dist     # launched with: mpiexec -n 4 python train.py
    dist.init()                            # from the MPI launcher; else rank 0 of 1
    g = dist.allreduce(g, op="mean")       # an NArray at once; runs in the background
    dist.barrier(); dist.shutdown()

Collectives are ops of the DAG. Each returns its NArray at once; the op runs when its
inputs are computed, on this process's one communication thread, strictly in the order
the collectives were issued. **Every rank must issue the same collectives, with the same
shapes and dtypes, in the same order** (MPI's rule), from one thread. Work that does not
depend on a collective runs meanwhile. A mismatch between ranks fails that collective on
every rank (an OpError whose cause is a CollectiveMismatchError); a rank that stops
answering makes the others fail within ``MINERVA_DIST_TIMEOUT`` seconds (default 300).
See doc/distributed.md.
"""
from __future__ import annotations

from minerva.distributed import session as _session
from minerva.distributed.buckets import (  # noqa: F401
    GradientReducer, collective_many, parameters, plan_buckets, sync_params)
from minerva.distributed.errors import (  # noqa: F401
    CollectiveMismatchError, CommunicationLost, DistributedError, PeerInputError)
from minerva.distributed.issue import as_arrays, build_collective
from minerva.distributed.settings import BUCKET_BYTES

__all__ = ["init", "is_initialized", "rank", "size", "allreduce", "allreduce_many",
           "broadcast", "broadcast_many", "allgather", "barrier", "shutdown",
           "GradientReducer", "sync_params", "DistributedError", "CollectiveMismatchError",
           "CommunicationLost", "PeerInputError"]


def init(timeout: float | None = None) -> None:
    """Join the ranks the MPI launcher started (a process started without one is rank 0
    of 1, and MPI is not loaded). ``timeout`` (seconds) overrides
    ``MINERVA_DIST_TIMEOUT``. Calling it again does nothing."""
    _session.init(timeout)


def is_initialized() -> bool:
    """Whether ``init`` was called (and ``shutdown`` not since)."""
    return _session.running() is not None


def rank() -> int:
    """This process's rank, 0 .. size() - 1."""
    return _session.current().rank


def size() -> int:
    """The number of ranks."""
    return _session.current().size


def allreduce(x, op: str = "sum"):
    """The element-wise ``op`` (``"sum"``, ``"mean"``, ``"max"``, ``"min"``) of ``x``
    over every rank: a new NArray on ``x``'s device, returned at once."""
    (x,) = as_arrays([x], "allreduce")
    return build_collective("allreduce", [x], op)


def allreduce_many(arrays, op: str = "sum", bucket_bytes=BUCKET_BYTES) -> list:
    """:func:`allreduce` of each array, packed into buckets of about ``bucket_bytes``
    (one collective per bucket); new NArrays, in order."""
    return collective_many("allreduce", arrays, op, bucket_bytes=bucket_bytes)


def broadcast(x, root: int = 0):
    """Rank ``root``'s ``x`` on every rank (every rank passes an ``x`` of the same shape
    and dtype): a new NArray."""
    (x,) = as_arrays([x], "broadcast")
    return build_collective("broadcast", [x], root=root)


def broadcast_many(arrays, root: int = 0, bucket_bytes=BUCKET_BYTES) -> list:
    """:func:`broadcast` of each array, in buckets; new NArrays, in order."""
    return collective_many("broadcast", arrays, root=root, bucket_bytes=bucket_bytes)


def allgather(x):
    """Every rank's ``x`` stacked on a new axis 0 (row ``r`` is rank ``r``'s)."""
    (x,) = as_arrays([x], "allgather")
    return build_collective("allgather", [x])


def barrier(timeout: float | None = None) -> None:
    """Block until every rank has reached this barrier (and every collective issued
    before it has run)."""
    build_collective("barrier", []).wait(timeout)


def shutdown(timeout: float | None = 30.0) -> None:
    """Let the collectives issued so far run, then stop the communication thread. The
    runtime (``mv.shutdown``) is not touched; MPI is finalized at exit."""
    _session.shutdown(timeout)
