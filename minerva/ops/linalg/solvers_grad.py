"""Gradient rules of ``numpy.linalg``'s solvers (``ops.linalg.solvers``): ``inv``, ``det``,
``slogdet``, ``solve`` and ``cholesky``, over the injected namespace ``ns``; matrices are
stacks ``(..., M, M)`` and batch dimensions broadcast back to each operand's shape.

``cholesky``'s gradient is symmetric (half to each of a pair of mirrored elements), as in
PyTorch and JAX: the factorization reads one triangle, but the gradient is the one of a
symmetric input. Eigen- and singular-value decompositions, ``qr`` and ``pinv`` have no rule.
"""
from __future__ import annotations

from minerva.ops.grad_util import matrix_adjoint, unbroadcast
from minerva.ops.linalg import solvers  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.registry import defvjp


def _inv(ns, ctx, g):
    y = matrix_adjoint(ns, ctx.outputs[0])
    return [-(y @ g[0] @ y)]

def _det(ns, ctx, g):
    a, d = ctx.inputs[0], ctx.outputs[0]
    scale = ns.conj(g[0] * d)[..., None, None]
    return [scale * matrix_adjoint(ns, ns.linalg.inv(a))]

def _slogdet(ns, ctx, g):
    if g[1] is None:  # the sign is piecewise constant
        return [None]
    return [ns.conj(g[1])[..., None, None] * matrix_adjoint(ns, ns.linalg.inv(ctx.inputs[0]))]

def _solve(ns, ctx, g):
    """``x = a⁻¹ b``: ``b`` gets ``a⁻ᴴ g``, ``a`` minus that times ``xᴴ``."""
    a, x = ctx.inputs[0], ctx.outputs[0]
    a_spec, b_spec = ctx.in_specs
    if len(b_spec.shape) == 1:  # one vector: a column
        gb = ns.linalg.solve(matrix_adjoint(ns, a), g[0][..., None])
        ga = -gb @ matrix_adjoint(ns, x[..., None])
        gb = gb[..., 0]
    else:
        gb = ns.linalg.solve(matrix_adjoint(ns, a), g[0])
        ga = -gb @ matrix_adjoint(ns, x)
    return [unbroadcast(ns, ga, a_spec.shape), unbroadcast(ns, gb, b_spec.shape)]

def _cholesky(ns, ctx, g):
    """``A = L Lᴴ``: with ``P = Φ(Lᴴ Ḡ)`` (lower triangle, diagonal halved) and
    ``S = L⁻ᴴ P L⁻¹``, the gradient is ``(S + Sᴴ) / 2``."""
    upper = ctx.attrs["upper"]
    low = matrix_adjoint(ns, ctx.outputs[0]) if upper else ctx.outputs[0]
    gl = matrix_adjoint(ns, g[0]) if upper else g[0]
    p = ns.tril(matrix_adjoint(ns, low) @ gl)
    p = p - 0.5 * ns.eye(p.shape[-1], dtype=p.dtype) * p
    half = ns.linalg.solve(matrix_adjoint(ns, low), p)               # L⁻ᴴ P
    s = matrix_adjoint(ns, ns.linalg.solve(matrix_adjoint(ns, low), matrix_adjoint(ns, half)))  # (L⁻ᴴ (L⁻ᴴ P)ᴴ)ᴴ
    return [0.5 * (s + matrix_adjoint(ns, s))]


def _register_all() -> None:
    defvjp("inv", _inv, (), (0,))
    defvjp("det", _det, (0,), (0,))
    defvjp("slogdet", _slogdet, (0,))
    defvjp("solve", _solve, (0,), (0,))
    defvjp("cholesky", _cholesky, (), (0,))


_register_all()
