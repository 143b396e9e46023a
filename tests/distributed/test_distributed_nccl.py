"""The NCCL seam of minerva.distributed in one process, on the NCCL double
(``tests/distributed/programs/fake_nccl.py``: minerva's NcclLibrary over a fake
``cupy.cuda.nccl`` following the contract of CuPy 13 or 14):

- the double refuses what the CuPy version it follows refuses;
- the unique id and the communicator work under both contracts (bytes since CuPy 14, a
  tuple of C chars before, signed or not);
- the identity of a GPU (host and PCI bus) and the header rule: ranks sharing a GPU do
  not use NCCL;
- creating a communicator is bounded by the deadline: a rank that never comes, an
  interrupt, or a failure on this rank give CommunicationLost, and a communicator made
  after it was given up is aborted.

The runs across processes are in test_distributed_nccl_mpi.py.
"""
from __future__ import annotations

import threading
import time
import types

import numpy as np
import pytest
from tests.distributed.programs.fake_nccl import FakeNcclError, FakeNcclLibrary, contract_of

from minerva.distributed import header as headers
from minerva.distributed import nccl
from minerva.distributed.errors import CommunicationLost
from minerva.distributed.gpu_runner import GpuRunner


@pytest.fixture(autouse=True)
def rendezvous_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NCCL_DIR", str(tmp_path))


class StubTransport:
    """Rank 0 of ``size``; the unique id's broadcast sends nothing."""

    def __init__(self, size):
        self.rank, self.size, self.interrupted = 0, size, None

    def broadcast(self, buf, root, deadline):
        assert root == 0


@pytest.fixture
def gpu_runner():
    """``make(size, timeout, **fake)``: a GpuRunner of rank 0 of ``size`` over a fake
    NCCL library, and the library; afterwards, every abandoned creation is released."""
    libraries = []

    def make(size, timeout, **fake):
        library = FakeNcclLibrary(None, **fake)
        libraries.append(library)
        return GpuRunner(StubTransport(size), timeout, lambda: library), library
    yield make
    for library in libraries:
        library.nccl.release.set()
    end = time.monotonic() + 10
    while any(t.name == "minerva-dist-nccl-init" for t in threading.enumerate()):
        assert time.monotonic() < end, "a creation thread did not end once released"
        time.sleep(0.01)


# ---- the double follows CuPy ---------------------------------------------------------------

def test_the_double_follows_cupy_14():
    module = FakeNcclLibrary(None, 14).nccl
    uid = module.get_unique_id()
    assert type(uid) is bytes and len(uid) == 128
    with pytest.raises(TypeError):
        module.NcclCommunicator(1, tuple(uid), 0)
    with pytest.raises(ValueError):
        module.NcclCommunicator(1, uid[:100], 0)
    assert module.NcclCommunicator(1, uid, 0).id == uid


@pytest.mark.parametrize("signed", [True, False])
def test_the_double_follows_cupy_13(signed):
    module = FakeNcclLibrary(None, 13, signed_char=signed).nccl
    uid = module.get_unique_id()
    low, high = (-128, 127) if signed else (0, 255)
    assert type(uid) is tuple and len(uid) == 128 and all(low <= v <= high for v in uid)
    for wrong in (bytes(v & 0xFF for v in uid), list(uid)):
        with pytest.raises(TypeError):
            module.NcclCommunicator(1, wrong, 0)
    with pytest.raises(OverflowError):
        module.NcclCommunicator(1, (high + 1,) + uid[1:], 0)
    assert module.NcclCommunicator(1, uid, 0).id == module.ids[-1]


def test_the_contract_of_each_cupy_version():
    assert [contract_of(v) for v in ("12.3.0", "13.6.0", "14.0.0a1", "14.0.0rc1",
                                     "14.2.0")] == [13, 13, 13, 14, 14]


# ---- minerva's NcclLibrary under both contracts -------------------------------------------

@pytest.mark.parametrize("contract,signed", [(14, True), (13, True), (13, False)])
def test_the_unique_id_and_communicator_follow_each_cupy_contract(contract, signed):
    library = FakeNcclLibrary(None, contract, signed_char=signed)
    uid = library.unique_id()
    raw = library.nccl.ids[-1]
    assert uid.dtype == np.uint8 and uid.tobytes() == raw
    comm = library.communicator(1, uid.copy(), 0, 2)
    assert comm.comm.id == raw and comm.comm.device == 2
    assert library.calls[-1] == ("communicator", 1, 0, 2)


def test_a_gpu_is_known_by_its_host_and_pci_bus(monkeypatch):
    library = FakeNcclLibrary(None, 14)
    here = [library.device_identity(o) for o in (0, 0, 1)]
    assert here[0] == here[1] != here[2]
    monkeypatch.setattr(nccl.socket, "gethostname", lambda: "another-host")
    assert library.device_identity(0) not in here


def test_ranks_sharing_a_gpu_do_not_use_nccl():
    def gpu(gpu_id):
        return headers.encode(0, "allreduce", "sum", 0, np.float32, [(3,)],
                              place=headers.GPU, nccl=True, ordinal=0, gpu_id=gpu_id)
    assert headers.use_nccl(np.stack([gpu(11), gpu(12), gpu(13)]))
    assert not headers.use_nccl(np.stack([gpu(11), gpu(12), gpu(11)]))
    assert headers.gpu_key(np.stack([gpu(11), gpu(11)])) == (0, 0)


# ---- creating a communicator is bounded ----------------------------------------------------

PLACE = types.SimpleNamespace(ordinal=0)


def test_a_rank_that_never_comes_fails_the_creation_at_the_deadline(gpu_runner):
    runner, _ = gpu_runner(2, timeout=0.5, contract=13)
    start = time.monotonic()
    with pytest.raises(CommunicationLost, match="MINERVA_DIST_TIMEOUT"):
        runner._communicator((0, 1), PLACE, start + 0.5)
    assert time.monotonic() - start < 3
    assert not runner._comms


def test_an_interrupt_ends_the_creation_at_once(gpu_runner):
    runner, _ = gpu_runner(2, timeout=30, contract=13)
    threading.Timer(0.2, setattr, (runner.transport, "interrupted", "Ctrl-C")).start()
    start = time.monotonic()
    with pytest.raises(CommunicationLost, match="Ctrl-C"):
        runner._communicator((0, 1), PLACE, start + 30)
    assert time.monotonic() - start < 3


def test_a_creation_failing_on_this_rank_loses_communication_at_once(gpu_runner):
    runner, _ = gpu_runner(2, timeout=30, contract=13, init_fault="fail")
    start = time.monotonic()
    with pytest.raises(CommunicationLost) as err:
        runner._communicator((0, 1), PLACE, start + 30)
    assert isinstance(err.value.__cause__, FakeNcclError)
    assert time.monotonic() - start < 3


def test_a_communicator_made_after_the_deadline_is_aborted(gpu_runner):
    gate = threading.Event()
    runner, library = gpu_runner(1, timeout=0.3, contract=13, init_gate=gate)
    with pytest.raises(CommunicationLost):
        runner._communicator((0,), PLACE, time.monotonic() + 0.3)
    gate.set()
    end = time.monotonic() + 10
    while not (library.nccl.made and library.nccl.made[0].aborted):
        assert time.monotonic() < end, "the late communicator was not aborted"
        time.sleep(0.01)
    assert not runner._comms
