"""Gradient rules of the products (``ops.linalg.products``): ``matmul`` (1-D, 2-D and
batched), ``tensordot``, ``vdot``, ``inner``, ``outer`` and ``vecdot``, over the injected
namespace ``ns``. Every product is an einsum (``einsum_grad.einsum_grads``); ``vecdot``'s
operands get the gradient times the other, broadcast axes summed back.
"""
from __future__ import annotations

import string

from minerva.ops.grad_util import unbroadcast
from minerva.ops.linalg import products  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.linalg.einsum_grad import SPARE, einsum_grads, sum_broadcast
from minerva.ops.registry import defvjp


def _matmul_subscripts(a_ndim: int, b_ndim: int) -> str:
    a = "...ij" if a_ndim > 1 else "j"
    b = "...jk" if b_ndim > 1 else "j"
    out = ("...i" if a_ndim > 1 else "...") + ("k" if b_ndim > 1 else "")
    if a_ndim == 1 and b_ndim == 1:
        out = ""
    return f"{a},{b}->{out}"

def _adjoint(ns, x):
    """The conjugate transpose of the last two axes (a view for real ``x``)."""
    if ns.iscomplexobj(x):
        x = ns.conj(x)
    return ns.swapaxes(x, -1, -2)

def _matmul(ns, ctx, g):
    a, b = ctx.in_specs
    if len(a.shape) > 1 and len(b.shape) > 1:
        need_a, need_b = ctx.needs
        ga = gb = None
        if need_a:
            ga = sum_broadcast(ns, ns.matmul(g[0], _adjoint(ns, ctx.inputs[1])), a.shape)
        if need_b:
            gb = sum_broadcast(ns, ns.matmul(_adjoint(ns, ctx.inputs[0]), g[0]), b.shape)
        return [ga, gb]
    subscripts = _matmul_subscripts(len(a.shape), len(b.shape))
    return einsum_grads(ns, subscripts, ctx.inputs, g[0], [a.shape, b.shape])

def _tensordot(ns, ctx, g):
    a, b = ctx.in_specs
    axes_a, axes_b = ctx.attrs["axes"]
    letters = iter(string.ascii_letters)
    ta = [next(letters) for _ in a.shape]
    tb = [next(letters) for _ in b.shape]
    for i, j in zip(axes_a, axes_b):
        tb[j] = ta[i]
    out = [x for i, x in enumerate(ta) if i not in axes_a] + \
        [x for j, x in enumerate(tb) if j not in axes_b]
    subscripts = f"{''.join(ta)},{''.join(tb)}->{''.join(out)}"
    return einsum_grads(ns, subscripts, ctx.inputs, g[0], [a.shape, b.shape])

def _inner(ns, ctx, g):
    a, b = ctx.in_specs
    x, y = ctx.inputs
    if not a.shape or not b.shape:  # a product with a scalar
        return [sum_broadcast(ns, g[0] * y, a.shape), sum_broadcast(ns, g[0] * x, b.shape)]
    ta = "".join(SPARE[:len(a.shape) - 1])
    tb = "".join(SPARE[10:10 + len(b.shape) - 1])
    return einsum_grads(ns, f"{ta}z,{tb}z->{ta}{tb}", ctx.inputs, g[0], [a.shape, b.shape])

def _outer(ns, ctx, g):
    a, b = ctx.in_specs
    x, y = ctx.inputs
    ga = ns.matmul(g[0], ns.ravel(y))
    gb = ns.matmul(ns.ravel(x), g[0])
    return [ns.reshape(ga, a.shape), ns.reshape(gb, b.shape)]

def _vdot(ns, ctx, g):
    a, b = ctx.inputs
    a_spec, b_spec = ctx.in_specs
    return [ns.reshape(ns.conj(g[0]) * b, a_spec.shape), ns.reshape(g[0] * a, b_spec.shape)]

def _vecdot(ns, ctx, g):
    """``sum(conj(a) * b)`` over the core axes: each operand gets the gradient times the
    other, its core axis moved back and broadcast axes summed."""
    a, b = ctx.inputs
    axis_a, axis_b = ctx.attrs["axis_a"], ctx.attrs["axis_b"]
    moved_a, moved_b = ns.moveaxis(a, axis_a, -1), ns.moveaxis(b, axis_b, -1)
    ga = unbroadcast(ns, ns.conj(g[0])[..., None] * moved_b, moved_a.shape)
    gb = unbroadcast(ns, g[0][..., None] * moved_a, moved_b.shape)
    return [ns.moveaxis(ga, -1, axis_a), ns.moveaxis(gb, -1, axis_b)]


def _register_all() -> None:
    defvjp("matmul", _matmul, (0, 1))
    defvjp("tensordot", _tensordot, (0, 1))
    defvjp("inner", _inner, (0, 1))
    defvjp("outer", _outer, (0, 1))
    defvjp("vdot", _vdot, (0, 1))
    defvjp("vecdot", _vecdot, (0, 1))


_register_all()
