"""Running a collective whose arrays are on the host (a CPU device, or GPU data staged
through pinned memory): pack a bucket into one buffer, call the transport, unpack.

Every function runs on the communication thread. ``staging`` keeps a few packing buffers
between calls (a gradient bucket has the same size every step).
"""
from __future__ import annotations

import collections

import numpy as np

N_STAGING = 4


class Staging:
    """Reusable flat host buffers, by dtype and length (the few most recent ones).
    Used by the communication thread only: no lock."""

    def __init__(self, allocate=None):
        self._buffers: collections.OrderedDict = collections.OrderedDict()
        self._allocate = allocate or (lambda nbytes: np.empty(nbytes, np.uint8))

    def get(self, dtype, n: int, slot: int = 0) -> np.ndarray:
        """A flat buffer of ``n`` elements of ``dtype`` (``slot`` tells apart buffers
        needed at once)."""
        dtype = np.dtype(dtype)
        key = (dtype.str, n, slot)
        buffer = self._buffers.pop(key, None)
        if buffer is None:
            buffer = self._allocate(max(n * dtype.itemsize, 1))[:n * dtype.itemsize]
            buffer = buffer.view(dtype)
        self._buffers[key] = buffer
        while len(self._buffers) > N_STAGING:
            self._buffers.popitem(last=False)
        return buffer


def offsets(arrays) -> list[tuple[int, int]]:
    """``(start, stop)`` in elements of each array in one flat buffer, in order."""
    spans, start = [], 0
    for a in arrays:
        spans.append((start, start + a.size))
        start += a.size
    return spans


def pack(arrays, flat: np.ndarray) -> None:
    """Copy ``arrays`` one after another into ``flat``."""
    for a, (start, stop) in zip(arrays, offsets(arrays)):
        flat[start:stop].reshape(a.shape)[...] = a


def unpack(flat: np.ndarray, arrays) -> None:
    """Copy the parts of ``flat`` back into ``arrays``."""
    for a, (start, stop) in zip(arrays, offsets(arrays)):
        a[...] = flat[start:stop].reshape(a.shape)


def run_host(transport, job, deadline: float, staging: Staging) -> None:
    """Run ``job`` (host arrays) through ``transport``."""
    collective = job.collective
    kind = collective.kind
    if kind == "barrier":
        transport.barrier(deadline)
    elif kind == "allgather":
        transport.allgather(np.ascontiguousarray(job.inputs[0]), job.outputs[0], deadline)
    elif kind == "broadcast":
        _broadcast(transport, job, deadline, staging)
    else:
        _allreduce(transport, job, deadline, staging)


def _allreduce(transport, job, deadline, staging) -> None:
    op = job.collective.op
    wire_op = "sum" if op == "mean" else op
    inputs, outputs = job.inputs, job.outputs
    if len(inputs) == 1 and _whole(outputs[0]):
        send, recv = np.ascontiguousarray(inputs[0]), outputs[0]
        if np.shares_memory(send, recv):
            send = recv
        transport.allreduce(send, recv, wire_op, deadline)
        if op == "mean":
            np.divide(recv, transport.size, out=recv, casting="unsafe")
        return
    flat = staging.get(outputs[0].dtype, sum(a.size for a in inputs))
    pack(inputs, flat)
    transport.allreduce(flat, flat, wire_op, deadline)
    if op == "mean":
        np.divide(flat, transport.size, out=flat, casting="unsafe")
    unpack(flat, outputs)


def _broadcast(transport, job, deadline, staging) -> None:
    inputs, outputs = job.inputs, job.outputs
    root = transport.rank == job.collective.root
    if len(inputs) == 1 and _whole(outputs[0]):
        if root and not np.shares_memory(inputs[0], outputs[0]):
            np.copyto(outputs[0], inputs[0])
        transport.broadcast(outputs[0], job.collective.root, deadline)
        return
    flat = staging.get(outputs[0].dtype, sum(a.size for a in inputs))
    if root:
        pack(inputs, flat)
    transport.broadcast(flat, job.collective.root, deadline)
    unpack(flat, outputs)


def _whole(array) -> bool:
    """Whether ``array`` is C-contiguous (a buffer MPI can take as it is)."""
    return array.flags.c_contiguous
