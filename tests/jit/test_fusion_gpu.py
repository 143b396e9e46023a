"""Fused jit replays on GPU devices, over the CUDA test double: the generated
``ElementwiseKernel`` (its parameters and body), compiled once per plan, and replays equal
to eager minerva and NumPy (the double evaluates the kernel's body with NumPy:
``tests/support/fake_elementwise.py``). Nothing here needs numexpr or a GPU."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from minerva.device.gpu import fused as gpu_fused
from tests.support.fake_cuda import gpu_runtime
from tests.support.jit_fixtures import assert_same


@pytest.fixture
def layer(monkeypatch):
    """The current device: a GPU device over the CUDA test double (yielded)."""
    yield from gpu_runtime(monkeypatch)


def step(ns, x, b, scale):
    """A layer's forward and an update: bias, relu, a sigmoid, an in-place scaling."""
    h = ns.maximum(x * 2.0 + b, 0.0)
    y = 1 / (1 + ns.exp(-h)) - 0.5
    scale *= 0.75
    return ns.where(y > 0.1, y, scale * y), scale


def test_a_fused_replay_on_the_double_equals_eager_and_numpy(layer):
    rng = np.random.default_rng(0)
    xh = rng.standard_normal((16, 8)).astype(np.float32)
    bh = rng.standard_normal(8).astype(np.float32)
    sh = rng.standard_normal((16, 8)).astype(np.float32)
    want_scale = sh.copy()
    jitted = mv.jit(lambda *xs: step(mv, *xs))
    scale = mv.array(sh)
    eager_scale = mv.array(sh)
    for _ in range(3):
        got, _ = jitted(mv.array(xh), mv.array(bh), scale)
        eager, _ = step(mv, mv.array(xh), mv.array(bh), eager_scale)
        want, _ = step(np, xh, bh, want_scale)
        assert_same(want, got)
        assert_same(eager, got)
        assert_same(want_scale, scale)
    assert jitted.fused_kernels() == [   # y, read three times in one kernel, is not stored
        ("multiply_scalar", "add", "maximum_scalar", "negative", "exp", "add_scalar",
         "divide_scalar", "subtract_scalar", "greater_scalar", "multiply", "where")]
    (kernel,) = layer.kernels
    assert kernel.n_calls == 2 and kernel.operation.count("mv_exp(") == 3


def test_the_kernel_is_generated_once_per_plan_with_typed_parameters(layer):
    jitted = mv.jit(lambda x, y: (x * 3.0 - y) * y + 1.5)
    x = mv.array(np.linspace(-1, 1, 40))
    y = mv.array(np.linspace(2, 3, 40))
    for _ in range(4):
        got = jitted(x, y)
    hx, hy = np.linspace(-1, 1, 40), np.linspace(2, 3, 40)
    assert_same((hx * 3.0 - hy) * hy + 1.5, got)
    (kernel,) = layer.kernels
    assert [(name, dtype.name) for name, dtype in kernel.in_params] == [
        ("in0", "float64"), ("in1", "float64")]
    assert [(name, dtype.name) for name, dtype in kernel.out_params] == [("out0", "float64")]
    three, one_half = (int(np.float64(v).view(np.uint64)) for v in (3.0, 1.5))
    assert kernel.operation == (
        f"out0 = mv_add(mv_mul(mv_sub(mv_mul(in0, mv_f64({three}ULL)), in1), in1), "
        f"mv_f64({one_half}ULL));")
    assert kernel.preamble == gpu_fused.PREAMBLE and "__dmul_rn" in kernel.preamble
    assert kernel.name.startswith("minerva_fused_")
    assert kernel.n_calls == 3    # the recording ran eagerly; three replays, one kernel


def test_integer_and_comparison_kernels_on_the_double(layer):
    jitted = mv.jit(lambda a, b: mv.where(a * 2 > b, a - b, b * 3))
    ah = np.arange(-10, 10, dtype=np.int32)
    bh = np.arange(20, dtype=np.int32)[::-1].copy()
    for _ in range(2):
        got = jitted(mv.array(ah), mv.array(bh))
    assert_same(np.where(ah * 2 > bh, ah - bh, bh * 3), got)
    (kernel,) = layer.kernels
    assert "mv_i32(2LL)" in kernel.operation and "mv_gt(" in kernel.operation
    assert jitted.stats()["n_fused"] == 5


@pytest.mark.parametrize("level", ["exact", "all"])
def test_powers_fuse_on_a_gpu_at_level_all_only(layer, level):
    def f(x):
        return (1.0 - x) ** 2.0 + x * 3.0
    host = np.linspace(-2, 2, 24)
    jitted = mv.jit(f, fuse=level)
    for _ in range(2):
        got = jitted(mv.array(host))
    assert_same(f(host), got)
    if level == "all":   # x ** 2.0 is written x * x
        (kernel,) = layer.kernels
        assert kernel.operation.count("mv_mul(") == 2
        assert jitted.stats()["n_fused"] == 4
    else:                # CuPy's eager power calls CUDA's pow: the steps stay unfused
        assert jitted.stats()["n_fused"] == 0 and not layer.kernels
