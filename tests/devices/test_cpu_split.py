"""A CPU device with several threads runs big row-split kernels as row ranges side by
side: the numbers are bitwise those of the whole kernel, broadcast inputs are passed
whole, small kernels and reductions over rows run whole, a failing range fails the op."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import minerva as mv
from minerva.builder import build
from minerva.device.cpu import split as cpu_split
from minerva.device.cpu.blas import BLAS, openblas_controllers
from minerva.ops import registry

pytestmark = pytest.mark.skipif(not BLAS.per_thread, reason="needs per-thread BLAS")

ROWS = 64


def _fail_rows_infer(x):
    return (x,)


def _fail_rows_impl(xp, x, *, out):
    if (x < 0).any():
        raise ValueError("negative row")
    out[...] = x


FAIL_ROWS = registry.register("test_fail_rows", _fail_rows_infer, _fail_rows_impl)
FAIL_ROWS.row_split = (0,)


@pytest.fixture
def ranges_run(monkeypatch):
    """The names of the threads that ran a row range, as the test's ops run; every split
    judged paying and the helpers given ranges to run (the op's thread claims only one)."""
    monkeypatch.setattr(cpu_split, "PAYS", 0.0)
    monkeypatch.setattr(cpu_split, "CALLER_STEALS", False)
    names: list = []
    real = cpu_split._run_range

    def spy(*args):
        names.append(threading.current_thread().name)
        return real(*args)
    monkeypatch.setattr(cpu_split, "_run_range", spy)
    return names


@pytest.fixture(params=["dag", "naive"])
def two_threads(request):
    """A fresh runtime (each engine) with one CPU device of 2 threads and one of 1."""
    mv.shutdown()
    mv.init(engine=request.param)
    devices = mv.create_cpu_device(threads=2), mv.create_cpu_device(threads=1)
    yield devices
    mv.shutdown()


def _on(device, function, *arrays):
    with mv.device(device):
        return function(*[mv.array(a) for a in arrays]).to_numpy()


def _images(seed: int, shape=(ROWS, 8, 28, 28)) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


CASES = {
    "conv2d": (lambda x, w: mv.nn.conv2d(x, w, pad=1), [(ROWS, 8, 28, 28), (16, 8, 3, 3)]),
    "max_pool2d": (lambda x: mv.nn.max_pool2d(x, 2), [(ROWS, 8, 28, 28)]),
    "avg_pool2d": (lambda x: mv.nn.avg_pool2d(x, 3, stride=1, pad=1), [(ROWS, 8, 28, 28)]),
    "relu_backward": (lambda x, dy: mv.nn.relu_backward(dy, x), [(ROWS, 8, 28, 28)] * 2),
    "max_pool2d_backward": (lambda x, dy: mv.nn.max_pool2d_backward(
        dy, x, mv.nn.max_pool2d(x, 2), 2), [(ROWS, 8, 28, 28), (ROWS, 8, 14, 14)]),
    "conv2d_backward_data": (lambda dy, w: mv.nn.conv2d_backward_data(
        dy, w, x_shape=(ROWS, 8, 28, 28), pad=1), [(ROWS, 16, 28, 28), (16, 8, 3, 3)]),
    "add": (lambda a, b: a + b, [(ROWS, 8, 28, 28), (ROWS, 8, 28, 28)]),
    "broadcast": (lambda a, b: a * b, [(ROWS, 8, 28, 28), (1, 8, 28, 28)]),
    "broadcast_lower_rank": (lambda a, b: a - b, [(ROWS, 8, 28, 28), (28, 28)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_split_kernel_matches_the_whole_kernel_bitwise(name, two_threads, ranges_run):
    function, shapes = CASES[name]
    arrays = [_images(seed, shape) for seed, shape in enumerate(shapes)]
    split_dev, whole_dev = two_threads
    whole = _on(whole_dev, function, *arrays)
    assert ranges_run == []              # a one-thread device never splits
    split = _on(split_dev, function, *arrays)
    assert len(ranges_run) >= 2 and any("helper" in n for n in ranges_run)
    np.testing.assert_array_equal(split, whole)


def test_pool_backward_and_conv_backward_data_split_through_autograd(two_threads,
                                                                    ranges_run):
    x, w = _images(0), _images(1, (16, 8, 3, 3))
    grads = []
    for device in two_threads:
        with mv.device(device):
            xs, ws = mv.array(x), mv.array(w)
            xs.attach_grad()
            with mv.autograd.record():
                y = mv.nn.max_pool2d(mv.relu(mv.nn.conv2d(xs, ws, pad=1)), 2)
                loss = (y * y).sum()
            loss.backward()
            grads.append(xs.grad.to_numpy())
    assert any("helper" in n for n in ranges_run)
    np.testing.assert_array_equal(grads[0], grads[1])


def test_small_kernels_and_reductions_run_whole(two_threads, ranges_run):
    split_dev, _ = two_threads
    with mv.device(split_dev):
        small = mv.array(np.ones((4, 8), np.float32))
        (small + small).wait()
        big = mv.array(_images(0))
        big.sum().wait()                       # a reduction: never split
    assert ranges_run == []


def test_filter_gradient_sums_partial_ranges_in_a_fixed_order(two_threads, ranges_run):
    dy, x = _images(0, (ROWS, 16, 28, 28)), _images(1)
    results = []
    for device in (*two_threads, two_threads[0]):
        with mv.device(device):
            dw = mv.nn.conv2d_backward_filter(mv.array(dy), mv.array(x), w_shape=(16, 8, 3, 3),
                                              pad=1)
            db = mv.nn.conv2d_backward_bias(mv.array(dy))
            results.append((dw.to_numpy(), db.to_numpy()))
    assert any("helper" in n for n in ranges_run)
    (split_w, split_b), (whole_w, whole_b), (again_w, again_b) = results
    np.testing.assert_allclose(split_w, whole_w, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(split_b, whole_b, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(split_w, again_w)    # the same order every time
    np.testing.assert_array_equal(split_b, again_b)


def test_a_failing_range_fails_the_op_and_the_device_goes_on(two_threads, ranges_run):
    split_dev, _ = two_threads
    x = _images(0)
    x[-1] = -1.0                              # only the helper's range fails
    x[:-1] = np.abs(x[:-1])
    with mv.device(split_dev):
        bad = build(FAIL_ROWS, [mv.array(x)])
        with pytest.raises(mv.OpError, match="negative row"):
            bad.wait(timeout=30)
        good = build(FAIL_ROWS, [mv.array(np.abs(x))])
        np.testing.assert_array_equal(good.to_numpy(), np.abs(x))
    assert any("helper" in n for n in ranges_run)


def test_ranges_cover_the_rows_once():
    for n in (2, 3, 7, 64):
        for parts in (2, 3, 4):
            ranges = cpu_split._ranges(n, parts)
            rows = [i for r in ranges for i in range(r.start, r.stop)]
            assert rows == list(range(n)) and all(r.stop > r.start for r in ranges)


def test_jit_replays_split_as_eager_ops_do(two_threads, ranges_run):
    split_dev, _ = two_threads
    x, w, dy = _images(0), _images(1, (16, 8, 3, 3)), _images(2, (ROWS, 16, 28, 28))

    def step(x, w, dy):
        y = mv.relu(mv.nn.conv2d(x, w, pad=1)) * 2.0
        dw = mv.nn.conv2d_backward_filter(dy, x, w_shape=(16, 8, 3, 3), pad=1)
        return y, dw
    jitted = mv.jit(step)
    with mv.device(split_dev):
        args = [mv.array(a) for a in (x, w, dy)]
        eager = [r.to_numpy() for r in step(*args)]
        for _ in range(3):
            ranges_run.clear()
            got = [r.to_numpy() for r in jitted(*args)]
            for g, e in zip(got, eager):
                np.testing.assert_array_equal(g, e)
        assert jitted.stats()["n_replays"] == 2
        # the last call was a replay: conv, the fused relu and multiply (one cache-blocked
        # kernel, jit.md "Fusion") and the filter gradient split
        assert jitted.fused_kernels() == [("relu", "multiply_scalar")]
        assert sum("helper" in n for n in ranges_run) >= 3
        checked = mv.jit(step, check=True)    # each call also eager: bitwise, or JitError
        for _ in range(2):
            checked(*args)[1].wait(timeout=30)


def _blas_rows_impl(xp, x, *, out, counts):
    openblas = openblas_controllers()   # NumPy's first
    counts.append(openblas[0].get_num_threads() if openblas else None)
    out[...] = x @ np.eye(x.shape[-1], dtype=x.dtype)


BLAS_ROWS = registry.register("test_blas_rows", _fail_rows_infer, _blas_rows_impl)
BLAS_ROWS.row_split, BLAS_ROWS.blas = (0,), True


def test_a_split_blas_kernel_runs_each_range_on_one_blas_thread():
    splitter = cpu_split.RowSplitter("test-split")
    x = np.random.default_rng(0).standard_normal((256, 512))
    out, counts = np.empty_like(x), []   # not element-wise: one range per thread
    try:
        assert splitter.run(2, BLAS_ROWS, np, [x], out, {"counts": counts})
    finally:
        splitter.shutdown()
    np.testing.assert_array_equal(out, x @ np.eye(512))
    assert len(counts) == 2
    if counts[0] is not None:   # OpenBLAS: one thread per range; the next holder sets its own
        assert counts == [1, 1]
        BLAS.hold(2)
        try:
            assert _blas_count() == 2
        finally:
            BLAS.release()


def _blas_count():
    """NumPy's OpenBLAS's thread count."""
    return openblas_controllers()[0].get_num_threads()


def _mutating_program(xp, a, b):
    """Big element-wise work through views and in place, as NumPy does it."""
    a[::2] += b[1::2]                        # strided views, in place
    a[:, 3:] *= 2.0
    c = xp.where(a > 0, a, b) - b[:1]        # broadcast input passed whole
    xp.clip(c, -1.0, 1.0, out=c)
    d = c.T.astype(xp.float64) ** 2          # a transposed (F-ordered) input
    a[1:] += a[:-1]                          # overlapping update: right side read first
    return a, c, d


def test_split_kernels_through_views_and_in_place_match_numpy(two_threads, ranges_run):
    split_dev, _ = two_threads
    base_a = np.random.default_rng(5).standard_normal((512, 640)).astype(np.float32)
    base_b = np.random.default_rng(6).standard_normal((512, 640)).astype(np.float32)
    want = _mutating_program(np, base_a.copy(), base_b.copy())
    with mv.device(split_dev):
        got = _mutating_program(mv, mv.array(base_a), mv.array(base_b))
        got = [g.to_numpy() for g in got]
    assert any("helper" in n for n in ranges_run)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
