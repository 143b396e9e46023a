"""``mv.sinc``, NumPy's normalized sinc ``sin(pi x) / (pi x)``, against NumPy itself: values
and dtypes (integers, floats, complex, zero), ``numpy.sinc`` on NArrays, views, and its
gradient (``(cos(pi x) - sinc(x)) / x``, 0 at 0) against NumPy's own derivative."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv

VALUES = np.array([[-2.5, -1.0, -0.25, 0.0], [0.1, 0.5, 1.0, 3.75]])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int8, np.bool_,
                                   np.complex128])
def test_sinc_is_numpys(engine, dtype):
    host = VALUES.astype(dtype) if dtype is not np.bool_ else VALUES > 0
    got = mv.sinc(mv.array(host))
    want = np.sinc(host)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-6)


def test_sinc_of_host_values_views_and_through_numpy(engine):
    np.testing.assert_allclose(mv.sinc([0.0, 0.5]).to_numpy(), np.sinc([0.0, 0.5]))
    assert float(mv.sinc(0.0)) == 1.0
    x = mv.array(VALUES)
    np.testing.assert_allclose(mv.sinc(x.T[::2]).to_numpy(), np.sinc(VALUES.T[::2]))
    through_numpy = np.sinc(x)
    assert isinstance(through_numpy, mv.NArray)
    np.testing.assert_allclose(through_numpy.to_numpy(), np.sinc(VALUES))


def _numpy_derivative(x: np.ndarray) -> np.ndarray:
    safe = np.where(x == 0, 1.0, x)
    return np.where(x == 0, 0.0, (np.cos(np.pi * x) - np.sinc(x)) / safe)


def test_sinc_gradient(engine):
    x = mv.array(VALUES)
    x.attach_grad()
    with mv.autograd.record():
        y = mv.sinc(x) * mv.array([[1.0, 2.0, 3.0, 4.0]])
    y.backward()
    np.testing.assert_allclose(x.grad.to_numpy(),
                               _numpy_derivative(VALUES) * np.array([[1.0, 2.0, 3.0, 4.0]]),
                               rtol=1e-10, atol=1e-12)


def test_sinc_gradient_matches_finite_differences(engine):
    points = np.array([-1.3, -0.2, 0.05, 0.7, 2.2])
    x = mv.array(points)
    x.attach_grad()
    with mv.autograd.record():
        y = mv.sinc(x).sum()
    y.backward()
    step = 1e-6
    numeric = (np.sinc(points + step) - np.sinc(points - step)) / (2 * step)
    np.testing.assert_allclose(x.grad.to_numpy(), numeric, rtol=1e-6, atol=1e-8)
