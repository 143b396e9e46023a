"""Ops of NumPy's array-creation functions: constant fills, host data, ranges, seeded random
draws, the matrices ``eye`` and ``tri``, and the triangles of ``tril``/``triu``.

Random ops draw on the host with ``numpy.random.default_rng(seed)`` and copy the result
to the device, so a seed gives the same values on every engine and every device.
"""
from __future__ import annotations

import math

import numpy as np

from minerva.ops import dtypes
from minerva.ops.registry import ArraySpec, register


def _fill_infer(*, shape, dtype, value):
    return (ArraySpec(shape, dtype),)


def _fill_impl(xp, *, out, shape, dtype, value):
    out.fill(value)


def _empty_infer(*, shape, dtype):
    return (ArraySpec(shape, dtype),)


def _empty_impl(xp, *, out, shape, dtype):
    """Nothing to compute: the values of an empty array are whatever the buffer holds."""


def _from_host_infer(*, data):
    return (ArraySpec(data.shape, data.dtype),)


def _from_host_impl(xp, *, out, data):
    out[...] = xp.asarray(data)


def arange_length(start, stop, step) -> int:
    """Number of values ``numpy.arange(start, stop, step)`` yields."""
    return max(0, math.ceil((stop - start) / step))


def _arange_infer(*, start, stop, step, dtype):
    return (ArraySpec((arange_length(start, stop, step),), dtype),)


def _arange_impl(xp, *, out, start, stop, step, dtype):
    out[...] = xp.arange(start, stop, step, dtype=dtype)


def draw(kind: str, shape: tuple, dtype, params: tuple, seed) -> np.ndarray:
    """Host values of one random op: ``normal`` (mu, sigma), ``uniform`` (low, high),
    ``bernoulli`` (prob)."""
    rng = np.random.default_rng(seed)
    work = np.float32 if np.dtype(dtype) == np.float32 else np.float64
    if kind == "normal":
        mu, sigma = params
        values = rng.standard_normal(shape, dtype=work) * work(sigma) + work(mu)
    elif kind == "uniform":
        low, high = params
        values = rng.random(shape, dtype=work) * work(high - low) + work(low)
    else:
        (prob,) = params
        values = rng.random(shape, dtype=np.float64) < prob
    return values.astype(dtype, copy=False)


def _random_infer(*, kind, shape, dtype, params, seed):
    return (ArraySpec(shape, dtype),)


def _random_impl(xp, *, out, kind, shape, dtype, params, seed):
    out[...] = xp.asarray(draw(kind, shape, dtype, params, seed))


# ---- matrices -------------------------------------------------------------------------

def _matrix_infer(name):
    function = getattr(np, name)

    def infer(*, n, m, k, dtype):
        if dtype.kind not in dtypes.NUMERIC_KINDS:  # NumPy's TypeError for bytes records
            dtypes.numpy_dtype(name, function, 1, dtype=dtype)
        return (ArraySpec((n, m), dtype),)
    return infer

def _eye_impl(xp, *, out, n, m, k, dtype):
    out[...] = xp.eye(n, m, k, dtype=dtype)

def _tri_impl(xp, *, out, n, m, k, dtype):
    out[...] = xp.tri(n, m, k, dtype=dtype)

def _triangle_infer(x, *, k, lower):
    rows, cols = x.shape[-2:] if len(x.shape) >= 2 else (x.shape[-1],) * 2
    shape = np.broadcast_shapes(x.shape, (rows, cols))
    return (ArraySpec(tuple(shape), x.dtype),)

def _triangle_impl(xp, x, *, out, k, lower):
    rows, cols = out.shape[-2:]
    mask = xp.tri(rows, cols, k if lower else k - 1, dtype=bool)
    if not lower:
        mask = ~mask
    out[...] = xp.where(mask, x, xp.zeros(1, x.dtype))


register("fill", _fill_infer, _fill_impl)
register("empty", _empty_infer, _empty_impl)
register("from_host", _from_host_infer, _from_host_impl)
register("arange", _arange_infer, _arange_impl)
register("random", _random_infer, _random_impl)
register("eye", _matrix_infer("eye"), _eye_impl)
register("tri", _matrix_infer("tri"), _tri_impl)
register("triangle", _triangle_infer, _triangle_impl)
