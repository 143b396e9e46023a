"""Gradient rules of the norms and matrix functions (``ops.linalg.norms``): ``norm``,
``vector_norm`` and ``matrix_power``, over the injected namespace ``ns``.

Norms: vector p-norms for any finite non-zero ``p`` and ±inf (ties split evenly), Frobenius
matrix norms; the spectral, nuclear and 1/inf matrix norms, ``ord=0``, ``cond`` and
``matrix_rank`` have no rule (``matrix_rank`` has no gradient at all).
"""
from __future__ import annotations

import math

from minerva.ops.grad_util import matrix_adjoint, restore_axes
from minerva.ops.linalg import norms  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.registry import defvjp, nondifferentiable


def _matrix_power(ns, ctx, g):
    """``d(Aⁿ) = Σₖ Aᵏ dA Aⁿ⁻¹⁻ᵏ``; a negative power is a power of the
    inverse."""
    a, n = ctx.inputs[0], ctx.attrs["n"]
    if n == 0:
        return [ns.zeros(a.shape, dtype=g[0].dtype)]
    base = ns.linalg.inv(a) if n < 0 else a
    grad = _power_grad(ns, matrix_adjoint(ns, base), g[0], abs(n))
    if n < 0:
        inv_t = matrix_adjoint(ns, base)
        grad = -(inv_t @ grad @ inv_t)
    return [grad]

def _power_grad(ns, at, g, n: int):
    """``Σₖ (Aᵀ)ᵏ g (Aᵀ)ⁿ⁻¹⁻ᵏ`` given ``at = Aᵀ``."""
    powers = [None, at]
    for _ in range(2, n):
        powers.append(powers[-1] @ at)
    total = None
    for k in range(n):
        term = g if k == 0 else powers[k] @ g
        term = term if k == n - 1 else term @ powers[n - 1 - k]
        total = term if total is None else total + term
    return total

def _norm(ns, ctx, g):
    shape, ord, axis = ctx.in_specs[0].shape, ctx.attrs["ord"], ctx.attrs["axis"]
    ndim = len(shape)
    axes = None if axis is None else tuple(a % ndim for a in axis)
    matrix = len(axes) == 2 if axes is not None else (ndim == 2 and ord is not None)
    if matrix and ord not in (None, "fro"):
        raise NotImplementedError(f"norm: no gradient for the matrix norm ord={ord!r} "
                                  "(only 'fro')")
    return [_vector_norm_grad(ns, ctx, g[0], 2 if matrix or ord is None else ord, axes)]

def _vector_norm(ns, ctx, g):
    shape, axis = ctx.in_specs[0].shape, ctx.attrs["axis"]
    axes = None if axis is None else tuple(
        a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,)))
    return [_vector_norm_grad(ns, ctx, g[0], ctx.attrs["ord"], axes)]

def _vector_norm_grad(ns, ctx, g, p, axes):
    """The gradient of the p-norm over ``axes`` (all when None)."""
    x, y, keep = ctx.inputs[0], ctx.outputs[0], ctx.attrs["keepdims"]
    shape = ctx.in_specs[0].shape

    def spread(v):
        return ns.broadcast_to(restore_axes(ns, v, shape, axes, keep), shape)

    if p == 0:
        raise NotImplementedError("norm: ord=0 counts non-zero elements: no gradient")
    if math.isinf(p):
        hit = ns.abs(x) == spread(y)
        ties = ns.sum(hit, axis=axes, keepdims=True)
        return ns.where(hit, spread(g) * ns.sign(x.detach()), 0) / ties
    ny = spread(y)
    safe = ns.where(ny == 0, 1, ny)
    if p == 2:
        return ns.where(ny == 0, 0, spread(g) * x / safe)
    scaled = ns.abs(x) / safe
    return ns.where(ny == 0, 0, spread(g) * ns.sign(x.detach()) * scaled ** (p - 1))


def _register_all() -> None:
    defvjp("matrix_power", _matrix_power, (0,))
    defvjp("norm", _norm, (0,), (0,))
    defvjp("vector_norm", _vector_norm, (0,), (0,))
    nondifferentiable("matrix_rank")


_register_all()
