"""The differential programs on real GPUs (``pytest -m gpu``; skipped without CuPy and a GPU).

The random programs of ``test_differential`` (values, views, reductions, device switches,
dropped handles) and of ``test_mutation_differential`` (in-place writes, overlapping
updates) run on every GPU ``mv.get_gpu_device_count()`` shows — set ``MINERVA_VIRTUAL_GPUS``
to run them on that many logical GPUs of GPU 0 (``gpu_check.sh`` runs 1 and 2) — alone and
with a CPU device between them, and are compared exactly with NumPy.
"""
from __future__ import annotations

import pytest

import minerva as mv
from tests.scheduler import test_differential
from tests.scheduler import test_mutation_differential
from tests.conftest import assert_settled

pytestmark = pytest.mark.gpu


@pytest.fixture(params=["gpus", "gpus+cpu"])
def devices(request) -> list[int]:
    """Every GPU (as the environment sets them up), with a CPU device after the first."""
    mv.init()
    n = mv.get_gpu_device_count()
    if n == 0:
        pytest.skip("no GPU (CuPy with a CUDA driver) on this machine")
    ids = [mv.create_gpu_device(i) for i in range(n)]
    if request.param == "gpus+cpu":
        ids.insert(1, mv.create_cpu_device())
    mv.set_device(ids[0])
    return ids


@pytest.mark.parametrize("seed", range(4))
def test_random_programs_on_gpus_match_numpy(devices, seed):
    program = test_differential.Program(seed, devices)
    program.run(300)
    assert_settled(*(x for x, _ in program.pool))
    del program
    assert_settled()


@pytest.mark.parametrize("seed", range(4))
def test_random_mutating_programs_on_gpus_match_numpy(devices, seed):
    program = test_mutation_differential.Program(seed, devices)
    program.run(200)
    mv.wait_for_all(timeout=60)
    del program
    assert_settled()
