"""Launching ahead on GPUs, over the CUDA test double (``fake_cuda.py``), in CI without a GPU.

The double's streams run only when the host waits on them (``run="lazy"``) or on a
background "GPU" thread that runs the newest runnable work first (``run="background"``), so
an op started before what it reads was ordered, a buffer freed or reused too early, or a
staging buffer dropped while its copy is queued all read wrong data here.

- A chain of 1,000 dependent ops is launched whole before the GPU ran any of it, and the
  host waits for the GPU only in the final ``to_numpy``; no memory is allocated or freed
  in the steady state.
- Ordering across streams (``cudaStreamWaitEvent``) and across devices (after completion);
  a missing wait is caught by the double.
- The differential and mutation programs (``test_differential``,
  ``test_mutation_differential``) on fake GPUs, lazy and background, with a CPU between,
  and between GPUs without peer access.
- Failing honestly: a device-side check fails its op and what was launched on it; an
  allocation failure trims the pools and retries; staging buffers of a transfer that
  failed half-way are held; a read-back that fails raises a DeviceError.
- Completion times settled in bulk are marked estimated in the trace.
"""
from __future__ import annotations

import time
import types

import numpy as np
import pytest

import minerva as mv
from tests.scheduler import test_differential
from tests.scheduler import test_mutation_differential
from tests.conftest import assert_settled, minerva_threads
from tests.support.fake_cuda import FakeCuda, FakeCudaError
from minerva import system as mv_system
from minerva.builder import build
from minerva.dag.nodes import COMPLETED, LAUNCHED
from minerva.device import gpu
from minerva.device.gpu.copies import CopyPaths
from minerva.device.gpu.device import GpuDevice
from minerva.device.gpu.records import ESTIMATED
from minerva.ops import registry


@pytest.fixture
def use(monkeypatch):
    """``use(layer)`` injects a fake CUDA layer; it is closed after the test."""
    layers = []

    def inject(layer):
        monkeypatch.setattr(gpu, "load_cuda_layer", lambda: layer)
        layers.append(layer)
        return layer
    yield inject
    mv.shutdown(timeout=30)
    for layer in layers:
        layer.close()


def device(device_id):
    return mv_system.get_system().devices.get(device_id)


def producer_of(x):
    return x._storage.current.producer


def wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.001)


# ---- a chain runs ahead ----------------------------------------------------------------------

def test_a_chain_of_1000_dependent_ops_waits_for_the_gpu_only_in_to_numpy(use):
    fake = use(FakeCuda())
    mv.init(max_pending=4096)  # the run-ahead bound would make the host wait
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    x = mv.zeros(1024)
    for _ in range(1000):
        x = x + 1
    wait_until(lambda: len(fake.of("launch")) == 1001)
    compute = device(g).streams["compute"]
    assert len(compute.pending) == 1001  # all queued; the GPU has run none of it
    assert producer_of(x).state == LAUNCHED
    assert fake.n_syncs == fake.n_device_syncs == 0
    np.testing.assert_array_equal(x.to_numpy(), np.full(1024, 1000.0))
    assert fake.n_syncs <= 2  # the wait for x, the read-back
    assert fake.n_mallocs == 1 and fake.n_frees == 0  # one slab, nothing given back
    assert device(g).store.allocator.stats()["n_slabs"] == 1
    del x
    assert_settled()


def test_with_the_default_run_ahead_bound_the_host_waits_in_bulk(use):
    fake = use(FakeCuda())
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    x = mv.zeros(1024)
    for _ in range(1000):
        x = x + 1
    np.testing.assert_array_equal(x.to_numpy(), np.full(1024, 1000.0))
    assert fake.n_syncs < 100  # one wait settles a batch, not one op


# ---- ordering across streams and devices ---------------------------------------------------

def test_a_kernel_waits_on_the_stream_of_a_launched_upload(use):
    fake = use(FakeCuda(pinned_syncs=False))
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    x = mv.array(np.arange(6.0))
    y = x * 2
    wait_until(lambda: producer_of(y) is None or producer_of(y).state == LAUNCHED)
    upload = device(g).event_of(x._storage.current.block)
    compute = device(g).streams["compute"]
    assert ("wait", compute, upload) in fake.calls
    np.testing.assert_array_equal(y.to_numpy(), np.arange(6.0) * 2)


def test_the_double_catches_a_missing_wait_between_streams(use, monkeypatch):
    use(FakeCuda(pinned_syncs=False))
    monkeypatch.setattr(GpuDevice, "order_after", lambda self, data, name, record: None)
    mv.set_device(mv.create_gpu_device(0))
    x = mv.array(np.arange(6.0))
    y = x * 2
    wait_until(lambda: producer_of(y).state == LAUNCHED)
    assert not np.array_equal(y.to_numpy(), np.arange(6.0) * 2)  # read before the upload


def test_a_copy_to_another_device_starts_after_its_source_completed(use, monkeypatch):
    use(FakeCuda(n_devices=2, run="background", delay=1e-4))
    seen = []
    real = CopyPaths.copy_from

    def copy_from(self, source, dst, record):
        seen.append(source.state)
        return real(self, source, dst, record)
    monkeypatch.setattr(CopyPaths, "copy_from", copy_from)
    cpu, g0, g1 = mv.create_cpu_device(), mv.create_gpu_device(0), mv.create_gpu_device(1)
    with mv.device(g0):
        a = mv.arange(100.0)
        for _ in range(20):
            a = a + 1
    with mv.device(g1):
        b = a * 2  # peer copy of a launched value: starts once it completed
    with mv.device(cpu):
        c = b - 1  # the CPU device reads it back once completed
    np.testing.assert_array_equal(c.to_numpy(), (np.arange(100.0) + 20) * 2 - 1)
    assert seen and all(state == COMPLETED for state in seen)


# ---- the differential programs on fake GPUs ---------------------------------------------------

SETUPS = {
    "1gpu-lazy": (dict(), 0, ["gpu0"], "dag"),
    "1gpu-lazy-queued": (dict(), 0, ["gpu0"], "dag-queued"),
    "2vgpu-background": (dict(run="background"), 2, ["gpu0", "gpu1"], "dag"),
    "gpu+cpu+gpu-lazy": (dict(n_devices=2), 0, ["gpu0", "cpu", "gpu1"], "dag"),
    "2gpu-staged-background": (dict(n_devices=2, peer=False, run="background",
                                    delay=2e-5), 0, ["gpu0", "gpu1"], "dag"),
}


@pytest.fixture(params=list(SETUPS))
def gpus(request, use):
    """Device ids of a setup of fake GPUs (and a CPU)."""
    options, n_virtual, kinds, engine = SETUPS[request.param]
    use(FakeCuda(**options))
    if engine == "dag-queued":
        mv.init(engine="dag", dispatch="queued", virtual_gpus=n_virtual)
    else:
        mv.init(engine=engine, virtual_gpus=n_virtual)
    devices = [mv.create_cpu_device() if kind == "cpu" else mv.create_gpu_device(int(kind[3:]))
               for kind in kinds]
    mv.set_device(devices[0])
    return devices


@pytest.mark.parametrize("seed", range(3))
def test_random_programs_on_gpus_that_run_late_match_numpy(gpus, seed):
    program = test_differential.Program(seed, gpus)
    program.run(300)
    assert_settled(*(x for x, _ in program.pool))


@pytest.mark.parametrize("seed", range(3))
def test_random_mutating_programs_on_gpus_that_run_late_match_numpy(gpus, seed):
    program = test_mutation_differential.Program(seed, gpus)
    program.run(200)
    mv.wait_for_all(timeout=60)
    del program
    assert_settled()


# ---- failing honestly ----------------------------------------------------------------------

def _flagged(xp, x, *, out, bad):
    out[...] = x
    return np.array(bad), ValueError("the device-side check failed")  # a 0-d "device" flag


FLAGGED = registry.register("test_launch_flagged", lambda x, **_: (x,), _flagged)


@pytest.mark.parametrize("dispatch", ["inline", "queued"])
def test_a_device_side_check_fails_its_op_and_the_ops_launched_on_it(use, dispatch):
    fake = use(FakeCuda())
    mv.init(dispatch=dispatch)
    mv.set_device(mv.create_gpu_device(0))
    ok = build(FLAGGED, [mv.ones(3)], dict(bad=False)) + 1
    np.testing.assert_array_equal(ok.to_numpy(), [2.0] * 3)
    bad = build(FLAGGED, [mv.ones(3)], dict(bad=True))
    after = (bad + 1) * 2  # launched before the check was read
    wait_until(lambda: producer_of(after) is None or producer_of(after).state >= LAUNCHED)
    syncs = fake.n_syncs
    with pytest.raises(mv.OpError, match="the device-side check failed"):
        after.to_numpy()
    assert fake.n_syncs - syncs <= 1  # the settler waited once; the launcher never did


def test_cross_entropy_with_a_bad_label_fails_without_making_the_launcher_wait(use):
    use(FakeCuda())
    mv.set_device(mv.create_gpu_device(0))
    logits = mv.array(np.zeros((4, 3), np.float32))
    loss = mv.nn.cross_entropy(logits, mv.array(np.array([0, 1, 2, 3])))
    scaled = loss * 2
    with pytest.raises(mv.OpError, match="outside") as info:
        scaled.to_numpy()
    assert isinstance(info.value.__cause__, IndexError)
    good = mv.nn.cross_entropy(logits, mv.array(np.array([0, 1, 2, 0])))
    assert abs(float(good) - np.log(3)) < 1e-6


def test_an_allocation_failure_trims_the_pools_and_retries(use):
    fake = use(FakeCuda(mem_bytes=1 << 20))
    mv.set_device(mv.create_gpu_device(0))
    a = mv.ones(150_000, dtype=np.float32)  # 600 kB
    a.wait(timeout=10)
    with pytest.raises(mv.OutOfMemoryError, match="CuPy's memory pools"):
        mv.ones(150_000, dtype=np.float32).to_numpy()
    assert fake.n_trims >= 1
    del a
    assert float(mv.ones(150_000, dtype=np.float32).sum()) == 150_000


def test_a_staged_copy_that_fails_half_way_holds_its_staging_buffer(use, monkeypatch):
    fake = use(FakeCuda(n_devices=2, peer=False))
    g0, g1 = mv.create_gpu_device(0), mv.create_gpu_device(1)
    with mv.device(g0):
        a = mv.arange(1000.0)
    a.wait(timeout=10)
    real_wait = fake.wait
    target = device(g1).streams["copy"]

    def wait(stream, event):
        if stream is target:  # after the device-to-host half was queued on GPU 0
            raise FakeCudaError(1, "cudaStreamWaitEvent refused")
        return real_wait(stream, event)
    monkeypatch.setattr(fake, "wait", wait)
    with mv.device(g1):
        b = a + 0
    with pytest.raises(mv.OpError, match="cudaStreamWaitEvent refused"):
        b.wait(timeout=10)
    held = device(g1).held
    assert len(held) == 1 and held.entries[0][1][0].stream is device(g0).streams["copy"]
    fake.open_gates([device(g0).streams["copy"]])  # the first half runs into the held buffer
    monkeypatch.setattr(fake, "wait", real_wait)
    with mv.device(g1):
        np.testing.assert_array_equal((mv.arange(3.0) + 1).to_numpy(), [1, 2, 3])
    assert len(device(g1).held) == 0  # released once the hop passed


def test_a_failed_read_back_holds_its_buffer_and_raises_a_device_error(use, monkeypatch):
    fake = use(FakeCuda())
    mv.set_device(g := mv.create_gpu_device(0))
    x = mv.arange(5.0)
    x.wait(timeout=10)
    monkeypatch.setattr(fake, "synchronize", lambda event: (_ for _ in ()).throw(
        FakeCudaError(1, "cudaEventSynchronize refused")))
    with pytest.raises(mv.DeviceError, match="reading back"):
        x.to_numpy()
    assert len(device(g).held) == 1


def test_a_kernel_that_crashes_loses_the_gpu_and_shutdown_still_stops(use):
    fake = use(FakeCuda(run="background"))
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    xs = [mv.ones(10) * i for i in range(20)]
    fake.poison(0)
    with pytest.raises(mv.OpError):
        for x in xs:
            x.to_numpy()
    with pytest.raises(mv.OpError, match="restart the process"):
        (mv.ones(2) + 1).to_numpy()
    del xs
    mv.shutdown(timeout=10)
    assert minerva_threads() == []


# ---- the double itself -------------------------------------------------------------------

def test_the_double_refuses_what_cuda_refuses():
    fake = FakeCuda(n_devices=2)
    s0, e1 = fake.new_stream(0), fake.new_event(1)
    with pytest.raises(FakeCudaError, match="recorded on"):
        fake.record(e1, s0)  # an event of GPU 1 on a stream of GPU 0
    chunk = fake.malloc(0, 1024)
    strided = fake.view(chunk, 0, 1024, (8, 16), np.float64)[:, ::2]
    with pytest.raises(FakeCudaError, match="non-contiguous"):
        fake.copy_d2h(np.empty(512, np.uint8), strided, 512, s0)
    with pytest.raises(RuntimeError, match=r"created on \(1\) does not match"):
        fake.launch(fake.new_stream(1), lambda: None)  # the thread is on GPU 0, as in CuPy
    assert fake.current_stream() is fake.null_stream(0)  # a thread not bound yet


def test_the_double_runs_work_only_when_waited_for_and_reuses_pinned_memory():
    fake = FakeCuda(pinned_syncs=False)
    stream = fake.new_stream(0)
    chunk = fake.malloc(0, 64)
    dst = fake.view(chunk, 0, 64, (64,), np.uint8)
    staging = fake.pinned(64)
    staging[:] = 7
    fake.copy_h2d(dst, staging, 64, stream)
    done = fake.new_event(0)
    fake.record(done, stream)
    assert not fake.query(done) and (dst != 7).all()  # queued, not run
    fake.synchronize(done)
    assert fake.query(done) and (dst == 7).all() and fake.n_syncs == 1
    address = staging.__array_interface__["data"][0]
    del staging
    again = fake.pinned(64)  # the same memory, handed out again at once
    assert again.__array_interface__["data"][0] == address and fake.n_pinned_allocs == 1


# ---- the trace -----------------------------------------------------------------------------

def test_completions_settled_in_bulk_are_marked_estimated_in_the_trace(use):
    use(FakeCuda())
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    tracks = []
    mv_system.get_system().hooks.subscribe(types.SimpleNamespace(
        op_finished=lambda op, dev, track, t, err: tracks.append(track)))
    x = mv.zeros(16)
    for _ in range(10):
        x = x + 1
    x.wait(timeout=10)
    assert "stream:compute" in tracks  # the op waited for: an exact end
    assert f"stream:compute{ESTIMATED}" in tracks  # the ones before it: estimates
