"""Gradient rules of the products: ``matmul`` (1-D, 2-D and batched), ``tensordot``,
``einsum``, ``vdot``, ``inner`` and ``outer``, over the injected namespace ``ns``.

Every product is an einsum; the gradient of an operand is the einsum of the output
gradient with the other operands onto that operand's labels. A label only that operand
has (summed away) is brought back with a ones vector, a repeated label (a diagonal) with an
identity matrix, and axes it was broadcast along are summed back.
"""
from __future__ import annotations

import string

from minerva.ops.registry import defvjp

_SPARE = [c for c in string.ascii_letters]


def einsum_grads(ns, subscripts: str, operands: list, g, shapes: list) -> list:
    """The gradient of each operand of ``einsum(subscripts, *operands)`` (explicit form,
    ``...`` allowed) given the output gradient ``g``."""
    inputs, output = subscripts.split("->")
    terms = inputs.split(",")
    return [_operand_grad(ns, terms, output, operands, g, k, shapes[k])
            for k in range(len(terms))]


def _operand_grad(ns, terms, output, operands, g, k, shape):
    term = terms[k]
    used = set("".join(terms) + output)
    spare = iter(c for c in _SPARE if c not in used)
    parts, extra = [output] + [t for i, t in enumerate(terms) if i != k], []
    extra += [operands[i] for i in range(len(terms)) if i != k]
    named, seen, dots = "", set(), []
    for axis, (label, size) in enumerate(_labels_and_sizes(term, shape)):
        if label == ".":
            dots.append(axis)
            continue
        if label in seen:  # a diagonal: place the values with an identity matrix
            fresh = next(spare)
            parts.append(label + fresh)
            extra.append(ns.eye(size, dtype=g.dtype))
            label = fresh
        elif label not in "".join(parts):
            parts.append(label)
            extra.append(ns.ones(size, dtype=g.dtype))
        seen.add(label)
        named += label
    if not dots and not any("..." in p for p in parts):
        return _sum_broadcast(ns, ns.einsum(",".join(parts) + "->" + named, g, *extra),
                              shape)
    grad = ns.einsum(",".join(parts) + "->..." + named, g, *extra)
    return _place_ellipsis(ns, grad, shape, dots)


def _place_ellipsis(ns, grad, shape: tuple, dots: list):
    """A gradient computed with the (broadcast) ellipsis axes first, summed to the
    operand's own ellipsis axes ``dots`` and moved to where they are in the operand."""
    named = [n for axis, n in enumerate(shape) if axis not in dots]
    own = tuple(shape[a] for a in dots)
    grad = _sum_broadcast(ns, grad, own + tuple(named))
    if dots and dots[0] != 0:
        grad = ns.moveaxis(grad, tuple(range(len(dots))), tuple(dots))
    return grad


def _labels_and_sizes(term: str, shape: tuple):
    """Each label of ``term`` with its size; an ellipsis gives one ``.`` entry per axis
    it covers (they stay one ``...`` in the target)."""
    n_named = len(term.replace("...", ""))
    n_dots = len(shape) - n_named
    axis = 0
    for piece in term.replace("...", "\0"):
        if piece == "\0":
            for _ in range(n_dots):
                yield ".", shape[axis]
                axis += 1
        else:
            yield piece, shape[axis]
            axis += 1


def _sum_broadcast(ns, grad, shape: tuple):
    if grad.shape == tuple(shape):
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                     if n == 1 and grad.shape[lead + i] != 1)
    if axes:
        grad = ns.sum(grad, axis=axes, keepdims=True)
    return ns.reshape(grad, shape)


def _einsum(ns, ctx, g):
    shapes = [s.shape for s in ctx.in_specs]
    return einsum_grads(ns, ctx.attrs["subscripts"], ctx.inputs, g[0], shapes)


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
            ga = _sum_broadcast(ns, ns.matmul(g[0], _adjoint(ns, ctx.inputs[1])), a.shape)
        if need_b:
            gb = _sum_broadcast(ns, ns.matmul(_adjoint(ns, ctx.inputs[0]), g[0]), b.shape)
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
        return [_sum_broadcast(ns, g[0] * y, a.shape), _sum_broadcast(ns, g[0] * x, b.shape)]
    ta = "".join(_SPARE[:len(a.shape) - 1])
    tb = "".join(_SPARE[10:10 + len(b.shape) - 1])
    return einsum_grads(ns, f"{ta}z,{tb}z->{ta}{tb}", ctx.inputs, g[0], [a.shape, b.shape])


def _outer(ns, ctx, g):
    a, b = ctx.in_specs
    x, y = ctx.inputs
    ga = ns.matmul(g[0], ns.ravel(y))
    gb = ns.matmul(ns.ravel(x), g[0])
    return [ns.reshape(ga, a.shape), ns.reshape(gb, b.shape)]


def _register_all() -> None:
    defvjp("matmul", _matmul, (0, 1))
    defvjp("tensordot", _tensordot, (0, 1))
    defvjp("einsum", _einsum, tuple(range(32)))
    defvjp("inner", _inner, (0, 1))
    defvjp("outer", _outer, (0, 1))


_register_all()
