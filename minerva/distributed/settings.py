"""Settings of ``minerva.distributed`` and how a process finds out it was launched by MPI.

``MINERVA_DIST_TIMEOUT`` (seconds, default 300): the longest a collective waits for the
other ranks before it fails with :class:`CommunicationLost`.
"""
from __future__ import annotations

import os

from minerva.common.config import parse_size

DEFAULT_TIMEOUT = 300.0
TIMEOUT_VAR = "MINERVA_DIST_TIMEOUT"
BUCKET_BYTES = 25 << 20
"""Gradients are packed into buckets of about this many bytes (as PyTorch DDP's)."""
FIRST_BUCKET_BYTES = 1 << 20
"""The first bucket (the last layers' gradients, ready first) is small, so its reduction
starts while the earlier layers' backward pass still runs (DDP does the same)."""
LAUNCHER_VARS = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
                 "MV2_COMM_WORLD_SIZE", "HYDI_CONTROL_FD")
"""Environment variables an MPI launcher (MPICH's hydra, Open MPI, MVAPICH, Slurm with
PMI) sets in the processes it starts."""


def timeout_from_env(environ=None) -> float:
    """``MINERVA_DIST_TIMEOUT`` in seconds (default 300); ValueError naming the setting
    for a value that is not a positive number."""
    env = os.environ if environ is None else environ
    raw = env.get(TIMEOUT_VAR, "")
    if raw.strip() == "":
        return DEFAULT_TIMEOUT
    return check_timeout(raw, TIMEOUT_VAR)


def check_timeout(raw, name: str = "timeout") -> float:
    """``raw`` as a positive number of seconds; ValueError naming ``name`` otherwise."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = -1.0
    if not value > 0 or isinstance(raw, bool):
        raise ValueError(f"bad value for {name}={raw!r}: expected a number of seconds > 0")
    return value


def check_bytes(raw, name: str) -> int:
    """A bucket size (``25M``, an int) as bytes >= 1; ValueError naming ``name``."""
    try:
        value = parse_size(raw)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad value for {name}={raw!r}: {exc}") from None
    if value < 1:
        raise ValueError(f"bad value for {name}={raw!r}: must be at least 1 byte")
    return value


def launched_by_mpi(environ=None) -> bool:
    """Whether an MPI launcher (``mpiexec``, ``srun``) started this process."""
    env = os.environ if environ is None else environ
    return any(var in env for var in LAUNCHER_VARS)
