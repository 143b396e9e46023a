"""Getting a GPU, and the suites on fake GPUs, in CI without a GPU.

- What ``mv.get_gpu_device_count`` and ``mv.create_gpu_device`` say without CuPy, without a
  driver, without a GPU (a stand-in ``cupy`` module in ``sys.modules``).
- ``CupyLayer``, the real CUDA layer, against a mock of ``cupy``: the calls it makes, its
  out-of-memory conversion and peer-access handling. (A mock cannot tell whether CuPy
  accepts those calls; ``test_gpu.py`` on a GPU does.)
- The contract and error suites and the differential test re-run on fake GPUs
  (``fake_cuda.py``): conftest's ``runtime`` is overridden below.
"""
from __future__ import annotations

import inspect
import sys
import types
from unittest import mock

import pytest

import minerva as mv
from tests.scheduler import test_contract
from tests.scheduler import test_errors
from tests.conftest import assert_settled
from tests.support.fake_cuda import FakeCuda
from minerva.common.config import Config
from minerva.device import gpu
from minerva.device.gpu import cupy_layer
from tests.scheduler.test_differential import Program

# ---- without a GPU: counts and messages ----------------------------------------------------

def _fake_cupy(get_count):
    module = types.ModuleType("cupy")
    module.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=get_count))
    return module


def test_without_cupy_count_is_zero_and_create_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    monkeypatch.setattr(gpu, "_LAYER", None)
    assert mv.get_gpu_device_count() == 0
    with pytest.raises(mv.DeviceError) as info:
        mv.create_gpu_device(0)
    message = str(info.value)
    assert "CuPy is not installed" in message
    assert "pip install 'minerva[gpu]'" in message and "cupy-cuda13x" in message
    assert "'cupy-cuda13x[ctk]'" in message and "NVRTC and cuBLAS" in message


def test_without_a_driver_count_is_zero_and_create_says_so(monkeypatch):
    def no_driver():
        raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(no_driver))
    monkeypatch.setattr(gpu, "_LAYER", None)
    assert mv.get_gpu_device_count() == 0
    with pytest.raises(mv.DeviceError, match="no CUDA driver or GPU is usable") as info:
        mv.create_gpu_device(0)
    assert "cudaErrorInsufficientDriver" in str(info.value)


def test_with_zero_gpus_create_says_none_found(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(lambda: 0))
    monkeypatch.setattr(gpu, "_LAYER", None)
    assert mv.get_gpu_device_count() == 0
    with pytest.raises(mv.DeviceError, match="no CUDA GPU found"):
        mv.create_gpu_device(0)


# ---- the real layer's calls, against a mock of cupy ------------------------------------------

class _CudaError(RuntimeError):
    def __init__(self, status):
        super().__init__(f"cuda error {status}")
        self.status = status


def _mock_cupy(n_devices=2):
    cupy = mock.MagicMock(name="cupy")
    cupy.cuda.runtime.getDeviceCount.return_value = n_devices
    cupy.cuda.runtime.CUDARuntimeError = _CudaError
    return cupy


def test_the_cupy_layer_is_loaded_once_and_counts_gpus(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _mock_cupy(2))
    monkeypatch.setattr(gpu, "_LAYER", None)
    layer = gpu.load_cuda_layer()
    assert isinstance(layer, cupy_layer.CupyLayer) and gpu.load_cuda_layer() is layer
    assert gpu.gpu_device_count(Config()) == 2
    assert gpu.gpu_device_count(Config(virtual_gpus=5)) == 5


def test_the_cupy_layer_makes_the_cuda_calls_it_documents():
    cupy = _mock_cupy()
    layer, runtime = cupy_layer.CupyLayer(cupy), cupy.cuda.runtime
    stream, dst, src = mock.Mock(device_id=1, ptr=77), mock.Mock(), mock.Mock()
    layer.copy_h2d(dst, src, 64, stream)
    runtime.memcpyAsync.assert_called_with(dst.data.ptr, src.ctypes.data, 64,
                                           runtime.memcpyHostToDevice, 77)
    layer.copy_d2h(dst, src, 64, stream)
    runtime.memcpyAsync.assert_called_with(dst.ctypes.data, src.data.ptr, 64,
                                           runtime.memcpyDeviceToHost, 77)
    layer.copy_peer(dst, 1, src, 0, 64, stream)
    runtime.memcpyPeerAsync.assert_called_with(dst.data.ptr, 1, src.data.ptr, 0, 64, 77)
    cupy.cuda.Device.assert_called_with(1)
    layer.new_stream(0)
    cupy.cuda.Stream.assert_called_with(non_blocking=True)
    layer.temporary(mock.Mock(ptr=1000, device_id=0), 512, 100, "owner")
    cupy.cuda.UnownedMemory.assert_called_with(1512, 100, "owner", 0)


def test_the_cupy_layer_queries_launches_trims_and_knows_sticky_errors():
    cupy = _mock_cupy()
    layer, runtime = cupy_layer.CupyLayer(cupy), cupy.cuda.runtime
    event = mock.Mock(ptr=5)
    runtime.eventQuery.return_value = 0
    assert layer.query(event) is True
    runtime.eventQuery.assert_called_with(5)
    runtime.eventQuery.return_value = 600  # cudaErrorNotReady
    assert layer.query(event) is False
    ran, stream = [], mock.MagicMock()
    layer.launch(stream, lambda: ran.append(1))  # CuPy queues by itself: called now
    assert ran == [1] and stream.__enter__.call_count == 1  # with the stream current
    layer.trim()
    cupy.get_default_memory_pool.return_value.free_all_blocks.assert_called_once_with()
    cupy.get_default_pinned_memory_pool.return_value.free_all_blocks.assert_called_once_with()
    assert layer.is_sticky(_CudaError(700)) and layer.is_sticky(_CudaError(719))
    assert not layer.is_sticky(_CudaError(2)) and not layer.is_sticky(ValueError("x"))


def test_the_cupy_layer_turns_cuda_out_of_memory_into_memory_error():
    cupy = _mock_cupy()
    layer = cupy_layer.CupyLayer(cupy)
    cupy.cuda.Memory.side_effect = _CudaError(cupy_layer.CUDA_ERROR_MEMORY_ALLOCATION)
    with pytest.raises(MemoryError, match="cudaMalloc of 4096 bytes on GPU 0"):
        layer.malloc(0, 4096)
    cupy.cuda.Memory.side_effect = _CudaError(999)
    with pytest.raises(_CudaError):
        layer.malloc(0, 4096)


@pytest.mark.parametrize("can, enable_error, expected", [
    (1, None, True), (0, None, False), (1, cupy_layer.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, True),
    (1, 217, False)])
def test_the_cupy_layer_enables_peer_access_once(can, enable_error, expected):
    cupy = _mock_cupy()
    runtime = cupy.cuda.runtime
    runtime.deviceCanAccessPeer.return_value = can
    if enable_error is not None:
        runtime.deviceEnablePeerAccess.side_effect = _CudaError(enable_error)
    layer = cupy_layer.CupyLayer(cupy)
    assert layer.enable_peer_access(0, 1) is expected
    assert layer.enable_peer_access(0, 1) is expected
    assert runtime.deviceCanAccessPeer.call_count == 1


# ---- the contract, error and differential suites on fake GPUs ------------------------------

SETUPS = {"dag-gpu": ("dag", 1, 0, ["gpu0"]), "naive-gpu": ("naive", 1, 0, ["gpu0"]),
          "dag-cpu+2vgpu": ("dag", 1, 2, ["gpu0", "cpu", "gpu1"]),
          "dag-2gpu-staged": ("dag", 2, 0, ["gpu0", "gpu1"])}


@pytest.fixture(params=list(SETUPS))
def runtime(request, monkeypatch):
    """Overrides conftest's ``runtime``: fake GPUs (and a CPU) instead of CPU devices."""
    engine_name, n_physical, n_virtual, kinds = SETUPS[request.param]
    layer = FakeCuda(n_devices=n_physical, peer=False)
    monkeypatch.setattr(gpu, "load_cuda_layer", lambda: layer)
    mv.init(engine=engine_name, virtual_gpus=n_virtual)
    devices = [mv.create_cpu_device() if kind == "cpu" else mv.create_gpu_device(int(kind[3:]))
               for kind in kinds]
    mv.set_device(devices[0])
    return engine_name, devices


def _adopt(module, prefix, skip=()):
    """Collect ``module``'s tests that take ``runtime`` here too, so they run on the
    ``runtime`` of this module."""
    for name, function in vars(module).items():
        if (name.startswith("test_") and name not in skip and callable(function)
                and "runtime" in inspect.signature(function).parameters):
            globals()[f"test_{prefix}_{name[5:]}"] = function


_adopt(test_contract, "contract", skip={"test_device_scoping"})  # it expects a CPU device
_adopt(test_errors, "errors")


@pytest.mark.parametrize("seed", range(4))
def test_random_programs_on_fake_gpus_match_numpy(runtime, seed):
    _, devices = runtime
    program = Program(seed, devices)
    program.run(200)
    assert_settled(*(x for x, _ in program.pool))
