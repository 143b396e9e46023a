"""Everything on a real GPU (``pytest -m gpu``; every test here skips without CuPy and a GPU).

- The op, NN-API, contract, error and lifecycle suites run again here with their fixtures
  overridden below: ``engine`` and ``device_kind`` put the current device on a GPU or on the
  second of two virtual GPUs; ``runtime`` gives one GPU (both engines), two virtual GPUs, and
  a CPU between two virtual GPUs. (``test_nn_ops``/``test_nn_grad`` already run their kernels
  on CuPy through the ``xp`` fixture; ``device_kind`` tests also run on GPU 0 in place.)
- The differential random-program test over CPU and GPU devices mixed.
- Copies in every direction, each copy path forced once, pinned staging.
- Memory accounting to the byte after ``wait_for_all`` (temporaries included) and the
  out-of-memory ladder under a small limit.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest

import minerva as mv
import test_contract
import test_errors
import test_lifecycle
import test_nn_api
import test_ops
from conftest import assert_settled
from minerva import system as mv_system
from minerva.common.config import Config
from minerva.device import gpu
from minerva.device.gpu_copies import CopyPaths
from test_differential import Program

pytestmark = pytest.mark.gpu


@functools.lru_cache(maxsize=1)
def n_gpus() -> int:
    """Physical GPUs usable here (0 without CuPy or a driver)."""
    return gpu.gpu_device_count(Config())


def require_gpu() -> None:
    if n_gpus() == 0:
        pytest.skip("no GPU (CuPy with a CUDA driver) on this machine")


def start(engine="dag", kinds=("gpu0",), virtual_gpus=0, **options) -> list[int]:
    """A runtime with devices of ``kinds`` (``cpu``, ``gpuN``); the last is current."""
    require_gpu()
    mv.init(engine=engine, virtual_gpus=virtual_gpus, **options)
    devices = [mv.create_cpu_device() if kind == "cpu" else mv.create_gpu_device(int(kind[3:]))
               for kind in kinds]
    mv.set_device(devices[-1])
    return devices


def device(device_id):
    return mv_system.get_system().devices.get(device_id)


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


# ---- the differential test over CPU and GPU devices ----------------------------------------

@pytest.mark.parametrize("kinds,n_virtual", [(("cpu", "gpu0"), 0),
                                             (("gpu0", "cpu", "gpu1", "cpu"), 2)],
                         ids=["cpu+gpu", "2vgpu+2cpu"])
@pytest.mark.parametrize("seed", range(6))
def test_random_programs_over_cpus_and_gpus_match_numpy(kinds, n_virtual, seed):
    devices = start("dag", kinds, n_virtual)
    program = Program(seed, devices)
    program.run(300)
    assert_settled(*(x for x, _ in program.pool))
    del program
    assert_settled()


# ---- copies --------------------------------------------------------------------------------

@pytest.mark.parametrize("engine_name", ["dag", "naive"])
def test_copies_in_every_direction(engine_name):
    cpu, g0, g1 = start(engine_name, ("cpu", "gpu0", "gpu1"), virtual_gpus=2)
    values = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    with mv.device(cpu):
        h = mv.array(values)
    with mv.device(g0):
        a = h + 0          # cpu -> gpu
        same = a.copy()    # gpu -> same gpu
        direct = mv.array(values)  # host data -> gpu
    with mv.device(g1):
        b = a * 1          # gpu -> another (virtual) gpu
    with mv.device(cpu):
        back = b - 0       # gpu -> cpu
    for x in (h, a, same, direct, b, back):
        np.testing.assert_array_equal(x.to_numpy(), values)
    assert device(g0).copies.snapshot()["d2d"] == 1
    assert device(g1).copies.snapshot()["d2d"] == 1
    assert device(g1).copies.snapshot()["d2h"] == 2
    assert_settled(h, a, same, direct, b, back)


@pytest.mark.parametrize("route", ["d2d", "peer", "staged"])
def test_each_gpu_to_gpu_path_moves_the_right_bytes(monkeypatch, route):
    monkeypatch.setattr(CopyPaths, "route", lambda self, src: "h2d" if src.kind == "cpu"
                        else route)
    g0, g1 = start("dag", ("gpu0", "gpu1"), virtual_gpus=2)
    values = np.random.default_rng(3).standard_normal((64, 33))
    with mv.device(g0):
        a = mv.array(values) * 2
    with mv.device(g1):
        b = a + 0
    np.testing.assert_array_equal(b.to_numpy(), values * 2)
    assert device(g1).copies.snapshot()[route] == 1
    assert_settled(a, b)


def test_two_physical_gpus_copy_with_peer_access_or_staged():
    if n_gpus() < 2:
        pytest.skip("needs two physical GPUs")
    g0, g1 = start("dag", ("gpu0", "gpu1"))
    with mv.device(g0):
        a = mv.arange(1000.0)
    with mv.device(g1):
        b = a * 1
    np.testing.assert_array_equal(b.to_numpy(), np.arange(1000.0))
    counts = device(g1).copies.snapshot()
    assert counts["peer"] + counts["staged"] == 1


def test_empty_and_scalar_arrays_cross_devices():
    cpu, g = start("dag", ("cpu", "gpu0"))
    for values in (np.zeros((0, 3)), np.array(5.0), np.array([True, False])):
        x = mv.array(values)
        with mv.device(cpu):
            y = x.to(cpu)
        np.testing.assert_array_equal(y.to_numpy(), values)
        np.testing.assert_array_equal(x.to_numpy(), values)


# ---- memory --------------------------------------------------------------------------------

def _network_step(rng):
    """A conv / pool / matmul / softmax program whose kernels allocate temporaries."""
    x = mv.array(rng.standard_normal((8, 3, 16, 16)).astype(np.float32))
    w = mv.array(rng.standard_normal((6, 3, 3, 3)).astype(np.float32))
    y = mv.nn.max_pool2d(mv.relu(mv.nn.conv2d(x, w, pad=1)), 2)
    logits = y.reshape(8, -1) @ mv.array(rng.standard_normal((384, 10)).astype(np.float32))
    loss = mv.nn.cross_entropy(logits, mv.array(rng.integers(0, 10, 8)))
    dw = mv.nn.conv2d_backward_filter(mv.ones((8, 6, 16, 16)), x, w.shape, pad=1)
    return loss, dw


@pytest.mark.parametrize("strategy", ["pooled", "round", "naive"])
def test_memory_accounting_is_exact_after_wait_for_all(strategy, rng):
    (g,) = start("dag", ("gpu0",), mem_pool=strategy)
    import cupy
    cupy_pool_before = cupy.get_default_memory_pool().used_bytes()
    loss, dw = _network_step(rng)
    assert_settled(loss, dw)
    stats = mv.memory_stats(g)
    assert stats["in_use_bytes"] == loss.nbytes + dw.nbytes
    assert stats["peak_bytes"] > 150_000  # no output is that big: CuPy temporaries count
    assert cupy.get_default_memory_pool().used_bytes() == cupy_pool_before
    del loss, dw
    assert_settled()
    assert mv.memory_stats(g)["in_use_bytes"] == 0
    mv.release_all(g)
    if strategy != "naive":
        assert mv.memory_stats(g)["cached_bytes"] == 0


def test_a_training_loop_is_served_from_the_pool(rng):
    (g,) = start("dag", ("gpu0",))
    for step in range(3):
        loss, dw = _network_step(rng)
        float(loss)
        del loss, dw
        mv.wait_for_all()
        if step == 0:
            n_mallocs = device(g).store.stats()["n_mallocs"]
    assert device(g).store.stats()["n_mallocs"] == n_mallocs  # steps 2 and 3 reuse blocks


def test_outputs_and_copies_live_on_their_streams(rng):
    (g,) = start("dag", ("gpu0",))
    a = mv.array(np.ones(1000, np.float32))
    b = a * 2
    b.wait(timeout=30)
    assert a._storage.current.block.stream == "copy" and b._storage.current.block.stream == "compute"


def test_the_out_of_memory_ladder_under_a_small_limit():
    (g,) = start("dag", ("gpu0",), mem_limit=8 << 20)
    with pytest.raises(mv.OutOfMemoryError) as info:
        mv.ones(3 << 20).to_numpy()  # 12 MiB
    assert "limit 8.0 MiB" in str(info.value) and isinstance(info.value, mv.OpError)
    del info
    total = 0.0
    for _ in range(12):  # 12 x 2 MiB through an 8 MiB store: freed blocks come back
        total += float(mv.ones(1 << 19).sum())
    assert total == 12 * (1 << 19)
    x = mv.ones((64, 64, 32, 32))  # 16 MiB of output alone: fails, runtime stays usable
    with pytest.raises(mv.OutOfMemoryError):
        x.wait(timeout=30)
    del x
    assert float(mv.ones(10).sum()) == 10.0
    assert mv.memory_stats(g)["limit_bytes"] == 8 << 20
    assert_settled()


def test_device_info_of_a_real_gpu():
    (g,) = start("dag", ("gpu0",))
    info = mv.device_info(g)
    assert info["kind"] == "gpu" and info["ordinal"] == 0 and info["name"]
    assert 0 < info["memory_free"] <= info["memory_total"]
