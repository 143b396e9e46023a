"""Gradient rules of the array-manipulation ops (``ops.manipulation``): reshape,
transpose, concatenate, stack, roll, tile, repeat and pad. Over the injected namespace
``ns``.

Each rule moves the output gradient back to where each element came from: reshaped or
transposed back, split among the joined inputs, a roll the other way, sums over the
copies of tile and repeat, the interior of a constant pad (a scatter-add through an index
map for the other index-only modes). ``copyto`` has no gradient.
"""
from __future__ import annotations

import numpy as np

from minerva.ops import manipulation  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.registry import defvjp, nondifferentiable


def _reshape(ns, ctx, g):
    return [ns.reshape(g[0], ctx.in_specs[0].shape)]

def _transpose(ns, ctx, g):
    axes = ctx.attrs["axes"]
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return [ns.transpose(g[0], tuple(inverse))]

def _concatenate(ns, ctx, g):
    axis = ctx.attrs["axis"]
    grad = g[0] if axis is not None else ns.ravel(g[0])
    axis = 0 if axis is None else axis
    result, start = [], 0
    for spec in ctx.in_specs:
        n = spec.shape[axis] if ctx.attrs["axis"] is not None else _size(spec.shape)
        index = (slice(None),) * axis + (slice(start, start + n),)
        piece = grad[index]
        result.append(ns.reshape(piece, spec.shape) if ctx.attrs["axis"] is None else piece)
        start += n
    return result

def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n

def _stack(ns, ctx, g):
    axis = ctx.attrs["axis"]
    return [g[0][(slice(None),) * axis + (i,)] for i in range(len(ctx.in_specs))]

def _roll(ns, ctx, g):
    shift, axis = ctx.attrs["shift"], ctx.attrs["axis"]
    back = tuple(-s for s in shift) if isinstance(shift, tuple) else -shift
    return [ns.roll(g[0], back, axis)]

def _tile(ns, ctx, g):
    """Sum the gradient over the copies: each axis split into (copies, size)."""
    shape, reps = ctx.in_specs[0].shape, ctx.attrs["reps"]
    ndim = max(len(shape), len(reps))
    padded = (1,) * (ndim - len(shape)) + tuple(shape)
    reps = (1,) * (ndim - len(reps)) + tuple(reps)
    split = tuple(n for pair in zip(reps, padded) for n in pair)
    summed = ns.sum(ns.reshape(g[0], split), axis=tuple(range(0, 2 * ndim, 2)))
    return [ns.reshape(summed, shape)]

def _repeat(ns, ctx, g):
    """Sum the gradient over each element's copies (a scatter-add by owner index)."""
    shape, repeats, axis = ctx.in_specs[0].shape, ctx.attrs["repeats"], ctx.attrs["axis"]
    grad = g[0] if axis is not None else ns.ravel(g[0])
    at = 0 if axis is None else axis
    n = int(np.prod(shape)) if axis is None else shape[axis]
    counts = np.broadcast_to(np.asarray(repeats, dtype=np.intp), (n,))
    owner = ns.asarray(np.repeat(np.arange(n), counts))
    result = ns.zeros(grad.shape[:at] + (n,) + grad.shape[at + 1:], dtype=grad.dtype)
    ns.add.at(result, (slice(None),) * at + (owner,), grad)
    return [ns.reshape(result, shape)]

def _pad(ns, ctx, g):
    """The interior of a constant (or empty) pad; for edge, reflect, symmetric and wrap
    modes, a scatter-add through the map of which element each output element copies."""
    widths, mode = ctx.attrs["pad_width"], ctx.attrs["mode"]
    shape = ctx.in_specs[0].shape
    if mode in ("constant", "empty"):
        inside = tuple(slice(before, before + n) for (before, _), n in zip(widths, shape))
        return [ns.copy(g[0][inside])]
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise NotImplementedError(f"pad: no gradient for mode {mode!r} (only for modes "
                                  "that copy elements: constant, edge, reflect, symmetric, "
                                  "wrap)")
    size = int(np.prod(shape))
    source = np.pad(np.arange(size).reshape(shape), widths, mode,
                    **dict(ctx.attrs["options"]))
    flat = ns.zeros((size,), dtype=g[0].dtype)
    ns.add.at(flat, ns.asarray(source.reshape(-1)), ns.ravel(g[0]))
    return [ns.reshape(flat, shape)]


def _register_all() -> None:
    defvjp("reshape", _reshape)
    defvjp("transpose", _transpose)
    defvjp("concatenate", _concatenate)
    defvjp("stack", _stack)
    defvjp("roll", _roll)
    defvjp("tile", _tile)
    defvjp("repeat", _repeat)
    defvjp("pad", _pad)
    nondifferentiable("copyto")


_register_all()
