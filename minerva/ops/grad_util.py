"""Helpers the gradient rules share, written over the injected namespace ``ns``."""
from __future__ import annotations


def unbroadcast(ns, g, shape: tuple):
    """``g`` summed over the axes along which an input of ``shape`` was broadcast."""
    if g.shape == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    if lead < 0:  # a value with extra leading size-1 axes, assigned into fewer
        return ns.reshape(g, shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                     if n == 1 and g.shape[lead + i] != 1)
    if axes:
        g = ns.sum(g, axis=axes, keepdims=True)
    return ns.reshape(g, shape)


def restore_axes(ns, g, in_shape: tuple, axis, keepdims: bool):
    """A reduction's output gradient ``g`` reshaped to broadcast against its input."""
    if keepdims or axis is None and g.ndim == 0:
        return ns.reshape(g, (1,) * len(in_shape)) if g.ndim == 0 else g
    axes = range(len(in_shape)) if axis is None else axis
    shape = tuple(1 if i in axes else n for i, n in enumerate(in_shape))
    return ns.reshape(g, shape)


def spread(ns, ctx, g):
    """A reduction's output gradient (or output) broadcast back over the reduced axes of
    its input (``ctx.attrs``: ``axis``, ``keepdims``)."""
    spec = ctx.in_specs[0]
    back = restore_axes(ns, g, spec.shape, ctx.attrs["axis"], ctx.attrs["keepdims"])
    return ns.broadcast_to(back, spec.shape)


def reduced_count(ctx) -> int:
    """How many input elements a reduction folds into each output element."""
    shape, axis = ctx.in_specs[0].shape, ctx.attrs["axis"]
    count = 1
    for a in (range(len(shape)) if axis is None else axis):
        count *= shape[a]
    return count


def matrix_adjoint(ns, a):
    """The conjugate transpose of each matrix of a stack ``a`` (its last two axes)."""
    return ns.conj(ns.swapaxes(a, -1, -2))
