"""Gradient rules of ``einsum`` (``ops.linalg.einsum``), and the einsum gradient every
product's rule is written with, over the injected namespace ``ns``.

The gradient of an operand is the einsum of the output gradient with the other operands
onto that operand's labels. A label only that operand has (summed away) is brought back
with a ones vector, a repeated label (a diagonal) with an identity matrix, and axes it was
broadcast along are summed back.
"""
from __future__ import annotations

import string

from minerva.ops.linalg import einsum  # noqa: F401  (registers the op these rules are for)
from minerva.ops.registry import defvjp

SPARE = [c for c in string.ascii_letters]
"""Labels for einsum subscripts."""


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
    spare = iter(c for c in SPARE if c not in used)
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
        return sum_broadcast(ns, ns.einsum(",".join(parts) + "->" + named, g, *extra),
                              shape)
    grad = ns.einsum(",".join(parts) + "->..." + named, g, *extra)
    return _place_ellipsis(ns, grad, shape, dots)

def _place_ellipsis(ns, grad, shape: tuple, dots: list):
    """A gradient computed with the (broadcast) ellipsis axes first, summed to the
    operand's own ellipsis axes ``dots`` and moved to where they are in the operand."""
    named = [n for axis, n in enumerate(shape) if axis not in dots]
    own = tuple(shape[a] for a in dots)
    grad = sum_broadcast(ns, grad, own + tuple(named))
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

def sum_broadcast(ns, grad, shape: tuple):
    """``grad`` summed over the axes along which an operand of ``shape`` was broadcast."""
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


defvjp("einsum", _einsum, tuple(range(32)))
