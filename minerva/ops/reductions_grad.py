"""Gradient rules of the reductions (``ops.reductions``), over the injected namespace
``ns``.

``max``/``min`` send the gradient to every element equal to the result, split evenly among
ties (so the contributions sum to the output gradient). ``cumprod``'s rule divides by the
input: exact where no element is zero. ``argmax``, ``argmin``, ``any`` and ``all`` have no
gradient. A ufunc's ``reduce`` (``ufunc_reduce``: with ``initial`` or ``where``) has the
rules of ``sum``, ``prod``, ``max`` and ``min`` for ``add``, ``multiply``, ``maximum`` and
``minimum``, over the elements ``where`` selects; its other ufuncs, ``accumulate`` of
ufuncs other than add and multiply, and ``reduceat`` have none.
"""
from __future__ import annotations

from minerva.ops import reductions  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.grad_util import reduced_count, spread
from minerva.ops.registry import defvjp, nondifferentiable


def _cast(ns, ctx, grad):
    return ns.astype(grad, ctx.in_specs[0].dtype)


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


# ---- cumulative sums and products, differences -------------------------------------------

def _cumulative(ns, ctx, g):
    """cumsum: the reversed cumulative sum of the gradient; cumprod: that of
    ``g * result``, divided by the input."""
    spec, axis = ctx.in_specs[0], ctx.attrs["axis"]
    at = 0 if axis is None else axis
    grad = g[0]
    if ctx.attrs["include_initial"]:
        grad = grad[(slice(None),) * at + (slice(1, None),)]
    if ctx.attrs["name"] == "cumprod":
        result = ctx.outputs[0]
        if ctx.attrs["include_initial"]:
            result = result[(slice(None),) * at + (slice(1, None),)]
        grad = grad * result
    grad = ns.flip(ns.cumsum(ns.flip(grad, at), axis=at), at)
    if ctx.attrs["name"] == "cumprod":
        x = ctx.inputs[0]
        grad = grad / (ns.ravel(x) if axis is None else x)
    return [_cast(ns, ctx, ns.reshape(grad, spec.shape))]


def _diff(ns, ctx, g):
    """Each difference ``x[i+1] - x[i]`` gives ``+g`` to ``x[i+1]`` and ``-g`` to
    ``x[i]``: minus the difference of the gradient padded by a zero at both ends, n
    times."""
    spec, n, axis = ctx.in_specs[0], ctx.attrs["n"], ctx.attrs["axis"]
    widths = tuple((1, 1) if d == axis else (0, 0) for d in range(len(spec.shape)))
    grad = g[0]
    for _ in range(n):
        grad = -ns.diff(ns.pad(grad, widths), axis=axis)
    return [_cast(ns, ctx, grad)]


def _ufunc_reduce(ns, ctx, g):
    """``add``/``multiply``/``maximum``/``minimum.reduce`` with ``initial`` or ``where``."""
    name, x = ctx.attrs["name"], ctx.inputs[0]
    mask = ctx.inputs[1] if len(ctx.in_specs) > 1 else None
    if name == "add":
        grad = spread(ns, ctx, g[0])
    elif name == "multiply":
        grad = spread(ns, ctx, g[0] * ctx.outputs[0]) / x
    elif name in ("maximum", "minimum"):
        hit = x == spread(ns, ctx, ctx.outputs[0])
        hit = hit if mask is None else ns.logical_and(hit, mask)
        ties = ns.sum(hit, axis=ctx.attrs["axis"], keepdims=ctx.attrs["keepdims"])
        grad = ns.where(hit, spread(ns, ctx, g[0] / ns.maximum(ties, 1)), 0)
    else:
        raise NotImplementedError(f"{name}.reduce has no gradient (add, multiply, maximum "
                                  "and minimum reductions have one)")
    grad = grad if mask is None else ns.where(mask, grad, 0)
    return [_cast(ns, ctx, grad)] + [None] * (len(ctx.in_specs) - 1)


def _register_all() -> None:
    defvjp("sum", _sum)
    defvjp("mean", _mean)
    defvjp("prod", _prod, (0,), (0,))
    defvjp("max", _extremum, (0,), (0,))
    defvjp("min", _extremum, (0,), (0,))
    defvjp("cumulative", _cumulative, (0,), (0,))
    defvjp("diff", _diff)
    defvjp("ufunc_reduce", _ufunc_reduce, (0, 1), (0,))
    nondifferentiable("argmax", "argmin", "any", "all", "ufunc_accumulate", "ufunc_reduceat")


_register_all()
