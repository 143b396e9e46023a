"""NCCL through CuPy (``cupy.cuda.nccl``): the library seam of the GPU collectives.

:func:`load_nccl` is the seam: it returns an :class:`NcclLibrary`, or None when CuPy or
NCCL is missing or ``MINERVA_DIST_NCCL=0`` (GPU arrays are then staged through host
memory over MPI). It has two small interfaces: the library (``supports``, ``unique_id``,
``communicator``, ``device_identity``) and a communicator (``allreduce``, ``broadcast``,
``allgather`` on device arrays, each queued on a stream; ``abort``; ``destroy``). This
module and the GPU device are the only ones that import ``cupy``, and only inside
functions.

CuPy 13 and 14 differ in NCCL's unique id: ``get_unique_id()`` returns a tuple of 128 C
``char`` values in CuPy 13 and 128 ``bytes`` in CuPy 14, and ``NcclCommunicator`` takes
exactly that type. The library hands the id around as its 128 bytes (a uint8 array, which
MPI broadcasts) and gives ``NcclCommunicator`` the form the installed CuPy takes.

Tests drive this library over a double of ``cupy.cuda.nccl`` that follows either
contract (``tests/distributed/programs/fake_nccl.py``); only the data calls, which take device
pointers, are replaced there (``comm_class``).
"""
from __future__ import annotations

import hashlib
import os
import socket

import numpy as np

from minerva.common.logging import get_logger

log = get_logger("minerva.distributed")
NCCL_VAR = "MINERVA_DIST_NCCL"
_TYPES = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64",
          "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
          "uint32": "NCCL_UINT32", "int64": "NCCL_INT64", "uint64": "NCCL_UINT64"}
_OPS = {"sum": "NCCL_SUM", "mean": "NCCL_AVG", "max": "NCCL_MAX", "min": "NCCL_MIN"}
UNIQUE_ID_BYTES = 128


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


def id_bytes(raw) -> np.ndarray:
    """NCCL's unique id as its 128 bytes (uint8), from what ``get_unique_id`` returned:
    ``bytes`` (CuPy 14) or a tuple of C ``char`` values, signed or not (CuPy 13)."""
    if isinstance(raw, (bytes, bytearray)):
        uid = np.frombuffer(bytes(raw), np.uint8).copy()
    else:
        uid = (np.asarray(raw, np.int64) & 0xFF).astype(np.uint8)
    if uid.shape != (UNIQUE_ID_BYTES,):
        raise ValueError(f"an NCCL unique id has {UNIQUE_ID_BYTES} bytes, not {uid.size}")
    return uid


def id_forms(uid) -> list:
    """The forms of the id ``uid`` (128 bytes) ``NcclCommunicator`` may take, in the order
    :meth:`NcclLibrary.communicator` tries them: ``bytes`` (CuPy 14), then a tuple of C
    ``char`` values, signed (CuPy 13 where ``char`` is signed, as on x86) or unsigned (as
    on ARM)."""
    uid = np.ascontiguousarray(uid, np.uint8)
    return [uid.tobytes(), tuple(int(v) for v in uid.view(np.int8)),
            tuple(int(v) for v in uid)]


def gpu_identity(host: str, pci_bus_id: str) -> int:
    """A non-zero int64 naming one GPU among every rank's (as NCCL tells GPUs apart: the
    host and the PCI bus); equal for two ranks only when they use the same GPU."""
    text = f"{host}/{pci_bus_id.strip().upper()}".encode()
    value = int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little",
                           signed=True)
    return value or 1


class NcclComm:
    """One NCCL communicator; every call is queued on ``stream`` and returns at once."""

    def __init__(self, library, comm):
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


class NcclLibrary:
    """``cupy.cuda.nccl`` behind the seam's interface."""

    comm_class = NcclComm
    """What wraps a CuPy communicator (a double replaces the data calls)."""

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
        """A new NCCL unique id, as its 128 bytes (rank 0 makes it; MPI sends it)."""
        return id_bytes(self.nccl.get_unique_id())

    def communicator(self, size: int, uid: np.ndarray, rank: int, ordinal: int):
        """This rank's NCCL communicator on GPU ``ordinal``, from the id's 128 bytes
        ``uid``: blocks until every rank created its own (``ncclCommInitRank``)."""
        with self.cupy.cuda.Device(ordinal):
            comm = _first_accepted(
                lambda form: self.nccl.NcclCommunicator(size, form, rank), id_forms(uid))
        return self.comm_class(self, comm)

    def device_identity(self, ordinal: int) -> int:
        """:func:`gpu_identity` of this process's GPU ``ordinal``."""
        bus = self.cupy.cuda.Device(ordinal).pci_bus_id
        return gpu_identity(socket.gethostname(), bus)


def _first_accepted(make, forms: list):
    """``make(form)`` for the first form of the id the installed CuPy accepts. CuPy checks
    the id's type (TypeError) and each C ``char`` (OverflowError) before it calls NCCL,
    so a refused form started nothing."""
    refused = []
    for form in forms:
        try:
            return make(form)
        except (TypeError, OverflowError) as err:
            refused.append(err)
    raise TypeError("cupy.cuda.nccl.NcclCommunicator refused the unique id as bytes and "
                    f"as a tuple of chars: {'; '.join(map(repr, refused))}") from refused[0]
