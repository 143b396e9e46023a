"""NCCL through CuPy (``cupy.cuda.nccl``): the library seam of the GPU collectives.

:func:`load_nccl` is the seam: it returns an :class:`NcclLibrary`, or None when CuPy or
NCCL is missing or ``MINERVA_DIST_NCCL=0`` (GPU arrays are then staged through host
memory over MPI). Tests replace it with a double (``tests/fake_nccl.py``) that has the
same two small interfaces: the library (``supports``, ``unique_id``, ``communicator``)
and a communicator (``allreduce``, ``broadcast``, ``allgather`` on device arrays, each
queued on a stream; ``abort``; ``destroy``). This module and the GPU device are the only
ones that import ``cupy``, and only inside functions.
"""
from __future__ import annotations

import os

import numpy as np

from minerva.common.logging import get_logger

log = get_logger("minerva.distributed")
NCCL_VAR = "MINERVA_DIST_NCCL"
_TYPES = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64",
          "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
          "uint32": "NCCL_UINT32", "int64": "NCCL_INT64", "uint64": "NCCL_UINT64"}
_OPS = {"sum": "NCCL_SUM", "mean": "NCCL_AVG", "max": "NCCL_MAX", "min": "NCCL_MIN"}


def load_nccl():
    """The NCCL library over CuPy, or None (no CuPy, no NCCL, or ``MINERVA_DIST_NCCL=0``).
    Tests replace this function."""
    if os.environ.get(NCCL_VAR, "1").strip() in ("0", "false", "no", "off"):
        return None
    try:
        import cupy
        from cupy.cuda import nccl
    except Exception as err:  # any import failure means: no NCCL
        log.info("dist_nccl_missing", reason=repr(err))
        return None
    if not getattr(nccl, "available", True):
        log.info("dist_nccl_missing", reason="cupy.cuda.nccl.available is False")
        return None
    return NcclLibrary(nccl, cupy)


def wire_dtype(dtype) -> tuple:
    """``(element dtype, elements per array element)`` NCCL reduces ``dtype`` as
    (complex numbers as pairs of reals)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return np.dtype(f"f{dtype.itemsize // 2}"), 2
    return dtype, 1


class NcclLibrary:
    """``cupy.cuda.nccl`` behind the seam's interface."""

    def __init__(self, nccl, cupy):
        self.nccl = nccl
        self.cupy = cupy

    def supports(self, dtype, op) -> bool:
        """Whether NCCL can reduce (or, ``op`` None, move) arrays of ``dtype``."""
        if op is None:
            return True
        wire, _ = wire_dtype(dtype)
        return (_TYPES.get(wire.name) is not None and hasattr(self.nccl, _OPS[op])
                and hasattr(self.nccl, _TYPES[wire.name]))

    def unique_id(self) -> np.ndarray:
        """A new NCCL unique id, as int64 values (rank 0 makes it; MPI sends it)."""
        return np.asarray(self.nccl.get_unique_id(), np.int64)

    def communicator(self, size: int, uid: np.ndarray, rank: int, ordinal: int):
        """This rank's NCCL communicator on GPU ``ordinal`` (collective over the ranks)."""
        with self.cupy.cuda.Device(ordinal):
            comm = self.nccl.NcclCommunicator(size, tuple(int(v) for v in uid), rank)
        return NcclComm(self, comm)


class NcclComm:
    """One NCCL communicator; every call is queued on ``stream`` and returns at once."""

    def __init__(self, library: NcclLibrary, comm):
        self.library = library
        self.comm = comm

    def allreduce(self, send, recv, op: str, stream) -> None:
        """``recv`` = ``op`` over the ranks of ``send`` (``mean``: NCCL's average)."""
        nccl = self.library.nccl
        wire, per = wire_dtype(send.dtype)
        self.comm.allReduce(send.data.ptr, recv.data.ptr, send.size * per,
                            getattr(nccl, _TYPES[wire.name]), getattr(nccl, _OPS[op]),
                            stream.ptr)

    def broadcast(self, send, recv, root: int, stream) -> None:
        """``send`` of rank ``root`` into ``recv`` of every rank (bytes)."""
        self.comm.broadcast(send.data.ptr, recv.data.ptr, send.nbytes,
                            self.library.nccl.NCCL_UINT8, root, stream.ptr)

    def allgather(self, send, recv, stream) -> None:
        """Every rank's ``send`` bytes into ``recv``, rank after rank."""
        self.comm.allGather(send.data.ptr, recv.data.ptr, send.nbytes,
                            self.library.nccl.NCCL_UINT8, stream.ptr)

    def abort(self) -> None:
        """Stop what is queued (a rank stopped answering); the communicator is dead."""
        self.comm.abort()

    def destroy(self) -> None:
        """Free the communicator."""
        self.comm.destroy()
