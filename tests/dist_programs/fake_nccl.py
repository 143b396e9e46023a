"""A test double of NCCL (``minerva.distributed.nccl``'s seam) for GPU arrays of the CUDA
double (``tests/fake_cuda.py``), which are NumPy arrays. As real NCCL, each communicator
call is *queued* on the stream it is given (a kernel of the fake layer: it runs when the
stream reaches it, after what the stream waits for); when it runs, it does the collective
over a private MPI communicator (blocking), so "GPU" collectives of several ranks really
exchange data. Every call is logged in ``calls``.
"""
from __future__ import annotations

import numpy as np

from minerva.distributed.nccl import wire_dtype

TYPES = {"float16", "float32", "float64", "int8", "uint8", "int32", "uint32", "int64",
         "uint64"}


class FakeNcclLibrary:
    """The library: ``supports``, ``unique_id``, ``communicator``."""

    def __init__(self, layer, has_avg: bool = True):
        self.layer = layer
        self.has_avg = has_avg
        self.calls: list[tuple] = []
        self.comms: list = []

    def supports(self, dtype, op) -> bool:
        if op is None:
            return True
        if op == "mean" and not self.has_avg:
            return False
        return wire_dtype(dtype)[0].name in TYPES

    def unique_id(self) -> np.ndarray:
        self.calls.append(("unique_id",))
        return np.random.default_rng().integers(-128, 128, 128).astype(np.int64)

    def communicator(self, size, uid, rank, ordinal):
        from mpi4py import MPI
        comm = MPI.COMM_WORLD.Dup()
        ids = comm.allgather(bytes(np.asarray(uid, np.int64).tobytes()))
        assert all(i == ids[0] for i in ids), "the ranks got different NCCL unique ids"
        assert comm.Get_size() == size and comm.Get_rank() == rank
        self.calls.append(("communicator", size, rank, ordinal))
        fake = FakeNcclComm(self, comm)
        self.comms.append(fake)
        return fake


class FakeNcclComm:
    """One communicator: the collectives, run at once over MPI."""

    def __init__(self, library, comm):
        self.library, self.comm = library, comm
        self.aborted = self.destroyed = False

    def _queue(self, stream, kernel) -> None:
        layer = self.library.layer
        with layer.bind(stream.device_id, stream, None):
            layer.launch(stream, kernel)

    def allreduce(self, send, recv, op, stream):
        self.library.calls.append(("allreduce", op, send.dtype.name, send.size, stream))
        self._queue(stream, lambda: self._allreduce(send, recv, op))

    def broadcast(self, send, recv, root, stream):
        self.library.calls.append(("broadcast", root, send.nbytes, stream))
        self._queue(stream, lambda: self._broadcast(send, recv, root))

    def allgather(self, send, recv, stream):
        self.library.calls.append(("allgather", send.nbytes, stream))
        self._queue(stream, lambda: self._allgather(send, recv))

    def _allreduce(self, send, recv, op):
        from mpi4py import MPI
        wire, _ = wire_dtype(send.dtype)
        flat_send = np.ascontiguousarray(send).reshape(-1).view(wire)
        flat_recv = recv.reshape(-1).view(wire)
        mpi_op = {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op]
        source = MPI.IN_PLACE if np.shares_memory(send, recv) else flat_send
        self.comm.Allreduce(source, flat_recv, mpi_op)
        if op == "mean":
            np.divide(flat_recv, self.comm.Get_size(), out=flat_recv, casting="unsafe")

    def _broadcast(self, send, recv, root):
        if self.comm.Get_rank() == root and not np.shares_memory(send, recv):
            recv[...] = send
        self.comm.Bcast(recv.reshape(-1).view(np.uint8), root=root)

    def _allgather(self, send, recv):
        self.comm.Allgather(np.ascontiguousarray(send).reshape(-1).view(np.uint8),
                            recv.reshape(-1).view(np.uint8))

    def abort(self):
        self.aborted = True

    def destroy(self):
        self.destroyed = True
        self.comm.Free()
