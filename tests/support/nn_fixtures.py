"""Shared helpers for the NN op tests: the ``xp`` fixture and ``run_op``.

``xp`` is ``numpy`` always and ``cupy`` (marked ``gpu``) when CuPy imports and sees a GPU.
``run_op(xp, name, *host_arrays, **attrs)`` runs an op's ``infer`` and ``impl`` directly:
inputs are copied to ``xp``, the output is preallocated full of garbage (NaN or a sentinel)
so an impl that leaves part of ``out`` unwritten fails, and the result comes back as NumPy.
It also checks that ``impl`` did not modify its inputs.
"""
from __future__ import annotations

import numpy as np
import pytest

import minerva.ops  # noqa: F401  (registers every op)
from minerva.ops import registry


def _cupy_or_none():
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:  # noqa: BLE001  (no CuPy, no driver, no device: all mean skip)
        return None
    return cupy


@pytest.fixture(params=["numpy", pytest.param("cupy", marks=pytest.mark.gpu)])
def xp(request):
    """The array module under test: ``numpy``, or ``cupy`` (skipped without a GPU)."""
    if request.param == "numpy":
        return np
    cupy = _cupy_or_none()
    if cupy is None:
        pytest.skip("CuPy or a GPU is not available")
    return cupy


def to_host(a) -> np.ndarray:
    """A NumPy copy of ``a`` (a NumPy or CuPy array)."""
    return a.get() if hasattr(a, "get") else np.array(a)


def infer(name: str, *arrays, **attrs):
    """The output specs of op ``name`` for inputs shaped like ``arrays``."""
    specs = [registry.spec(a.shape, a.dtype) for a in arrays]
    return registry.get(name).infer(*specs, **attrs)


def _garbage(xp, out_spec):
    if np.issubdtype(out_spec.dtype, np.floating):
        return xp.full(out_spec.shape, np.nan, dtype=out_spec.dtype)
    return xp.full(out_spec.shape, 123456789, dtype=out_spec.dtype)


def run_op(xp, name: str, *arrays, **attrs) -> np.ndarray:
    """Run op ``name`` on ``xp`` with host inputs ``arrays``; returns the NumPy result."""
    (out_spec,) = infer(name, *arrays, **attrs)
    before = [np.array(a, copy=True) for a in arrays]
    dev_inputs = [xp.asarray(a) for a in arrays]
    out = _garbage(xp, out_spec)
    registry.get(name).impl(xp, *dev_inputs, out=out, **attrs)
    for original, dev in zip(before, dev_inputs):
        np.testing.assert_array_equal(to_host(dev), original, err_msg=f"{name} wrote an input")
    result = to_host(out)
    assert result.shape == out_spec.shape and result.dtype == out_spec.dtype
    return result


def numeric_grad(f, a: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of scalar ``f`` at float64 array ``a``."""
    a = a.astype(np.float64, copy=True)
    grad = np.empty_like(a)
    for idx in np.ndindex(a.shape):
        saved = a[idx]
        a[idx] = saved + eps
        up = f(a)
        a[idx] = saved - eps
        down = f(a)
        a[idx] = saved
        grad[idx] = (up - down) / (2 * eps)
    return grad
