"""Inputs and comparisons shared by the linear-algebra tests."""
from __future__ import annotations

import numpy as np

import minerva as mv

FLOATS = (np.float32, np.float64)


def matrices(rng, shape, dtype=np.float64):
    """Well-conditioned matrices (diagonally dominant) of ``shape`` (..., M, N)."""
    values = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * rng.standard_normal(shape)
    if len(shape) >= 2:
        values = values + 2 * max(shape[-2:]) * np.eye(shape[-2], shape[-1])
    if np.issubdtype(dtype, np.integer):
        values = np.rint(values)
    return values.astype(dtype)


def hermitian(rng, shape, dtype=np.float64):
    """Hermitian positive-definite matrices."""
    a = matrices(rng, shape, dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2))).astype(dtype)


def check(got, want, rtol=None):
    """``got`` (an NArray or a tuple of them) equals ``want``: dtype, shape and values
    (exactly, or within ``rtol``)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            check(g, w, rtol)
        return
    values, want = np.asarray(got), np.asarray(want)
    assert values.dtype == want.dtype and values.shape == want.shape, (values, want)
    if rtol is None:
        np.testing.assert_array_equal(values, want)
    else:
        np.testing.assert_allclose(values, want, rtol=rtol, atol=rtol)


def both(rng, shape, dtype=np.float64, make=matrices):
    values = make(rng, shape, dtype)
    return values, mv.array(values)
