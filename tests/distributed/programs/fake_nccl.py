"""A test double of NCCL through CuPy, for GPU arrays of the CUDA double
(``tests/support/fake_cuda.py``, which are NumPy arrays). It has two levels:

- :class:`FakeNcclModule` stands for ``cupy.cuda.nccl`` and follows the contract of one
  CuPy version (``contract`` 13 or 14; by default the installed CuPy's, else 14):
  ``get_unique_id()`` returns a tuple of 128 C ``char`` values (CuPy 13) or 128 bytes
  (CuPy 14); ``NcclCommunicator(ndev, commId, rank)`` takes exactly that type (anything
  else: TypeError; CuPy 13 also refuses a value out of the C ``char`` range with
  OverflowError, CuPy 14 a length other than 128 with ValueError). As
  ``ncclCommInitRank``, the constructor blocks until all ``ndev`` ranks came (a rendezvous
  through files named after the unique id), on the thread's current device (set by
  :class:`FakeCupy`'s ``cuda.Device``), and fails on every rank when two ranks are on the
  same GPU of one host ("Duplicate GPU detected"). ``init_fault`` makes this rank's init
  never return (``"hang"``) or fail at once (``"fail"``); ``init_gate`` holds it until set.
- :class:`FakeNcclLibrary` is minerva's own :class:`~minerva.distributed.nccl.NcclLibrary`
  over that module and :class:`FakeCupy`, so the real code makes the unique id, turns it
  into the form the module takes and creates the communicator; only the data calls, which
  take device pointers in CuPy, are replaced (:class:`FakeNcclComm`): each is *queued* on
  the stream it is given and, when the stream runs it, does the collective over a private
  MPI communicator, so "GPU" collectives of several ranks really exchange data.

Every call is logged in the library's ``calls``.
"""
from __future__ import annotations

import functools
import importlib.metadata
import os
import secrets
import socket
import tempfile
import threading
import time
import types

import numpy as np

from minerva.distributed.nccl import NcclLibrary, wire_dtype

UNIQUE_ID_BYTES = 128
RENDEZVOUS_LIMIT_S = 20.0
"""A fake init whose peers never come fails after this long (real NCCL would wait on)."""
TYPES = ("float16", "float32", "float64", "int8", "uint8", "int32", "uint32", "int64",
         "uint64")
OPS = ("sum", "prod", "max", "min", "avg")
VERSIONS = {13: "13.6.0", 14: "14.2.0"}
INVALID_USAGE, SYSTEM_ERROR = 5, 2


def contract_of(version: str) -> int:
    """The unique-id contract of CuPy ``version``: 14 (bytes) from 14.0.0rc1 on, else 13
    (a tuple of C chars; 14.0.0a1 still had it)."""
    major = int(version.split(".")[0])
    return 14 if major >= 14 and not version.startswith("14.0.0a") else 13


def installed_contract() -> int | None:
    """The contract of the installed CuPy (any of its wheels), or None without CuPy."""
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name == "cupy" or name.startswith(("cupy-cuda", "cupy-rocm")):
            return contract_of(dist.version)
    return None


class FakeNcclError(RuntimeError):
    """As CuPy's ``NcclError``: ``status`` is the NCCL result code."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{message} (simulated NCCL error {status})")
        self.status = status


def bus_id(ordinal: int) -> str:
    """The PCI bus id of fake GPU ``ordinal`` (the same in every process of a host)."""
    return f"0000:{16 * (ordinal + 1):02X}:00.0"


class FakeDevice:
    """``cupy.cuda.Device``: a context manager making ``ordinal`` the thread's device."""

    def __init__(self, local: threading.local, ordinal: int):
        self._local, self.id = local, int(ordinal)

    @property
    def pci_bus_id(self) -> str:
        return bus_id(self.id)

    def __enter__(self):
        self._local.stack = getattr(self._local, "stack", []) + [self.id]
        return self

    def __exit__(self, *exc):
        self._local.stack.pop()


class FakeCupy:
    """``cupy`` where NcclLibrary uses it: ``__version__`` and ``cuda.Device``."""

    def __init__(self, version: str):
        self.__version__ = version
        self._local = threading.local()
        self.cuda = types.SimpleNamespace(Device=functools.partial(FakeDevice, self._local))

    def current_device(self) -> int:
        """The calling thread's current device (0 unless a ``Device`` block set one)."""
        stack = getattr(self._local, "stack", [])
        return stack[-1] if stack else 0


class FakeNcclModule:
    """``cupy.cuda.nccl`` of CuPy ``contract`` (see the module's docstring)."""

    def __init__(self, contract: int, cupy: FakeCupy, calls: list, has_avg: bool = True,
                 signed_char: bool = True, init_fault: str | None = None,
                 init_gate: threading.Event | None = None):
        self.contract, self.cupy, self.calls = contract, cupy, calls
        self.signed_char, self.init_fault, self.init_gate = signed_char, init_fault, init_gate
        self.ids: list[bytes] = []   # every unique id made, as bytes
        self.made: list = []         # every communicator made
        self.release = threading.Event()
        """Set: every init still blocked here fails at once (a test ending its threads)."""
        for i, name in enumerate(TYPES):
            setattr(self, f"NCCL_{name.upper()}", i)
        for i, name in enumerate(OPS):
            if name != "avg" or has_avg:
                setattr(self, f"NCCL_{name.upper()}", i)
        self.NcclError = FakeNcclError
        self.NcclCommunicator = functools.partial(FakeNcclCommunicator, self)

    def get_unique_id(self):
        """A new id: 128 bytes naming a rendezvous, in this contract's form."""
        self.calls.append(("unique_id",))
        raw = (b"fake-nccl:" + secrets.token_hex(16).encode()).ljust(UNIQUE_ID_BYTES, b"\0")
        self.ids.append(raw)
        if self.contract >= 14:
            return raw
        return tuple(int(v) for v in np.frombuffer(raw, np.int8 if self.signed_char
                                                   else np.uint8))

    def id_bytes(self, comm_id) -> bytes:
        """``comm_id`` as CuPy's ``NcclCommunicator`` of this contract reads it."""
        if self.contract >= 14:
            if type(comm_id) is not bytes:
                raise TypeError(f"Argument 'commId' has incorrect type (expected bytes, "
                                f"got {type(comm_id).__name__})")
            if len(comm_id) != UNIQUE_ID_BYTES:
                raise ValueError(f"commId length {len(comm_id)} != {UNIQUE_ID_BYTES}.")
            return comm_id
        if type(comm_id) is not tuple:
            raise TypeError(f"Argument 'commId' has incorrect type (expected tuple, got "
                            f"{type(comm_id).__name__})")
        assert len(comm_id) == UNIQUE_ID_BYTES
        low, high = (-128, 127) if self.signed_char else (0, 255)
        if any(not low <= int(v) <= high for v in comm_id):
            raise OverflowError("value too large to convert to char")
        return bytes(int(v) & 0xFF for v in comm_id)


class FakeNcclCommunicator:
    """``NcclCommunicator(ndev, commId, rank)``: blocks until every rank came."""

    def __init__(self, module: FakeNcclModule, ndev: int, comm_id, rank: int,
                 config=None):
        if config is not None and module.contract < 14:
            raise TypeError("__init__() takes exactly 3 positional arguments")
        self.id = module.id_bytes(comm_id)
        self.module, self.ndev, self.rank = module, int(ndev), int(rank)
        self.device = module.cupy.current_device()
        module.calls.append(("communicator", self.ndev, self.rank, self.device))
        self._hold(module)
        self.path = os.path.join(os.environ.get("FAKE_NCCL_DIR", tempfile.gettempdir()),
                                 self.id.rstrip(b"\0").decode().replace(":", "-"))
        peers = self._rendezvous(f"{socket.gethostname()} {bus_id(self.device)}")
        self._refuse_duplicates(peers)
        self.world = self._world() if self.ndev > 1 else None
        self.aborted = self.destroyed = False
        module.made.append(self)

    @staticmethod
    def _hold(module) -> None:
        if module.init_fault == "fail":
            raise FakeNcclError(SYSTEM_ERROR, "unhandled system error (init failed here)")
        if module.init_fault == "hang":
            module.release.wait()
        end = time.monotonic() + RENDEZVOUS_LIMIT_S
        while module.init_gate is not None and not module.init_gate.wait(0.01):
            if module.release.is_set() or time.monotonic() > end:
                raise FakeNcclError(SYSTEM_ERROR, "init gate never opened")
        if module.release.is_set():
            raise FakeNcclError(SYSTEM_ERROR, "init released")

    def _rendezvous(self, me: str) -> list[str]:
        mine = f"{self.path}.rank{self.rank}"
        with open(mine + ".tmp", "w") as f:
            f.write(me)
        os.replace(mine + ".tmp", mine)
        end = time.monotonic() + RENDEZVOUS_LIMIT_S
        files = [f"{self.path}.rank{r}" for r in range(self.ndev)]
        while not all(os.path.exists(f) for f in files):
            if time.monotonic() > end or self.module.release.is_set():
                raise FakeNcclError(SYSTEM_ERROR, "bootstrap: the other ranks never came")
            time.sleep(0.01)
        return [_read(f) for f in files]

    def _refuse_duplicates(self, peers: list[str]) -> None:
        for r, peer in enumerate(peers):
            for other in range(r):
                if peers[other] == peer:
                    raise FakeNcclError(INVALID_USAGE, f"Duplicate GPU detected : rank {r} "
                                        f"and rank {other} both on CUDA device {peer}")

    @staticmethod
    def _world():
        from mpi4py import MPI
        return MPI.COMM_WORLD.Dup()

    def abort(self):
        self.aborted = True

    def destroy(self):
        self.destroyed = True
        if self.world is not None:
            self.world.Free()
        if os.path.exists(f"{self.path}.rank{self.rank}"):
            os.remove(f"{self.path}.rank{self.rank}")


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


class FakeNcclComm:
    """The data calls of one communicator, each queued on its stream, run over MPI."""

    def __init__(self, library, comm: FakeNcclCommunicator):
        self.library, self.comm = library, comm

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
        self.comm.world.Allreduce(source, flat_recv, mpi_op)
        if op == "mean":
            np.divide(flat_recv, self.comm.world.Get_size(), out=flat_recv,
                      casting="unsafe")

    def _broadcast(self, send, recv, root):
        if self.comm.world.Get_rank() == root and not np.shares_memory(send, recv):
            recv[...] = send
        self.comm.world.Bcast(recv.reshape(-1).view(np.uint8), root=root)

    def _allgather(self, send, recv):
        self.comm.world.Allgather(np.ascontiguousarray(send).reshape(-1).view(np.uint8),
                                  recv.reshape(-1).view(np.uint8))

    def abort(self):
        self.comm.abort()

    def destroy(self):
        self.comm.destroy()


class FakeNcclLibrary(NcclLibrary):
    """minerva's NcclLibrary over :class:`FakeNcclModule` and :class:`FakeCupy`, with the
    data calls of :class:`FakeNcclComm`; the options are the module's."""

    comm_class = FakeNcclComm

    def __init__(self, layer, contract: int | None = None, **options):
        self.layer = layer
        self.contract = contract or installed_contract() or 14
        self.calls: list[tuple] = []
        cupy = FakeCupy(VERSIONS[self.contract])
        super().__init__(FakeNcclModule(self.contract, cupy, self.calls, **options), cupy)
