"""The same op on the same inputs gives the same bits on every call, for a given device
configuration: eagerly, replayed by jit, while other devices with other thread counts and
the user's thread compute beside it (the BLAS thread count is process-wide in NumPy's
OpenBLAS: kernels that want different counts must never overlap)."""
from __future__ import annotations

import hashlib
import threading
import time

import numpy as np
import pytest

import minerva as mv
from minerva.device.cpu.blas import openblas_controllers
from minerva.ops import registry

N_CALLS = 30


def _data(seed: int, shape, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


IMAGES = (32, 8, 28, 28)
FAMILIES = {
    "matmul_mlp": (lambda a, b: a @ b, [(100, 784), (784, 256)]),
    "matmul_weight_grad": (lambda a, b: a.T @ b, [(100, 784), (100, 256)]),
    "matvec": (lambda a, b: a @ b, [(1000, 1000), (1000,)]),
    "batched_matmul": (lambda a, b: a @ b, [(8, 64, 128), (8, 128, 96)]),
    "tensordot": (lambda a, b: mv.tensordot(a, b, axes=([1, 2], [0, 1])),
                  [(64, 32, 16), (32, 16, 128)]),
    "einsum": (lambda a, b: mv.einsum("ij,jk->ik", a, b), [(128, 300), (300, 200)]),
    "solve": (lambda a, b: mv.linalg.solve(a @ a.T + 300 * mv.eye(300, dtype=a.dtype), b),
              [(300, 300), (300, 50)]),
    "inv": (lambda a: mv.linalg.inv(a @ a.T + 200 * mv.eye(200, dtype=a.dtype)),
            [(200, 200)]),
    "conv2d": (lambda x, w: mv.nn.conv2d(x, w, pad=1), [IMAGES, (16, 8, 3, 3)]),
    "conv2d_backward_data": (lambda dy, w: mv.nn.conv2d_backward_data(
        dy, w, x_shape=IMAGES, pad=1), [(32, 16, 28, 28), (16, 8, 3, 3)]),
    "conv2d_backward_filter": (lambda dy, x: mv.nn.conv2d_backward_filter(
        dy, x, w_shape=(16, 8, 3, 3), pad=1), [(32, 16, 28, 28), IMAGES]),
    "conv2d_backward_bias": (lambda dy: mv.nn.conv2d_backward_bias(dy), [(32, 16, 28, 28)]),
    "max_pool2d": (lambda x: mv.nn.max_pool2d(x, 2), [IMAGES]),
    "avg_pool2d_backward": (lambda dy: mv.nn.avg_pool2d_backward(dy, IMAGES, 2),
                            [(32, 8, 14, 14)]),
    "relu_backward": (lambda dy, x: mv.nn.relu_backward(dy, x), [IMAGES, IMAGES]),
    "softmax": (lambda x: mv.nn.softmax(x), [(4096, 100)]),
    "elementwise": (lambda a, b: mv.exp(a) * b + 1.0, [IMAGES, IMAGES]),
    "reduction": (lambda a: a.sum(axis=0) + a.mean(), [(4096, 300)]),
}


def _digest(array) -> str:
    return hashlib.sha256(np.ascontiguousarray(array.to_numpy()).tobytes()).hexdigest()


class _Noise:
    """Other work while a test computes: a device with another thread count runs big
    matrix products, and a thread issues tiny products of its own."""

    def __init__(self, device: int):
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._big, args=(device,)),
                         threading.Thread(target=self._tiny)]

    def _big(self, device: int) -> None:
        a, b = _data(7, (100, 784)), _data(8, (784, 256))
        with mv.device(device):
            a, b = mv.array(a), mv.array(b)
            while not self._stop.is_set():
                (a @ b).wait(timeout=30)

    def _tiny(self) -> None:
        a, b = mv.array(_data(9, (60, 60))), mv.array(_data(10, (60,)))
        while not self._stop.is_set():
            (a @ b).wait(timeout=30)

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)


@pytest.fixture(params=["dag", "naive"])
def mixed_devices(request):
    """A device of 2 threads (the one tested) and one of 1 thread (the noise)."""
    mv.init(engine=request.param)
    return mv.create_cpu_device(threads=2), mv.create_cpu_device(threads=1)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_call_gives_the_same_bits(mixed_devices, family):
    tested, other = mixed_devices
    function, shapes = FAMILIES[family]
    with mv.device(tested):
        args = [mv.array(_data(seed, shape)) for seed, shape in enumerate(shapes)]
        with _Noise(other):
            digests = {_digest(function(*args)) for _ in range(N_CALLS)}
    assert len(digests) == 1, f"{family}: {len(digests)} bit patterns in {N_CALLS} calls"


@pytest.mark.parametrize("family", ["matmul_mlp", "matvec", "conv2d",
                                    "conv2d_backward_filter", "elementwise"])
def test_jit_replays_give_the_eager_bits(mixed_devices, family):
    tested, other = mixed_devices
    function, shapes = FAMILIES[family]
    jitted = mv.jit(function)
    with mv.device(tested):
        args = [mv.array(_data(seed, shape)) for seed, shape in enumerate(shapes)]
        with _Noise(other):
            eager = {_digest(function(*args)) for _ in range(5)}
            replayed = {_digest(jitted(*args)) for _ in range(10)}
    assert jitted.stats()["n_replays"] == 9
    assert len(eager) == 1 and replayed == eager


def _blas_count() -> int | None:
    """NumPy's OpenBLAS's thread count (None without OpenBLAS)."""
    openblas = openblas_controllers()
    return openblas[0].get_num_threads() if openblas else None


def _counting_impl(xp, x, *, out, seen):
    """A kernel that reads the BLAS count, lets other threads run, and reads it again."""
    before = _blas_count()
    time.sleep(0.002)
    seen.append((before, _blas_count()))
    out[...] = x


COUNTING = registry.register("test_blas_counting", lambda x, **_: (x,), _counting_impl)
COUNTING.blas = True


@pytest.mark.skipif(_blas_count() is None, reason="needs OpenBLAS")
def test_a_blas_kernel_keeps_its_devices_count_while_others_run(mixed_devices):
    from minerva.builder import build
    seen = {device: [] for device in mixed_devices}

    def run(device, n):
        with mv.device(device):
            x = mv.ones((64, 64))
            for _ in range(n):
                build(COUNTING, [x], {"seen": seen[device]}).wait(timeout=30)
    others = threading.Thread(target=run, args=(mixed_devices[1], 40))
    others.start()
    run(mixed_devices[0], 40)
    others.join(timeout=60)
    assert set(seen[mixed_devices[0]]) == {(2, 2)}
    assert set(seen[mixed_devices[1]]) == {(1, 1)}


SCIPY_FIRST = """
import scipy.sparse.linalg  # SciPy's wheels load their own OpenBLAS: then listed first
import minerva
from minerva.device.cpu.blas import BLAS
from threadpoolctl import ThreadpoolController
numpys = [c for c in ThreadpoolController().select(internal_api="openblas").lib_controllers
          if "numpy" in c.filepath]
counts = []
for n in (2, 1, 2):
    BLAS.hold(n)
    counts.append(numpys[0].get_num_threads() if numpys else n)
    BLAS.release()
print(counts)
"""


@pytest.mark.skipif(_blas_count() is None, reason="needs OpenBLAS")
def test_the_count_is_numpys_openblas_s_when_scipy_loaded_another_first():
    import subprocess
    import sys
    pytest.importorskip("scipy")
    done = subprocess.run([sys.executable, "-c", SCIPY_FIRST], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "[2, 1, 2]"
