"""What the programs run under ``mpiexec`` by tests/distributed/test_distributed_mpi.py share: the
path setup, every rank's test values (each rank can compute every rank's), the NumPy
expectation of each collective, and a check that names the rank."""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path[:0] = [ROOT, HERE]   # minerva, tests.support, and this folder's modules

import numpy as np  # noqa: E402


def value(rank: int, shape, dtype, salt: int = 0) -> np.ndarray:
    """Rank ``rank``'s input of a collective: small integers (exact in every dtype)."""
    rng = np.random.default_rng(1000 * salt + rank)
    data = rng.integers(-8, 9, size=shape)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return data > 0
    if dtype.kind == "u":
        data = np.abs(data)
    if dtype.kind == "c":
        return (data + 1j * rng.integers(-8, 9, size=shape)).astype(dtype)
    return data.astype(dtype)


def expected(kind: str, inputs: list, op=None, root: int = 0) -> np.ndarray:
    """What NumPy says the collective gives, from every rank's input."""
    stacked = np.stack(inputs)
    if kind == "allgather":
        return stacked
    if kind == "broadcast":
        return inputs[root]
    if op == "mean":
        return (stacked.sum(axis=0) / len(inputs)).astype(stacked.dtype)
    return {"sum": np.sum, "max": np.max, "min": np.min}[op](stacked, axis=0).astype(
        stacked.dtype)


def check(condition: bool, rank: int, message: str) -> None:
    """Fail this rank (and so the job) with ``message`` unless ``condition``."""
    if not condition:
        print(f"FAIL rank {rank}: {message}", flush=True)
        sys.stdout.flush()
        os._exit(1)


def check_equal(got, want, rank: int, what: str) -> None:
    """Exact equality of values, shape and dtype."""
    got = np.asarray(got)
    check(got.shape == want.shape and got.dtype == want.dtype
          and np.array_equal(got, want), rank, f"{what}: got {got!r}, want {want!r}")


def record_order(session) -> list:
    """Make the session's runner note the sequence number of every collective it runs;
    the list it appends to."""
    order, run = [], session.runner.run

    def noting(job):
        order.append(job.seq)
        run(job)
    session.runner.run = noting
    return order
