"""Gradient rules of the array-creation ops (``ops.creation``), over the injected
namespace ``ns``: the triangles of ``tril``/``triu`` keep the gradient's same triangle;
``eye`` and ``tri`` have no gradient."""
from __future__ import annotations

from minerva.ops import creation  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.grad_util import unbroadcast
from minerva.ops.registry import defvjp, nondifferentiable


def _triangle(ns, ctx, g):
    k, lower = ctx.attrs["k"], ctx.attrs["lower"]
    kept = ns.tril(g[0], k) if lower else ns.triu(g[0], k)
    return [unbroadcast(ns, kept, ctx.in_specs[0].shape)]


def _register_all() -> None:
    defvjp("triangle", _triangle)
    nondifferentiable("eye", "tri")


_register_all()
