"""Gradient rules of the linear-algebra ops beyond the products: ``inv``, ``det``,
``slogdet``, ``solve``, ``cholesky``, ``matrix_power``, ``norm`` and ``vector_norm``; and
``vdot`` and ``vecdot``. Over the injected namespace ``ns``; matrices are stacks
``(..., M, M)`` and batch dimensions broadcast back to each operand's shape.

``cholesky``'s gradient is symmetric (half to each of a pair of mirrored elements), as in
PyTorch and JAX: the factorization reads one triangle, but the gradient is the one of a
symmetric input. Norms: vector p-norms for any finite non-zero ``p`` and ±inf (ties split
evenly), Frobenius matrix norms; the spectral, nuclear and 1/inf matrix norms, ``ord=0``,
``cond``, eigen- and singular-value decompositions, ``qr`` and ``pinv`` have no rule.
"""
from __future__ import annotations

import math

from minerva.ops import linalg  # noqa: F401  (registers vdot and vecdot first)
from minerva.ops.grad_util import restore_axes, unbroadcast
from minerva.ops.registry import defvjp, nondifferentiable


def _mT(ns, a):
    """The (conjugate) transpose of each matrix of a stack."""
    return ns.conj(ns.swapaxes(a, -1, -2))


def _inv(ns, ctx, g):
    y = _mT(ns, ctx.outputs[0])
    return [-(y @ g[0] @ y)]


def _det(ns, ctx, g):
    a, d = ctx.inputs[0], ctx.outputs[0]
    scale = ns.conj(g[0] * d)[..., None, None]
    return [scale * _mT(ns, ns.linalg.inv(a))]


def _slogdet(ns, ctx, g):
    if g[1] is None:  # the sign is piecewise constant
        return [None]
    return [ns.conj(g[1])[..., None, None] * _mT(ns, ns.linalg.inv(ctx.inputs[0]))]


def _solve(ns, ctx, g):
    """``x = a⁻¹ b``: ``b`` gets ``a⁻ᴴ g``, ``a`` minus that times ``xᴴ``."""
    a, x = ctx.inputs[0], ctx.outputs[0]
    a_spec, b_spec = ctx.in_specs
    if len(b_spec.shape) == 1:  # one vector: a column
        gb = ns.linalg.solve(_mT(ns, a), g[0][..., None])
        ga = -gb @ _mT(ns, x[..., None])
        gb = gb[..., 0]
    else:
        gb = ns.linalg.solve(_mT(ns, a), g[0])
        ga = -gb @ _mT(ns, x)
    return [unbroadcast(ns, ga, a_spec.shape), unbroadcast(ns, gb, b_spec.shape)]


def _cholesky(ns, ctx, g):
    """``A = L Lᴴ``: with ``P = Φ(Lᴴ Ḡ)`` (lower triangle, diagonal halved) and
    ``S = L⁻ᴴ P L⁻¹``, the gradient is ``(S + Sᴴ) / 2``."""
    upper = ctx.attrs["upper"]
    low = _mT(ns, ctx.outputs[0]) if upper else ctx.outputs[0]
    gl = _mT(ns, g[0]) if upper else g[0]
    p = ns.tril(_mT(ns, low) @ gl)
    p = p - 0.5 * ns.eye(p.shape[-1], dtype=p.dtype) * p
    half = ns.linalg.solve(_mT(ns, low), p)               # L⁻ᴴ P
    s = _mT(ns, ns.linalg.solve(_mT(ns, low), _mT(ns, half)))  # (L⁻ᴴ (L⁻ᴴ P)ᴴ)ᴴ
    return [0.5 * (s + _mT(ns, s))]


def _matrix_power(ns, ctx, g):
    """``d(Aⁿ) = Σₖ Aᵏ dA Aⁿ⁻¹⁻ᵏ``; a negative power is a power of the
    inverse."""
    a, n = ctx.inputs[0], ctx.attrs["n"]
    if n == 0:
        return [ns.zeros(a.shape, dtype=g[0].dtype)]
    base = ns.linalg.inv(a) if n < 0 else a
    grad = _power_grad(ns, _mT(ns, base), g[0], abs(n))
    if n < 0:
        inv_t = _mT(ns, base)
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


# ---- norms -------------------------------------------------------------------------------

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


# ---- vdot, vecdot ------------------------------------------------------------------------

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
    defvjp("inv", _inv, (), (0,))
    defvjp("det", _det, (0,), (0,))
    defvjp("slogdet", _slogdet, (0,))
    defvjp("solve", _solve, (0,), (0,))
    defvjp("cholesky", _cholesky, (), (0,))
    defvjp("matrix_power", _matrix_power, (0,))
    defvjp("norm", _norm, (0,), (0,))
    defvjp("vector_norm", _vector_norm, (0,), (0,))
    defvjp("vdot", _vdot, (0, 1))
    defvjp("vecdot", _vecdot, (0, 1))
    nondifferentiable("matrix_rank")


_register_all()
