"""Ops that make structured arrays on the device without inputs: ``eye``, ``tri`` and
``indices`` (NumPy's functions of those names, with the face's normalized arguments)."""
from __future__ import annotations

from minerva.ops.registry import ArraySpec, register


def _eye_infer(*, n, m, k, dtype):
    return (ArraySpec((n, m), dtype),)


def _eye_impl(xp, *, out, n, m, k, dtype):
    out[...] = xp.eye(n, m, k, dtype=dtype)


def _tri_impl(xp, *, out, n, m, k, dtype):
    out[...] = xp.tri(n, m, k, dtype=dtype)


def _indices_infer(*, dimensions, dtype):
    return (ArraySpec((len(dimensions),) + dimensions, dtype),)


def _indices_impl(xp, *, out, dimensions, dtype):
    out[...] = xp.indices(dimensions, dtype=dtype)


register("eye", _eye_infer, _eye_impl)
register("tri", _eye_infer, _tri_impl)
register("indices", _indices_infer, _indices_impl)
