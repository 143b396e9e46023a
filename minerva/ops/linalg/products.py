"""Products: ``matmul`` for 1-D, 2-D and batched operands, by NumPy's rules, with
optional transposition of either operand's last two axes inside the kernel (BLAS reads the
transposed operand in place: no copy is made, unlike ``a.T @ b``); ``tensordot``,
``vdot``, ``inner``, ``outer``, ``kron``, ``cross`` and ``vecdot``; ``convolve`` and
``correlate``, the sliding products of two 1-D arrays.

The faces normalize axes (non-negative ints); the shape rules here trust them. Result
dtypes are NumPy's, found by calling NumPy's function on tiny arrays.
"""
from __future__ import annotations

import math

import numpy as np

from minerva.ops import dtypes
from minerva.ops.elementwise import broadcast_shape
from minerva.ops.registry import ArraySpec, register, shape_error


def _swap_last(spec: ArraySpec, flag: bool, name: str) -> ArraySpec:
    if not flag:
        return spec
    if len(spec.shape) < 2:
        raise shape_error("matmul", f"{name} needs at least 2 dimensions", spec)
    return ArraySpec(spec.shape[:-2] + spec.shape[:-3:-1], spec.dtype)


def _matmul_infer(a: ArraySpec, b: ArraySpec, *, transpose_a=False, transpose_b=False):
    a, b = _swap_last(a, transpose_a, "transpose_a"), _swap_last(b, transpose_b, "transpose_b")
    if not a.shape or not b.shape:
        raise shape_error("matmul", "operands must have at least one dimension", a, b)
    a_shape = (1,) + a.shape if len(a.shape) == 1 else a.shape
    b_shape = b.shape + (1,) if len(b.shape) == 1 else b.shape
    if a_shape[-1] != b_shape[-2]:
        raise shape_error("matmul", f"inner dimensions differ ({a_shape[-1]} vs "
                          f"{b_shape[-2]})", a, b)
    batch = broadcast_shape("matmul", ArraySpec(a_shape[:-2], a.dtype),
                            ArraySpec(b_shape[:-2], b.dtype))
    shape = batch + (() if len(a.shape) == 1 else (a_shape[-2],)) \
        + (() if len(b.shape) == 1 else (b_shape[-1],))
    return (ArraySpec(shape, dtypes.result_dtype("matmul", np.matmul, a, b)),)


def _matmul_impl(xp, a, b, *, out, transpose_a=False, transpose_b=False):
    if transpose_a:
        a = a.swapaxes(-1, -2)
    if transpose_b:
        b = b.swapaxes(-1, -2)
    xp.matmul(a, b, out=out)


register("matmul", _matmul_infer, _matmul_impl)


# ---- tensordot, vdot, inner, outer, kron ---------------------------------------------------

def _tensordot_infer(a: ArraySpec, b: ArraySpec, *, axes):
    axes_a, axes_b = axes
    if len(axes_a) != len(axes_b) or any(a.shape[i] != b.shape[j]
                                         for i, j in zip(axes_a, axes_b)):
        raise shape_error("tensordot", "shape-mismatch for sum", a, b)
    shape = tuple(n for i, n in enumerate(a.shape) if i not in axes_a) + \
        tuple(n for j, n in enumerate(b.shape) if j not in axes_b)
    return (ArraySpec(shape, dtypes.result_dtype("tensordot", np.matmul, a, b)),)


def _tensordot_impl(xp, a, b, *, out, axes):
    out[...] = xp.tensordot(a, b, axes)


register("tensordot", _tensordot_infer, _tensordot_impl)


def _vdot_infer(a: ArraySpec, b: ArraySpec):
    if math.prod(a.shape) != math.prod(b.shape):
        raise shape_error("vdot", "vectors have different lengths", a, b)
    return (ArraySpec((), dtypes.result_dtype("vdot", np.vdot, a, b)),)


def _vdot_impl(xp, a, b, *, out):
    out[...] = xp.vdot(a, b)


register("vdot", _vdot_infer, _vdot_impl)


def _inner_infer(a: ArraySpec, b: ArraySpec):
    dtype = dtypes.result_dtype("inner", np.inner, a, b)
    if not a.shape or not b.shape:
        return (ArraySpec(a.shape or b.shape, dtype),)
    if a.shape[-1] != b.shape[-1]:
        raise shape_error("inner", f"shapes {a.shape} and {b.shape} not aligned: "
                          f"{a.shape[-1]} (dim {len(a.shape) - 1}) != {b.shape[-1]} "
                          f"(dim {len(b.shape) - 1})")
    return (ArraySpec(a.shape[:-1] + b.shape[:-1], dtype),)


def _inner_impl(xp, a, b, *, out):
    out[...] = xp.inner(a, b)


register("inner", _inner_infer, _inner_impl)


def _outer_infer(a: ArraySpec, b: ArraySpec):
    shape = (math.prod(a.shape), math.prod(b.shape))
    return (ArraySpec(shape, dtypes.result_dtype("outer", np.outer, a, b)),)


def _outer_impl(xp, a, b, *, out):
    xp.multiply(a.reshape(-1, 1), b.reshape(1, -1), out=out)


register("outer", _outer_infer, _outer_impl)


def _kron_infer(a: ArraySpec, b: ArraySpec):
    ndim = max(len(a.shape), len(b.shape))
    a_shape = (1,) * (ndim - len(a.shape)) + a.shape
    b_shape = (1,) * (ndim - len(b.shape)) + b.shape
    shape = tuple(m * n for m, n in zip(a_shape, b_shape))
    return (ArraySpec(shape, dtypes.result_dtype("kron", np.kron, a, b)),)


def _kron_impl(xp, a, b, *, out):
    out[...] = xp.kron(a, b)


register("kron", _kron_infer, _kron_impl)


# ---- convolve, correlate ----------------------------------------------------------------------

SLIDING_LENGTHS = {"full": lambda n, m: n + m - 1, "same": max,
                   "valid": lambda n, m: max(n, m) - min(n, m) + 1}
"""The output length of a sliding product of 1-D arrays of lengths n and m, by mode."""


def _sliding(name: str, function):
    """The shape rule and kernel of ``numpy.<name>`` over non-empty 1-D arrays (the face
    checks them); attribute ``mode``: a key of ``SLIDING_LENGTHS``."""
    def infer(a: ArraySpec, v: ArraySpec, *, mode):
        length = SLIDING_LENGTHS[mode](a.shape[0], v.shape[0])
        return (ArraySpec((length,), dtypes.result_dtype(name, function, a, v)),)

    def impl(xp, a, v, *, out, mode):
        out[...] = getattr(xp, name)(a, v, mode=mode)
    return infer, impl


register("convolve", *_sliding("convolve", np.convolve))
register("correlate", *_sliding("correlate", np.correlate))


# ---- cross ------------------------------------------------------------------------------

def _cross_dtype(a: ArraySpec, b: ArraySpec):
    def probe(x, y):
        return np.cross(np.resize(x, 3), np.resize(y, 3))
    return dtypes.result_dtype("cross", probe, a, b)


def _cross_infer(a: ArraySpec, b: ArraySpec, *, axisa, axisb, axisc):
    n_a, n_b = a.shape[axisa], b.shape[axisb]
    if n_a not in (2, 3) or n_b not in (2, 3):
        raise shape_error("cross", "incompatible dimensions for cross product (dimension "
                          "must be 2 or 3)", a, b)
    rest_a = ArraySpec(a.shape[:axisa] + a.shape[axisa + 1:], a.dtype)
    rest_b = ArraySpec(b.shape[:axisb] + b.shape[axisb + 1:], b.dtype)
    shape = broadcast_shape("cross", rest_a, rest_b)
    if 3 in (n_a, n_b):
        shape = shape[:axisc] + (3,) + shape[axisc:]
    return (ArraySpec(shape, _cross_dtype(a, b)),)


def _cross_impl(xp, a, b, *, out, axisa, axisb, axisc):
    """NumPy's ``cross``, element by element: the same products and differences."""
    a = xp.moveaxis(a, axisa, -1).astype(out.dtype, copy=False)
    b = xp.moveaxis(b, axisb, -1).astype(out.dtype, copy=False)
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        out[...] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
        return
    cp = xp.moveaxis(out, axisc, -1)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    if a.shape[-1] == 2:
        b2 = b[..., 2]
        cp[..., 0] = a1 * b2
        cp[..., 1] = -(a0 * b2)
    elif b.shape[-1] == 2:
        a2 = a[..., 2]
        cp[..., 0] = -(a2 * b1)
        cp[..., 1] = a2 * b0
    else:
        a2, b2 = a[..., 2], b[..., 2]
        cp[..., 0] = a1 * b2 - a2 * b1
        cp[..., 1] = a2 * b0 - a0 * b2
    cp[..., 2] = a0 * b1 - a1 * b0


register("cross", _cross_infer, _cross_impl)


# ---- vecdot ---------------------------------------------------------------------------

def _vecdot_infer(a: ArraySpec, b: ArraySpec, *, axis_a, axis_b):
    if a.shape[axis_a] != b.shape[axis_b]:
        raise shape_error("vecdot", f"mismatch in the core dimension ({a.shape[axis_a]} "
                          f"vs {b.shape[axis_b]})", a, b)
    rest_a = ArraySpec(a.shape[:axis_a] + a.shape[axis_a + 1:], a.dtype)
    rest_b = ArraySpec(b.shape[:axis_b] + b.shape[axis_b + 1:], b.dtype)
    shape = broadcast_shape("vecdot", rest_a, rest_b)
    return (ArraySpec(shape, dtypes.result_dtype("vecdot", _vecdot_probe, a, b)),)


def _vecdot_probe(a, b):
    return np.vecdot(a, b) if hasattr(np, "vecdot") else np.sum(np.conj(a) * b)


def _vecdot_impl(xp, a, b, *, out, axis_a, axis_b):
    a = xp.moveaxis(a, axis_a, -1)
    b = xp.moveaxis(b, axis_b, -1)
    vecdot = getattr(xp, "vecdot", None)
    if vecdot is not None:
        vecdot(a, b, out=out)
        return
    if a.dtype.kind == "c":
        a = a.conj()
    out[...] = xp.matmul(a[..., None, :], b[..., :, None])[..., 0, 0]


register("vecdot", _vecdot_infer, _vecdot_impl)
