"""The header each rank sends before a collective's data: what it is about to do, as a
fixed-size int64 array (no pickle). Every rank gathers every header and checks them the
same way, so a mismatch fails the collective on every rank alike, and the ranks agree
on how to move the data (NCCL or MPI).

Layout (``HEADER_LEN`` int64): magic, sequence number, kind, op, root, dtype, number of
arrays, number of elements, checksum of the shapes, status, place (0 CPU, 1 GPU),
whether NCCL can carry it, GPU ordinal, ndim and the first two dimensions of the first
array (for messages), and the GPU's identity (its host and PCI bus, see
``nccl.gpu_identity``; 0 when NCCL cannot carry it): NCCL refuses a communicator in which
two ranks use the same GPU, so ranks that share one stage through the host instead.
"""
from __future__ import annotations

import zlib

import numpy as np

from minerva.distributed.errors import CollectiveMismatchError, PeerInputError

HEADER_LEN = 17
MAGIC = 0x6D696E6572766131  # "minerva1"
KINDS = ("allreduce", "broadcast", "allgather", "barrier")
OPS = ("sum", "mean", "max", "min")
OK, FAILED = 0, 1
CPU, GPU = 0, 1
(_MAGIC, SEQ, KIND, OP, ROOT, DTYPE, N_ARRAYS, N_ELEMENTS, SHAPES, STATUS, PLACE, NCCL,
 ORDINAL, NDIM, DIM0, DIM1, GPU_ID) = range(HEADER_LEN)
AGREED = (KIND, OP, ROOT, DTYPE, N_ARRAYS, N_ELEMENTS, SHAPES)
"""Fields every rank's header must hold alike."""


def dtype_code(dtype) -> int:
    """``dtype.str`` (``'<f4'``) packed into an int64."""
    return int.from_bytes(np.dtype(dtype).str.encode("ascii").ljust(8, b"\0"), "little")


def dtype_name(code: int) -> str:
    """The dtype name a :func:`dtype_code` stands for."""
    text = int(code).to_bytes(8, "little").rstrip(b"\0").decode("ascii", "replace")
    try:
        return np.dtype(text).name
    except TypeError:
        return text or "?"


def shapes_checksum(shapes) -> int:
    """A checksum of a list of shapes, equal on every rank for equal shapes."""
    flat = []
    for shape in shapes:
        flat.extend((len(shape),) + tuple(shape))
    return zlib.crc32(np.asarray(flat, np.int64).tobytes())


def encode(seq: int, kind: str, op: str | None, root: int, dtype, shapes: list,
           status: int = OK, place: int = CPU, nccl: bool = False,
           ordinal: int = -1, gpu_id: int = 0) -> np.ndarray:
    """One rank's header for collective number ``seq``."""
    header = np.zeros(HEADER_LEN, np.int64)
    first = tuple(shapes[0]) if shapes else ()
    header[[_MAGIC, SEQ, KIND, OP, ROOT, DTYPE]] = (
        MAGIC, seq, KINDS.index(kind), OPS.index(op) if op else -1, root,
        dtype_code(dtype))
    header[[N_ARRAYS, N_ELEMENTS, SHAPES, STATUS, PLACE, NCCL, ORDINAL, NDIM]] = (
        len(shapes), sum(int(np.prod(s, dtype=np.int64)) for s in shapes),
        shapes_checksum(shapes), status, place, int(nccl), ordinal, len(first))
    header[DIM0], header[DIM1] = (list(first[:2]) + [-1, -1])[:2]
    header[GPU_ID] = gpu_id
    return header


def describe(header) -> str:
    """``allreduce(sum) of float32 (64, 10)``: one header, for messages."""
    kind = KINDS[int(header[KIND])] if 0 <= header[KIND] < len(KINDS) else "?"
    what = kind
    if header[OP] >= 0:
        what += f"({OPS[int(header[OP])]})"
    elif kind == "broadcast":
        what += f"(root={int(header[ROOT])})"
    if kind == "barrier":
        return what
    dtype = dtype_name(header[DTYPE])
    if header[N_ARRAYS] != 1:
        return f"{what} of {int(header[N_ARRAYS])} {dtype} arrays, " \
               f"{int(header[N_ELEMENTS])} elements"
    dims = [int(d) for d in header[DIM0:DIM1 + 1][:int(header[NDIM])]]
    shape = "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "")
    shape += ", ...)" if header[NDIM] > 2 else ")"
    return f"{what} of {dtype} {shape}"


def check(table: np.ndarray, seq: int) -> None:
    """Raise, alike on every rank, unless all headers of ``table`` (one row per rank)
    describe the same collective, and every rank's input is there. (Every rank's header
    is its ``seq``-th: a rank that issued one collective more or less shows up as a
    mismatch here, or as a timeout at its last collective.)"""
    if np.any(table[:, _MAGIC] != MAGIC):
        bad = [r for r in range(len(table)) if table[r, _MAGIC] != MAGIC]
        raise CollectiveMismatchError(f"collective #{seq}: rank(s) {bad} sent no minerva "
                                      "header (is every rank running minerva?)")
    failed = [r for r in range(len(table)) if table[r, STATUS] != OK]
    if failed:
        raise PeerInputError(f"collective #{seq} ({describe(table[failed[0]])}) could not "
                             f"run: its input failed or was cancelled on rank(s) {failed}")
    if np.any(table[:, AGREED] != table[0, AGREED]):
        ranks = "; ".join(f"rank {r}: {describe(h)}" for r, h in enumerate(table))
        raise CollectiveMismatchError(
            f"collective #{seq} differs between ranks ({ranks}); every rank must issue the "
            "same collectives, with the same shapes and dtypes, in the same order")


def use_nccl(table: np.ndarray) -> bool:
    """Whether every rank's data is on a GPU, NCCL can carry it everywhere, and every
    rank named its GPU, each another (the same decision on every rank: all see the same
    table)."""
    return bool(np.all(table[:, PLACE] == GPU) and np.all(table[:, NCCL] == 1)
                and np.all(table[:, GPU_ID] != 0) and not shares_gpu(table))


def shares_gpu(table: np.ndarray) -> bool:
    """Whether two ranks report the same GPU (which NCCL refuses in one communicator)."""
    return len(np.unique(table[:, GPU_ID])) < len(table)


def gpu_key(table: np.ndarray) -> tuple:
    """The GPUs the ranks use for this collective (one NCCL communicator per key)."""
    return tuple(int(o) for o in table[:, ORDINAL])
