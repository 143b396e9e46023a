"""The GPU device's control flow, in CI without a GPU: ``GpuDevice`` runs over the CUDA test
double of ``fake_cuda.py`` (injected by replacing ``minerva.device.gpu.load_cuda_layer``), so
``mv.create_gpu_device`` builds a real GpuDevice whose kernels are NumPy on the host, queued
on fake streams that run only when waited for: launching and completion order, the stream
reuse rule, temporaries, the out-of-memory ladder, errors (sticky ones included), copy
paths, engines, virtual GPUs, shutdown. What this cannot show: real kernels, CuPy's
allocator hook, real pinned memory, peer copies — ``test_gpu.py`` (``pytest -m gpu``) covers
those on a GPU. Launching ahead is tested in ``test_launch_ahead.py``; missing-GPU messages
and the suites on fake GPUs are in ``test_gpu_setup.py``.
"""
from __future__ import annotations

import threading
import time
import types

import numpy as np
import pytest

import minerva as mv
from tests.conftest import assert_settled, minerva_threads
from tests.support.fake_cuda import FakeCuda
from minerva import system as mv_system
from minerva.device import gpu
from minerva.device.gpu.memory import DeviceAllocator
from minerva.builder import build
from minerva.ops import registry

# ---- test ops: what a kernel sees ----------------------------------------------------------

SEEN: list = []
GATE = threading.Event()


def _same(x, **_attrs):
    return (x,)


def _where_impl(xp, x, *, out):
    SEEN.append((threading.current_thread().name, gpu.load_cuda_layer().current_stream()))
    out[...] = x


def _block_impl(xp, x, *, out):
    assert GATE.wait(20), "test gate never opened"
    out[...] = x


def _temp_impl(xp, x, *, out, nbytes):
    pointer = gpu.load_cuda_layer().current_allocator()(nbytes)  # as CuPy would
    pointer.bytes[:] = 7
    del pointer
    out[...] = x


def _fail_impl(xp, x, *, out):
    raise ValueError("kernel refused")


WHERE = registry.register("test_gpu_where", _same, _where_impl)
BLOCK = registry.register("test_gpu_block", _same, _block_impl)
TEMP = registry.register("test_gpu_temp", _same, _temp_impl)
FAIL = registry.register("test_gpu_fail", _same, _fail_impl)


@pytest.fixture
def fake(monkeypatch):
    """Two fake physical GPUs with peer access, injected as the CUDA layer."""
    layer = FakeCuda(n_devices=2)
    monkeypatch.setattr(gpu, "load_cuda_layer", lambda: layer)
    SEEN.clear()
    GATE.clear()
    yield layer
    GATE.set()  # a kernel still blocked must not hold up shutdown
    mv.shutdown(timeout=30)
    layer.close()


def device(device_id):
    """The device object behind an id of the running runtime."""
    return mv_system.get_system().devices.get(device_id)


def wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.001)


@pytest.mark.parametrize("ordinal,words", [(2, "this machine has 2 GPU(s), ordinals 0..1"),
                                           (-1, "no GPU -1"), ("0", "is an int"),
                                           (True, "is an int")])
def test_bad_ordinals_are_refused(fake, ordinal, words):
    with pytest.raises(mv.DeviceError) as info:
        mv.create_gpu_device(ordinal)
    assert words in str(info.value)


# ---- virtual GPUs and device_info ----------------------------------------------------------

def test_virtual_gpus_are_separate_devices_on_gpu0(fake):
    mv.init(virtual_gpus=3)
    assert mv.get_gpu_device_count() == 3
    ids = [mv.create_gpu_device(i) for i in range(3)]
    infos = [mv.device_info(i) for i in ids]
    assert [i["ordinal"] for i in infos] == [0, 1, 2]
    assert all(i["physical_ordinal"] == 0 and i["virtual"] for i in infos)
    assert "virtual GPU 1 of 3 on GPU 0" in infos[1]["name"]
    devs = [device(i) for i in ids]
    streams = [s for d in devs for s in d.streams.values()]
    assert len(set(map(id, streams))) == 6 and all(s.device_id == 0 for s in streams)
    assert len({id(d.store) for d in devs}) == 3
    with pytest.raises(mv.DeviceError, match="MINERVA_VIRTUAL_GPUS=3 makes GPUs 0..2"):
        mv.create_gpu_device(3)
    with mv.device(ids[0]):
        x = mv.arange(6.0)
    with mv.device(ids[2]):
        y = x * 2
    np.testing.assert_array_equal(y.to_numpy(), np.arange(6.0) * 2)
    assert devs[2].copies.snapshot()["d2d"] == 1
    assert mv.memory_stats(ids[1])["n_allocs"] == 0


def test_device_info_of_a_gpu(fake):
    g = mv.create_gpu_device(1)
    mv.set_device(g)
    x = mv.zeros(1000, dtype=np.float64)
    x.wait(timeout=10)
    info = mv.device_info(g)
    assert info["kind"] == "gpu" and info["ordinal"] == 1 and info["name"] == "Fake GPU 1"
    assert info["memory_total"] == fake.mem_bytes
    assert info["memory_free"] == fake.mem_bytes - fake.used[1] < fake.mem_bytes
    assert info["memory_in_use"] == 8000 and info["streams"] == ["compute", "copy"]


# ---- launching and completion --------------------------------------------------------------

def test_kernels_are_launched_by_the_launcher_thread_on_the_compute_stream(fake):
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    build(WHERE, [mv.ones(3)]).wait(timeout=10)
    compute = device(g).streams["compute"]
    assert [c[1:] for c in fake.of("launch")] == [(compute, f"minerva-gpu{g}-launcher")] * 2
    (_thread_name, stream), = SEEN  # it ran later, bound as it was launched
    assert stream is compute


def test_submit_returns_at_once_while_the_gpu_is_busy(monkeypatch):
    layer = FakeCuda(run="background")  # the fake GPU runs the blocking kernel
    monkeypatch.setattr(gpu, "load_cuda_layer", lambda: layer)
    GATE.clear()
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    stuck = build(BLOCK, [mv.ones(3)])
    start = time.monotonic()
    more = [mv.ones(4) + i for i in range(25)]  # each ready op is submitted at once
    # (50 ops: under MINERVA_MAX_PENDING, so only the device could make us wait)
    assert time.monotonic() - start < 2.0
    assert not stuck._storage.current.done and not any(x._storage.current.done for x in more)
    GATE.set()
    assert_settled(stuck, *more)
    mv.shutdown()
    layer.close()


def test_completions_follow_events_in_stream_order_and_streams_are_independent(fake):
    fake.pinned_syncs = False  # new pinned memory would run every stream
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    finished = []
    mv_system.get_system().hooks.subscribe(
        types.SimpleNamespace(op_finished=lambda op, *rest: finished.append(op.node_id)))
    f1, f2, f3 = mv.zeros(4), mv.ones(4), mv.full(4, 2.0)
    h = mv.array(np.arange(4.0))
    producers = [x._storage.current.producer.node_id for x in (h, f1, f2, f3)]
    compute, copy = device(g).streams["compute"], device(g).streams["copy"]
    wait_until(lambda: len(compute.pending) == 3 and len(copy.pending) == 1)
    time.sleep(0.05)
    assert finished == [] and not any(x._storage.current.done for x in (f1, f2, f3, h))
    fake.complete(copy)  # the settler finds it done by polling (nobody waits)
    wait_until(lambda: h._storage.current.done)
    assert not any(x._storage.current.done for x in (f1, f2, f3))
    fake.complete(compute, 1)
    wait_until(lambda: f1._storage.current.done)
    time.sleep(0.05)
    assert not f2._storage.current.done and not f3._storage.current.done
    fake.open_gates([compute, copy])
    wait_until(lambda: f3._storage.current.done)
    assert finished == producers
    assert fake.n_syncs == 0  # all found by polling
    np.testing.assert_array_equal(f3.to_numpy(), [2.0] * 4)


# ---- memory: the stream reuse rule, temporaries, the out-of-memory ladder ------------------

def test_blocks_are_reused_only_on_the_stream_that_freed_them(fake):
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    store = device(g).store
    t = build(TEMP, [mv.ones(2)], dict(nbytes=4096))  # a 4096-byte temporary on compute
    t.wait(timeout=10)
    mv.wait_for_all()
    (temp_chunk,) = [seg[0] for seg in store.segments() if seg[2:] == (4096, True, "compute")]
    before = store.stats()
    c = mv.array(np.zeros(1024, np.float32))  # 4096 bytes written by the copy stream
    c.wait(timeout=10)
    assert c._storage.current.block.stream == "copy"
    assert store.stats()["n_mallocs"] == before["n_mallocs"] + 1  # not the compute block
    y = mv.zeros(1024, dtype=np.float32)  # 4096 bytes on compute: the temporary's block
    y.wait(timeout=10)
    assert y._storage.current.block.stream == "compute" and y._storage.current.block.chunk_id == temp_chunk
    assert store.stats()["n_pool_hits"] == before["n_pool_hits"] + 1
    assert_settled(t, c, y)


def test_temporaries_come_from_the_store_and_are_counted(fake):
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    x = mv.ones(2)
    x.wait(timeout=10)
    base = mv.memory_stats(g)["in_use_bytes"]
    t = build(TEMP, [x], dict(nbytes=100_000))
    assert_settled(x, t)
    assert mv.memory_stats(g)["peak_bytes"] >= base + 100_000 + 8
    assert device(g).temporaries.n_dropped == 0


def test_a_failing_allocation_climbs_the_ladder_then_raises(fake):
    fake.mem_bytes = 1 << 20
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    a = mv.ones(200_000, dtype=np.float32)  # 800 kB
    a.wait(timeout=10)
    del a
    b = mv.ones(220_000, dtype=np.float32)  # does not fit beside the cached 800 kB
    b.wait(timeout=10)
    assert mv.memory_stats(g)["in_use_bytes"] == 880_000
    assert device(g).store.stats()["n_releases"] >= 1
    with pytest.raises(mv.OutOfMemoryError) as info:
        mv.ones(300_000, dtype=np.float32).to_numpy()  # no room even after the ladder
    assert isinstance(info.value, mv.OpError)
    assert "the allocator refused: MemoryError: fake cudaMalloc" in str(info.value)
    assert "largest live blocks" in str(info.value.__cause__)
    del b
    assert mv.ones(200_000, dtype=np.float32).sum().to_numpy() == 200_000  # usable again


def test_the_allocator_takes_slabs_fences_what_comes_back_and_trims_before_failing():
    fake = FakeCuda(mem_bytes=64 << 20, pinned_syncs=False)
    allocator = DeviceAllocator(fake, 0)
    stream = fake.new_stream(0)

    def fence():
        event = fake.new_event(0)
        fake.record(event, stream)
        return [event]
    allocator.fence = fence
    a, b = allocator.malloc(1000), allocator.malloc(5000)
    assert a.slab is b.slab and fake.n_mallocs == 1  # one 32 MiB slab serves both
    allocator.free(a)  # fenced: the stream has not passed this moment
    c = allocator.malloc(1000)
    assert c.offset != a.offset and allocator.stats()["n_fenced"] == 1
    small = DeviceAllocator(fake, 0, cap=4096)  # one-page slabs, to run out of room
    small.fence = fence
    first = small.malloc(4096)
    small.free(first)
    second = small.malloc(4096)  # the fenced page cannot be reused yet: a new slab
    assert second.slab is not first.slab
    fake.complete(stream)  # the stream passes the fences
    third = small.malloc(4096)
    assert third.slab is first.slab and small.stats()["n_slabs_made"] == 2
    with pytest.raises(MemoryError, match="CuPy's memory pools"):
        allocator.malloc(40 << 20)  # 32 + 40 MiB do not fit in 64
    assert fake.n_trims == 1 and fake.n_frees == 0  # the slab is in use: not freed
    for chunk in (b, c):
        allocator.free(chunk)
    fake.complete(stream)
    big = allocator.malloc(40 << 20)  # fits once the idle slab is given back
    assert fake.n_frees == 1 and big.slab.nbytes == 40 << 20
    assert allocator.stats()["n_slabs"] == 1


def test_memory_limit_and_temporaries_that_do_not_fit(fake):
    mv.init(mem_limit=64 << 10)
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    with pytest.raises(mv.OutOfMemoryError, match="limit 64.0 KiB"):
        build(TEMP, [mv.ones(2)], dict(nbytes=100_000)).to_numpy()
    assert mv.ones(4).sum().to_numpy() == 4
    assert_settled()


# ---- errors --------------------------------------------------------------------------------

def test_a_kernel_that_raises_fails_its_op_only(fake):
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    bad = build(FAIL, [mv.ones(3)])
    child = bad + 1
    good = mv.ones(3) * 5
    with pytest.raises(mv.OpError) as info:
        child.to_numpy()
    assert isinstance(info.value.__cause__, ValueError) and info.value.device == g
    np.testing.assert_array_equal(good.to_numpy(), [5.0] * 3)
    del bad, child, info
    assert_settled(good)


def test_a_sticky_gpu_error_loses_that_gpu_and_only_that_one(fake):
    cpu, g0, g1 = mv.create_cpu_device(), mv.create_gpu_device(0), mv.create_gpu_device(1)
    mv.set_device(g0)
    before = mv.full(3, 2.0)
    before.wait(timeout=10)
    fake.fault(0)  # the next kernel on GPU 0 hits an illegal address
    x = mv.ones(3)
    y = x + 1  # launched ahead of x's failure
    with pytest.raises(mv.OpError) as info:
        y.wait(timeout=10)
    cause = info.value.__cause__
    assert isinstance(cause, mv.DeviceError) and "restart the process" in str(cause)
    assert "illegal memory access" in str(cause)
    with pytest.raises(mv.OpError, match="restart the process"):
        (before * 2).to_numpy()  # later ops on that GPU fail at once
    assert device(g0).info()["failed"]
    with mv.device(g1):
        np.testing.assert_array_equal((mv.arange(3.0) * 2).to_numpy(), [0, 2, 4])
    with mv.device(cpu):
        assert float(mv.ones(4).sum()) == 4.0
    del x, y, info, cause, before
    with pytest.raises(mv.OpError):
        mv.wait_for_all(timeout=10)  # the failures not yet reported
    mv.shutdown(timeout=10)
    assert minerva_threads() == []


def test_a_launcher_that_cannot_bind_the_gpu_fails_ops_instead_of_hanging(fake, monkeypatch):
    real_bind = fake.bind

    def bind(ordinal, stream, allocator):
        if threading.current_thread().name.endswith("launcher"):
            raise RuntimeError("cudaErrorDevicesUnavailable (simulated)")
        return real_bind(ordinal, stream, allocator)
    monkeypatch.setattr(fake, "bind", bind)
    mv.set_device(mv.create_gpu_device(0))
    with pytest.raises(mv.OpError, match="cannot run ops"):
        mv.ones(3).to_numpy()
    assert_settled()


# ---- copies --------------------------------------------------------------------------------

@pytest.mark.parametrize("peer", [True, False], ids=["peer", "no-peer"])
def test_copies_take_the_path_the_hardware_allows(fake, peer):
    fake.peer = peer
    cpu, g0, g1 = mv.create_cpu_device(), mv.create_gpu_device(0), mv.create_gpu_device(1)
    values = np.arange(12.0).reshape(3, 4)
    with mv.device(cpu):
        h = mv.array(values)
    with mv.device(g0):
        a = h + 0          # cpu -> gpu0: h2d
        same = a.copy()    # gpu0 -> gpu0: d2d
    with mv.device(g1):
        b = a * 1          # gpu0 -> gpu1: peer, or staged through the host
    with mv.device(cpu):
        back = b - 0       # gpu1 -> cpu: d2h by gpu1
    for x in (a, same, b, back):
        np.testing.assert_array_equal(x.to_numpy(), values)
    assert device(g0).copies.snapshot()["d2d"] == 1
    counts1 = device(g1).copies.snapshot()
    assert counts1["peer" if peer else "staged"] == 1
    assert counts1["peer" if not peer else "staged"] == 0
    assert counts1["d2h"] == 2  # the CPU device's copy, and b.to_numpy()
    s0, s1 = device(g0).streams["copy"], device(g1).streams["copy"]
    if peer:
        assert [c[1:] for c in fake.of("peer")] == [(s1, (0, 1))]
    else:
        assert fake.of("peer") == []
        hop = [c for c in fake.calls if c[0] in ("d2h", "wait", "h2d") and c[1] in (s0, s1)]
        kinds = [(c[0], c[1]) for c in hop]
        assert ("d2h", s0) in kinds and kinds.index(("d2h", s0)) < kinds.index(("h2d", s1))
        waits = [c for c in fake.of("wait") if c[1] is s1]
        assert any(c[2].stream is s0 for c in waits)  # gpu1's copy stream waits for the hop
    assert_settled(h, a, same, b, back)


def test_a_copy_from_another_gpu_waits_on_the_event_of_the_op_that_wrote_its_source(fake):
    g0, g1 = mv.create_gpu_device(0), mv.create_gpu_device(1)
    with mv.device(g0):
        a = mv.ones(5) * 3
    a.wait(timeout=10)
    written_by = device(g0).event_of(a._storage.current.block)
    with mv.device(g1):
        b = a + 0
    b.wait(timeout=10)
    copy_stream = device(g1).streams["copy"]
    assert ("wait", copy_stream, written_by) in fake.calls
    assert written_by.stream is device(g0).streams["compute"]


def test_to_numpy_and_host_data_go_through_pinned_buffers(fake):
    mv.set_device(mv.create_gpu_device(0))
    before = fake.n_pinned
    x = mv.array(np.arange(10, dtype=np.int32))
    np.testing.assert_array_equal(x.to_numpy(), np.arange(10))
    assert fake.n_pinned == before + 2
    y = mv.array(np.arange(12, dtype=np.int32))  # same pinned size class: no new pinning
    np.testing.assert_array_equal(y.to_numpy(), np.arange(12))
    assert fake.n_pinned_allocs == 1
    assert [c[0] for c in fake.calls if c[0] in ("h2d", "d2h")] == ["h2d", "d2h"] * 2
    assert mv.zeros(0).to_numpy().shape == (0,)


# ---- engines, shutdown ---------------------------------------------------------------------

def test_the_naive_engine_runs_gpu_ops_on_the_callers_thread(fake):
    mv.init(engine="naive")
    g = mv.create_gpu_device(0)
    mv.set_device(g)
    y = build(WHERE, [mv.arange(4.0)]) * 2
    assert y._storage.current.done
    np.testing.assert_array_equal(y.to_numpy(), np.arange(4.0) * 2)
    assert SEEN[0] == ("MainThread", device(g).streams["compute"])
    assert_settled(y)


def test_shutdown_stops_every_gpu_thread_and_returns_the_memory(fake):
    mv.init(virtual_gpus=2)
    ids = [mv.create_gpu_device(i) for i in range(2)]
    names = minerva_threads()
    for i in ids:
        for part in ("launcher", "done"):
            assert f"minerva-gpu{i}-{part}" in names
    with mv.device(ids[1]):
        total = (mv.ones(100) + mv.ones(100).to(ids[1])).sum()
    assert total.to_numpy() == 200
    del total
    mv.shutdown()
    assert minerva_threads() == []
    assert fake.used == [0, 0]
