"""Ops of NumPy's array-manipulation functions: reshape (a copy: views need no op),
transpose, concatenate and stack; roll, tile, repeat, pad and masked ``copyto``.

The faces (``minerva.api``) normalize every argument (axes non-negative, shapes and index
lists as tuples) and raise NumPy's errors; the shape rules here trust them.
"""
from __future__ import annotations

import itertools
import math
import operator

import numpy as np

from minerva.ops import dtypes
from minerva.ops.registry import ArraySpec, register, shape_error


def resolve_shape(name: str, spec: ArraySpec, shape) -> tuple:
    """``shape`` with a ``-1`` resolved; ShapeError when the sizes disagree."""
    try:
        shape = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise shape_error(name, f"shape must be ints, got {shape!r}") from None
    unknown = [i for i, n in enumerate(shape) if n == -1]
    if len(unknown) > 1 or any(n < -1 for n in shape):
        raise shape_error(name, f"invalid shape {shape}", spec)
    size = math.prod(spec.shape)
    known = math.prod(n for n in shape if n != -1)
    if unknown:
        if known == 0 or size % known:
            raise shape_error(name, f"cannot reshape size {size} into {shape}", spec)
        shape = tuple(size // known if n == -1 else n for n in shape)
    if math.prod(shape) != size:
        raise shape_error(name, f"cannot reshape size {size} into {shape}", spec)
    return shape

def _reshape_infer(x, *, shape):
    return (ArraySpec(shape, x.dtype),)

def _reshape_impl(xp, x, *, out, shape):
    out.reshape(x.shape)[...] = x

def _transpose_infer(x, *, axes):
    return (ArraySpec(tuple(x.shape[a] for a in axes), x.dtype),)

def _transpose_impl(xp, x, *, out, axes):
    out[...] = x.transpose(axes)

def _join_check(name, specs, axis):
    first = specs[0]
    for spec in specs[1:]:
        if len(spec.shape) != len(first.shape):
            raise shape_error(name, "all inputs must have the same number of dimensions",
                              *specs)
        for i, (m, n) in enumerate(zip(first.shape, spec.shape)):
            if i != axis and m != n:
                raise shape_error(name, f"sizes differ along axis {i}", *specs)

def _concatenate_infer(*specs, axis):
    if axis is None:
        shape = (sum(math.prod(s.shape) for s in specs),)
    else:
        _join_check("concatenate", specs, axis)
        shape = list(specs[0].shape)
        shape[axis] = sum(s.shape[axis] for s in specs)
    return (ArraySpec(tuple(shape), dtypes.result_dtype("concatenate", _np_join, *specs)),)

def _np_join(*arrays):
    return np.concatenate(arrays)

def _concatenate_impl(xp, *arrays, out, axis):
    xp.concatenate(arrays, axis=axis, out=out)

def _stack_infer(*specs, axis):
    if any(s.shape != specs[0].shape for s in specs):
        raise shape_error("stack", "all inputs must have the same shape", *specs)
    shape = list(specs[0].shape)
    shape.insert(axis, len(specs))
    return (ArraySpec(tuple(shape), dtypes.result_dtype("stack", _np_join, *specs)),)

def _stack_impl(xp, *arrays, out, axis):
    xp.stack(arrays, axis=axis, out=out)

# ---- moving and repeating elements ----------------------------------------------------

def _same_infer(x, **attrs):
    return (ArraySpec(x.shape, x.dtype),)

def _roll_impl(xp, x, *, out, shift, axis):
    """NumPy's roll written straight into ``out``: per rolled axis, the part pushed past
    the end copied to the start and the rest after it (``numpy.roll``'s own cut)."""
    shifts = shift if isinstance(shift, tuple) else (shift,)
    axes = axis if isinstance(axis, tuple) else (axis,)
    whole = (slice(None), slice(None))
    cuts = [(whole,)] * x.ndim
    for ax, step in zip(axes, shifts):
        n = x.shape[ax]
        step = step % n if n else 0
        if step:
            cuts[ax] = ((slice(None, -step), slice(step, None)),
                        (slice(-step, None), slice(None, step)))
    for pieces in itertools.product(*cuts):
        out[tuple(p[1] for p in pieces)] = x[tuple(p[0] for p in pieces)]

def tiled_shape(shape: tuple, reps: tuple) -> tuple:
    """Shape of ``numpy.tile`` of an array of ``shape`` by ``reps``."""
    ndim = max(len(shape), len(reps))
    shape = (1,) * (ndim - len(shape)) + tuple(shape)
    reps = (1,) * (ndim - len(reps)) + tuple(reps)
    return tuple(n * r for n, r in zip(shape, reps))

def _tile_infer(x, *, reps):
    return (ArraySpec(tiled_shape(x.shape, reps), x.dtype),)

def _tile_impl(xp, x, *, out, reps):
    out[...] = xp.tile(x, reps)

def _repeat_infer(x, *, repeats, axis):
    shape = (math.prod(x.shape),) if axis is None else x.shape
    at = 0 if axis is None else axis
    if isinstance(repeats, tuple):
        if len(repeats) not in (1, shape[at]):
            raise shape_error("repeat", f"operands could not be broadcast together with "
                              f"shape ({shape[at]},) ({len(repeats)},)", x)
        total = sum(repeats) if len(repeats) == shape[at] else repeats[0] * shape[at]
    else:
        total = repeats * shape[at]
    return (ArraySpec(shape[:at] + (total,) + shape[at + 1:], x.dtype),)

def _repeat_impl(xp, x, *, out, repeats, axis):
    out[...] = xp.repeat(x, list(repeats) if isinstance(repeats, tuple) else repeats, axis)

def _pad_infer(x, *, pad_width, mode, options):
    shape = tuple(n + before + after for n, (before, after) in zip(x.shape, pad_width))
    return (ArraySpec(shape, x.dtype),)

def _pad_impl(xp, x, *, out, pad_width, mode, options):
    if mode == "median" and not isinstance(x, np.ndarray):  # CuPy has no median padding
        out[...] = xp.asarray(np.pad(x.get(), pad_width, mode, **dict(options)))
        return
    out[...] = xp.pad(x, pad_width, mode, **dict(options))

def _copyto_infer(src, mask, *, shape, dtype):
    for spec in (src, mask):
        try:
            if np.broadcast_shapes(spec.shape, shape) != shape:
                raise ValueError
        except ValueError:
            raise shape_error("copyto", f"could not broadcast input array from shape "
                              f"{spec.shape} into shape {shape}") from None
    return (ArraySpec(shape, dtype),)

def _copyto_impl(xp, src, mask, *, out, shape, dtype):
    xp.copyto(out, src, casting="unsafe", where=mask)


register("reshape", _reshape_infer, _reshape_impl)
register("transpose", _transpose_infer, _transpose_impl)
register("concatenate", _concatenate_infer, _concatenate_impl)
register("stack", _stack_infer, _stack_impl)
register("roll", _same_infer, _roll_impl)
register("tile", _tile_infer, _tile_impl)
register("repeat", _repeat_infer, _repeat_impl)
register("pad", _pad_infer, _pad_impl)
register("copyto", _copyto_infer, _copyto_impl)
