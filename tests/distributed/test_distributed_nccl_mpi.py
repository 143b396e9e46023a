"""GPU collectives across processes on the CUDA and NCCL test doubles
(``tests/distributed/programs/gpu_fake.py`` under ``mpiexec``, loopback, each run with a hard
timeout; every rank ends by itself):

- NCCL under the unique-id contract of CuPy 13 (a tuple of C chars) and of CuPy 14
  (bytes): the real NcclLibrary makes the id, MPI carries it, every rank creates its
  communicator on its own GPU;
- ranks sharing a GPU (which NCCL refuses): every rank stages through the host;
- a rank whose communicator creation never returns, or fails: every rank's collective
  fails with CommunicationLost within MINERVA_DIST_TIMEOUT, the next ones at once.

Skipped as tests/distributed/test_distributed_mpi.py is, without mpi4py or mpiexec.
"""
from __future__ import annotations

import re

import pytest
from tests.distributed.test_distributed_mpi import HAVE_MPI4PY, MISSING, MPIEXEC, assert_all_ok, run

pytestmark = pytest.mark.skipif(not (MPIEXEC and HAVE_MPI4PY), reason=MISSING)
TIMEOUT_S = 2


@pytest.mark.parametrize("contract", [13, 14])
def test_nccl_collectives_under_each_cupy_contract(contract, tmp_path):
    status, out, _ = run(2, "gpu_fake.py", "nccl", str(contract), FAKE_NCCL_DIR=str(tmp_path))
    assert_all_ok(2, status, out)
    assert "nccl=0" not in out, out


def test_ranks_sharing_a_gpu_stage_through_the_host(tmp_path):
    status, out, _ = run(3, "gpu_fake.py", "shared", "13", FAKE_NCCL_DIR=str(tmp_path))
    assert_all_ok(3, status, out)
    assert re.findall(r"nccl=(\d+)", out) == ["0"] * 3, out


@pytest.mark.parametrize("mode", ["init-hang", "init-fail"])
def test_a_communicator_that_cannot_be_made_fails_every_rank_within_the_timeout(
        mode, tmp_path):
    _, out, seconds = run(2, "gpu_fake.py", mode, "13", FAKE_NCCL_DIR=str(tmp_path),
                          MINERVA_DIST_TIMEOUT=str(TIMEOUT_S), timeout=40)
    lost = {int(rank): float(s) for rank, s in re.findall(r"LOST (\d+) ([\d.]+)", out)}
    assert sorted(lost) == [0, 1] and "FAIL" not in out, out
    assert all(s < TIMEOUT_S + 3 for s in lost.values()), out
    if mode == "init-fail":  # the rank whose creation failed knows at once
        assert lost[1] < 1, out
    assert seconds < 30, out
