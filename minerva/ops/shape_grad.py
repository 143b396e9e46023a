"""Gradient rules of reductions, shape ops and advanced indexing, over the injected
namespace ``ns``.

``max``/``min`` send the gradient to every element equal to the result, split evenly among
ties (so the contributions sum to the output gradient). An advanced index's gradient is a
scatter-add: an element picked twice receives both contributions.
"""
from __future__ import annotations

from minerva.ops.elementwise import ARRAY
from minerva.ops.grad_util import reduced_count, spread, unbroadcast
from minerva.ops.registry import defvjp, nondifferentiable


def _sum(ns, ctx, g):
    return [ns.astype(spread(ns, ctx, g[0]), ctx.in_specs[0].dtype)]


def _mean(ns, ctx, g):
    return [spread(ns, ctx, g[0] / reduced_count(ctx))]


def _prod(ns, ctx, g):
    x = ctx.inputs[0]
    return [spread(ns, ctx, g[0] * ctx.outputs[0]) / x]


def _extremum(ns, ctx, g):
    x = ctx.inputs[0]
    hit = x == spread(ns, ctx, ctx.outputs[0])
    ties = spread(ns, ctx, ns.sum(hit, axis=ctx.attrs["axis"], keepdims=ctx.attrs["keepdims"]))
    return [ns.where(hit, spread(ns, ctx, g[0]) / ties, 0)]


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


def _take_index(ns, ctx, g):
    """Scatter-add the gradient back to where each element was taken from."""
    spec = ctx.in_specs[0]
    indices = ctx.inputs[1:]
    slots = iter(indices)
    index = tuple(next(slots) if item is ARRAY else item for item in ctx.attrs["layout"])
    result = ns.zeros(spec.shape, dtype=g[0].dtype)
    ns.add.at(result, index, g[0])
    return [result] + [None] * len(indices)


def _scatter_add(ns, ctx, g):
    """``add.at(out, index, values)`` into a fresh ``out`` (the recorder refuses one that
    has a gradient): each value gets the gradient of the element it was added to."""
    indices = ctx.inputs[1:]
    slots = iter(indices)
    index = tuple(next(slots) if item is ARRAY else item for item in ctx.attrs["layout"])
    picked = g[0][index]
    return [unbroadcast(ns, picked, ctx.in_specs[0].shape)] + [None] * len(indices)


def _register_all() -> None:
    defvjp("sum", _sum)
    defvjp("mean", _mean)
    defvjp("prod", _prod, (0,), (0,))
    defvjp("max", _extremum, (0,), (0,))
    defvjp("min", _extremum, (0,), (0,))
    defvjp("reshape", _reshape)
    defvjp("transpose", _transpose)
    defvjp("concatenate", _concatenate)
    defvjp("stack", _stack)
    defvjp("take_index", _take_index, tuple(range(1, 33)))
    defvjp("scatter_add", _scatter_add, tuple(range(1, 33)))
    nondifferentiable("argmax", "argmin", "any", "all")


_register_all()
