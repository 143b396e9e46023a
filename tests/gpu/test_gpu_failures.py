"""A GPU device on every failure path, over the CUDA test double (``fake_cuda.py``), in CI
without a GPU: whatever fails, each op is reported, the launcher and settler threads end,
and shutdown returns within its timeout.

- A lost context (a sticky CUDA error) also fails leaving the thread's binding, as CuPy's
  ``Stream``/``Device`` exits do (``cudaGetDevice``/``cudaSetDevice`` return the context's
  error): the launcher still ends, and the naive engine still reports a DeviceError.
- cuBLAS reports a lost context with its own status (13 or 14): the GPU is lost all the
  same; a cuBLAS error of a healthy context fails its op only.
- Anything the launcher calls may raise: that op fails, the launcher goes on.
- A kernel that never finishes: shutdown returns within its timeout (nothing can stop a
  thread blocked in a CUDA wait; it ends once the work does).
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import minerva as mv
from tests.conftest import assert_settled, minerva_threads
from tests.support.fake_cuda import CUBLAS_EXECUTION_FAILED, FakeCublasError, FakeCuda
from minerva import system as mv_system
from minerva.builder import build
from minerva.device import gpu
from minerva.ops import registry

GATE = threading.Event()


def _same(x, **_attrs):
    return (x,)


def _lost_in_cublas_impl(xp, x, *, out, ordinal):
    """What cuBLAS does on a context an earlier kernel lost: its own status, not CUDA's."""
    gpu.load_cuda_layer().poison(ordinal)
    raise FakeCublasError(CUBLAS_EXECUTION_FAILED)


def _cublas_refuses_impl(xp, x, *, out):
    raise FakeCublasError(CUBLAS_EXECUTION_FAILED, "a launch cuBLAS could not make")


def _stuck_impl(xp, x, *, out):
    assert GATE.wait(60), "test gate never opened"
    out[...] = x


LOST_IN_CUBLAS = registry.register("test_gpu_lost_in_cublas", _same, _lost_in_cublas_impl)
CUBLAS_REFUSES = registry.register("test_gpu_cublas_refuses", _same, _cublas_refuses_impl)
STUCK = registry.register("test_gpu_stuck", _same, _stuck_impl)


@pytest.fixture
def fake(monkeypatch):
    """One fake GPU, injected as the CUDA layer (closed after the test)."""
    layer = FakeCuda(n_devices=2)
    monkeypatch.setattr(gpu, "load_cuda_layer", lambda: layer)
    GATE.clear()
    yield layer
    GATE.set()
    mv.shutdown(timeout=30)
    layer.close()


def device(device_id):
    return mv_system.get_system().devices.get(device_id)


def gpu_threads(device_id) -> list:
    return [name for name in minerva_threads() if name.startswith(f"minerva-gpu{device_id}-")]


# ---- a lost context ------------------------------------------------------------------------

def test_after_a_sticky_error_shutdown_stops_both_gpu_threads_in_time(fake):
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    fake.fault(0)
    with pytest.raises(mv.OpError, match="restart the process"):
        (mv.ones(3) + 1).to_numpy()
    with pytest.raises(mv.OpError, match="restart the process"):
        (mv.ones(3) * 2).to_numpy()  # refused by the launcher, which must live on
    start = time.monotonic()
    device(g).shutdown(timeout=5)  # leaving the launcher's binding fails on a lost context
    assert time.monotonic() - start < 4
    assert gpu_threads(g) == []


def test_the_naive_engine_reports_a_lost_gpu_as_a_device_error(fake):
    mv.init(engine="naive")
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    x = mv.ones(3)
    fake.poison(0)  # lost, before the device saw any error: binding the caller fails
    with pytest.raises(mv.OpError) as info:
        (x + 1).to_numpy()
    assert isinstance(info.value.__cause__, mv.DeviceError)
    assert "restart the process" in str(info.value.__cause__)
    assert device(g).info()["failed"]


def test_a_cublas_error_of_a_lost_context_loses_the_gpu(fake):
    g0, g1 = mv.create_gpu_device(0), mv.create_gpu_device(1)
    mv.set_device(g0)
    y = build(LOST_IN_CUBLAS, [mv.ones(3)], dict(ordinal=0))
    with pytest.raises(mv.OpError) as info:
        y.wait(timeout=10)
    cause = info.value.__cause__
    assert isinstance(cause, mv.DeviceError) and "restart the process" in str(cause)
    assert "illegal memory access" in str(cause)  # the context's own error, not cuBLAS's
    assert device(g0).info()["failed"]
    with mv.device(g1):
        np.testing.assert_array_equal((mv.arange(3.0) + 1).to_numpy(), [1, 2, 3])


def test_a_cublas_error_of_a_healthy_context_fails_its_op_only(fake):
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    with pytest.raises(mv.OpError) as info:
        build(CUBLAS_REFUSES, [mv.ones(3)]).to_numpy()
    assert isinstance(info.value.__cause__, FakeCublasError)
    assert device(g).info()["failed"] is None
    assert float(mv.ones(4).sum()) == 4.0


# ---- the launcher goes on ------------------------------------------------------------------

def test_whatever_the_launcher_calls_raises_fails_that_op_and_the_launcher_goes_on(
        fake, monkeypatch):
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    x = mv.ones(3)
    x.wait(timeout=10)
    temporaries = device(g).temporaries
    real_running, broken = temporaries.running, []

    def running(op):
        if op is not None and not broken:
            broken.append(op)
            raise RuntimeError("the launcher tripped")
        real_running(op)
    monkeypatch.setattr(temporaries, "running", running)
    with pytest.raises(mv.OpError, match="the launcher tripped"):
        (x + 1).wait(timeout=10)
    np.testing.assert_array_equal((x * 3).to_numpy(), [3, 3, 3])
    assert device(g).info()["failed"] is None
    del x
    assert_settled()


# ---- stuck work ----------------------------------------------------------------------------

def test_shutdown_returns_within_its_timeout_while_a_kernel_never_finishes(fake):
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    freed = mv.ones(1 << 16)  # a chunk the store holds free: releasing it is fenced
    freed.wait(timeout=10)
    del freed
    stuck = build(STUCK, [mv.ones(1 << 20)])  # too large for that chunk
    with pytest.raises(TimeoutError):
        stuck.wait(timeout=0.5)  # the settler is now blocked in the kernel's wait
    del stuck
    returned = threading.Event()
    stopper = threading.Thread(target=lambda: (device(g).shutdown(timeout=2), returned.set()),
                               daemon=True)
    start = time.monotonic()
    stopper.start()
    in_time = returned.wait(10)
    elapsed = time.monotonic() - start
    GATE.set()  # the kernel finishes: the blocked threads end
    stopper.join(30)
    deadline = time.monotonic() + 10
    while gpu_threads(g) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert in_time and elapsed < 3.5
    assert gpu_threads(g) == []
