"""The GPU device layer on a real GPU (``pytest -m gpu``; every test skips without CuPy and a
GPU). ``tools/gpu_check.sh`` runs this file first.

- Copies in every direction, each GPU-to-GPU path forced once, pinned staging.
- Memory accounting to the byte after ``wait_for_all`` (temporaries included), a training
  loop served from the pool, the out-of-memory ladder under a small limit, and an
  allocation that only fits once CuPy's own pool is emptied (in a child process).
- Launching ahead: a long dependent chain, an upload read by a kernel launched at once,
  a bad cross-entropy label found by the device-side check.
- A sticky CUDA error (an illegal address, in a child process): that GPU is lost with a
  clear DeviceError, a CPU device keeps working, shutdown stops every thread.

The op, NN, contract, error and lifecycle suites run on a GPU in ``test_gpu_suites.py``; the
differential programs in ``test_gpu_differential.py``.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minerva as mv
from tests.conftest import assert_settled
from minerva import system as mv_system
from minerva.common.config import Config
from minerva.device import gpu
from minerva.device.gpu.copies import CopyPaths

pytestmark = pytest.mark.gpu
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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


def run_child(code: str, timeout: float = 180) -> str:
    """Run ``code`` in a fresh interpreter (a GPU it breaks stays broken there only); its
    output, after checking that it ended well."""
    paths = [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=ROOT)
    assert done.returncode == 0, f"child failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


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
    counts = []
    for _ in range(4):
        loss, dw = _network_step(rng)
        float(loss)
        del loss, dw
        mv.wait_for_all()
        counts.append((device(g).store.stats()["n_mallocs"],
                       device(g).store.allocator.stats()["n_slabs_made"]))
    # after warming up, the steps reuse blocks (how many a step needs depends on when
    # completions were learnt), and cudaMalloc is not called at all
    assert counts[1][0] == counts[3][0] and counts[0][1] == counts[3][1] == 1


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


# ---- launching ahead -------------------------------------------------------------------------

def test_a_long_dependent_chain_runs_ahead_and_is_right():
    (g,) = start("dag", ("gpu0",), max_pending=4096)
    x = mv.zeros(1024, dtype=np.float32)
    for _ in range(2000):
        x = x + 1
    np.testing.assert_array_equal(x.to_numpy(), np.full(1024, 2000, np.float32))
    completions = mv.device_info(g)["completions"]
    assert completions["batches_polled"] + completions["waits"] > 0
    del x
    assert_settled()


def test_an_upload_read_at_once_by_a_kernel_is_waited_for():
    start("dag", ("gpu0",))
    values = np.random.default_rng(5).standard_normal((2048, 512))
    for _ in range(3):  # large enough for the copy to still run when the kernel is queued
        x = mv.array(values)
        y = (x * 2).sum(axis=1)
        np.testing.assert_allclose(y.to_numpy(), (values * 2).sum(axis=1))


def test_a_bad_label_fails_cross_entropy_and_what_was_launched_on_it():
    start("dag", ("gpu0",))
    logits = mv.array(np.zeros((8, 5), np.float32))
    loss = mv.nn.cross_entropy(logits, mv.array(np.array([0, 1, 2, 3, 4, 5, 0, 1])))
    after = loss * 2
    with pytest.raises(mv.OpError, match="outside") as info:
        after.to_numpy()
    assert isinstance(info.value.__cause__, IndexError)
    del info, loss, after
    good = mv.nn.cross_entropy(logits, mv.array(np.array([0, 1, 2, 3, 4, 0, 1, 2])))
    assert abs(float(good) - np.log(5)) < 1e-5
    assert_settled(logits, good)


# ---- failing honestly (in child processes) -----------------------------------------------------

TRIM = """
import cupy, numpy as np, minerva as mv
free, total = cupy.cuda.runtime.memGetInfo()
hog = cupy.empty(free - (1 << 30), cupy.uint8)  # all but 1 GiB, then cached by CuPy
del hog
assert cupy.get_default_memory_pool().total_bytes() > 0
mv.set_device(mv.create_gpu_device(0))
x = mv.ones((2 << 30) // 4, dtype=np.float32)  # 2 GiB: fits only after the trim
print("sum", float(x.sum()), "pool", cupy.get_default_memory_pool().total_bytes())
mv.shutdown()
"""


def test_an_allocation_that_fits_only_after_cupys_pool_is_emptied():
    require_gpu()
    out = run_child(TRIM)
    assert f"sum {float((2 << 30) // 4)} pool 0" in out


STICKY = '''
import threading
import cupy, numpy as np, minerva as mv
from minerva.builder import build
from minerva.ops import registry
poke = cupy.RawKernel(r"""
extern "C" __global__ void poke(unsigned long long address) {
    *((float*) address) = 1.0f;
}""", "poke")
def impl(xp, x, *, out):
    poke((1,), (1,), (np.uint64(16),))  # an illegal address
    out[...] = x
POKE = registry.register("test_poke", lambda x: (x,), impl)
cpu, g = mv.create_cpu_device(), mv.create_gpu_device(0)
mv.set_device(g)
y = build(POKE, [mv.ones(4)]) + 1
try:
    y.to_numpy()
except mv.OpError as err:
    print("first:", err.__cause__)
try:
    (mv.ones(2) * 3).to_numpy()
except mv.OpError as err:
    print("later:", err.__cause__)
with mv.device(cpu):
    print("cpu:", float(mv.ones(3).sum()))
try:
    mv.wait_for_all(timeout=30)
except mv.OpError:
    pass
mv.shutdown(timeout=30)
print("threads:", [t.name for t in threading.enumerate() if t.name.startswith("minerva-")])
'''


def test_a_sticky_cuda_error_loses_the_gpu_not_the_process():
    require_gpu()
    out = run_child(STICKY)
    lines = {line.split(":")[0]: line for line in out.splitlines()}
    assert "restart the process" in lines["first"] and "restart the process" in lines["later"]
    assert "cpu: 3.0" in out and "threads: []" in out
