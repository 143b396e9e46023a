"""Gradient rules of the statistics ops (``ops.statistics``): std and var, the simple
nan-reductions (nansum, nanmean, nanprod, nanmax, nanmin), ptp and average without
weights. Over the injected namespace ``ns``.

NaNs get no gradient from the nan-functions (they are skipped); nanmax, nanmin and ptp
split the gradient evenly among tied extremes, as max and min do. ``cumprod``'s rule
divides by the input: exact where no element is zero. Counts, arg-extremes and
histograms have no gradient; medians, quantiles, the nan-variances and weighted averages
have no rule yet (asking a gradient through them raises too).
"""
from __future__ import annotations

from minerva.ops import statistics  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.grad_util import reduced_count, restore_axes, spread
from minerva.ops.registry import defvjp, nondifferentiable


def _cast(ns, ctx, grad):
    return ns.astype(grad, ctx.in_specs[0].dtype)


def _centered(ns, ctx):
    x, axis = ctx.inputs[0], ctx.attrs["axis"]
    return x - ns.mean(x, axis=axis, keepdims=True)


def _var(ns, ctx, g):
    scale = 2.0 / (reduced_count(ctx) - ctx.attrs["ddof"])
    return [_cast(ns, ctx, spread(ns, ctx, g[0]) * _centered(ns, ctx) * scale)]


def _std(ns, ctx, g):
    scale = 1.0 / (reduced_count(ctx) - ctx.attrs["ddof"])
    per_std = spread(ns, ctx, g[0] / ctx.outputs[0])
    return [_cast(ns, ctx, per_std * _centered(ns, ctx) * scale)]


def _nansum(ns, ctx, g):
    x = ctx.inputs[0]
    return [_cast(ns, ctx, ns.where(ns.isnan(x), 0, spread(ns, ctx, g[0])))]


def _nanmean(ns, ctx, g):
    x, axis = ctx.inputs[0], ctx.attrs["axis"]
    present = ns.sum(~ns.isnan(x), axis=axis, keepdims=ctx.attrs["keepdims"])
    return [_cast(ns, ctx, ns.where(ns.isnan(x), 0, spread(ns, ctx, g[0] / present)))]


def _nanprod(ns, ctx, g):
    x = ctx.inputs[0]
    per = spread(ns, ctx, g[0] * ctx.outputs[0]) / x
    return [_cast(ns, ctx, ns.where(ns.isnan(x), 0, per))]


def _ties(ns, ctx, extreme):
    """Where the input equals the (spread) extreme, divided by the number of ties."""
    hit = ctx.inputs[0] == spread(ns, ctx, extreme)
    ties = ns.sum(hit, axis=ctx.attrs["axis"], keepdims=ctx.attrs["keepdims"])
    return ns.where(hit, 1.0 / spread(ns, ctx, ties), 0.0)


def _nan_extremum(ns, ctx, g):
    return [_cast(ns, ctx, _ties(ns, ctx, ctx.outputs[0]) * spread(ns, ctx, g[0]))]


def _ptp(ns, ctx, g):
    x, axis, keep = ctx.inputs[0], ctx.attrs["axis"], ctx.attrs["keepdims"]
    high = _ties(ns, ctx, ns.max(x, axis=axis, keepdims=keep))
    low = _ties(ns, ctx, ns.min(x, axis=axis, keepdims=keep))
    return [_cast(ns, ctx, (high - low) * spread(ns, ctx, g[0]))]


def _average(ns, ctx, g):
    if len(ctx.in_specs) > 1:
        raise NotImplementedError("average: no gradient with weights (use sum(w * x) / "
                                  "sum(w))")
    axis = ctx.attrs["axis"]
    axis = None if axis is None else tuple(sorted(axis))
    spec = ctx.in_specs[0]
    back = restore_axes(ns, g[0] / reduced_count(ctx), spec.shape, axis, ctx.attrs["keepdims"])
    return [_cast(ns, ctx, ns.broadcast_to(back, spec.shape))]


def _register_all() -> None:
    defvjp("var", _var, (0,))
    defvjp("std", _std, (0,), (0,))
    defvjp("nansum", _nansum, (0,))
    defvjp("nanmean", _nanmean, (0,))
    defvjp("nanprod", _nanprod, (0,), (0,))
    defvjp("nanmax", _nan_extremum, (0,), (0,))
    defvjp("nanmin", _nan_extremum, (0,), (0,))
    defvjp("ptp", _ptp, (0,))
    defvjp("average", _average)
    nondifferentiable("count_nonzero", "nanargmax", "nanargmin", "histogram")


_register_all()
