"""The suites again, on a real GPU (``pytest -m gpu``; every test skips without CuPy and a GPU).

The op, NN-API, contract, error and lifecycle suites run here with their fixtures overridden:
``engine`` and ``device_kind`` put the current device on a GPU or on the second of two virtual
GPUs; ``runtime`` gives one GPU (both engines), two virtual GPUs, and a CPU between two virtual
GPUs. (``test_nn_ops``/``test_nn_grad`` already run their kernels on CuPy through the ``xp``
fixture.) 1,940 tests that each compile kernels on a cold CuPy cache: ``gpu_check.sh`` runs a
share of them (``GPU_CHECK_SUITES_PER_FAMILY`` cases of each test function). The device
layer's own GPU tests are in ``test_gpu.py``, the differential programs in
``test_gpu_differential.py``.
"""
from __future__ import annotations

import inspect

import pytest

import minerva as mv
from tests.scheduler import test_contract
from tests.scheduler import test_errors
from tests.scheduler import test_lifecycle
from tests.nn import test_nn_api
from tests.numpy import test_ops
from tests.gpu.test_gpu import start

pytestmark = pytest.mark.gpu


# ---- the suites again, on GPUs -------------------------------------------------------------

ONE_GPU, TWO_VIRTUAL = (("gpu0",), 0), (("gpu0", "gpu1"), 2)


@pytest.fixture(params=[ONE_GPU, TWO_VIRTUAL], ids=["gpu", "2vgpu"])
def engine(request) -> str:
    """Overrides conftest's ``engine``: the dag engine with the current device on a GPU."""
    kinds, n_virtual = request.param
    start("dag", kinds, n_virtual)
    return "dag"


@pytest.fixture
def device_kind() -> str:
    """Overrides conftest's ``device_kind``: the second of two virtual GPUs."""
    start("dag", ("gpu0", "gpu1"), 2)
    return "gpu"


RUNTIMES = {"dag-gpu": ("dag", ("gpu0",), 0), "naive-gpu": ("naive", ("gpu0",), 0),
            "dag-2vgpu": ("dag", ("gpu0", "gpu1"), 2),
            "dag-vgpu+cpu+vgpu": ("dag", ("gpu0", "cpu", "gpu1"), 2)}


@pytest.fixture(params=list(RUNTIMES))
def runtime(request):
    """Overrides conftest's ``runtime``: GPU devices (and a CPU) instead of CPU devices."""
    engine_name, kinds, n_virtual = RUNTIMES[request.param]
    devices = start(engine_name, kinds, n_virtual)
    mv.set_device(devices[0])
    return engine_name, devices


def _adopt(module, fixture, skip=()):
    """Collect ``module``'s tests that take ``fixture`` here, under this module's fixtures."""
    prefix = module.__name__.removeprefix("test_")
    for name, function in vars(module).items():
        if (name.startswith("test_") and name not in skip and callable(function)
                and fixture in inspect.signature(function).parameters):
            globals()[f"test_{prefix}_{name[5:]}"] = function


_adopt(test_ops, "engine")
_adopt(test_nn_api, "device_kind")
_adopt(test_contract, "runtime", skip={"test_device_scoping"})  # it expects a CPU device
_adopt(test_errors, "runtime")
_adopt(test_lifecycle, "runtime")
