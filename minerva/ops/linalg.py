"""Matrix products: ``matmul`` for 1-D, 2-D and batched operands, by NumPy's rules, with
optional transposition of either operand's last two axes inside the kernel (BLAS reads the
transposed operand in place: no copy is made, unlike ``a.T @ b``)."""
from __future__ import annotations

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
