"""Reductions over ``axis=None|int|tuple`` with ``keepdims``, by NumPy's rules."""
from __future__ import annotations

import operator

import numpy as np

from minerva.ops import dtypes
from minerva.ops.registry import ArraySpec, register, shape_error

REDUCTIONS = ("sum", "prod", "max", "min", "mean", "any", "all")
ARG_REDUCTIONS = ("argmax", "argmin")
_NO_IDENTITY = ("max", "min", "argmax", "argmin")


def normalize_axis(name: str, axis, ndim: int) -> tuple | None:
    """``axis`` as a sorted tuple of non-negative ints (None stays None)."""
    if axis is None:
        return None
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    normalized = []
    for item in axes:
        try:
            index = operator.index(item)
        except TypeError:
            raise shape_error(name, f"axis must be an int or tuple of ints, got {axis!r}") \
                from None
        if not -ndim <= index < ndim:
            raise shape_error(name, f"axis {index} is out of bounds for an array of "
                              f"dimension {ndim}")
        normalized.append(index % ndim if ndim else 0)
    if len(set(normalized)) != len(normalized):
        raise shape_error(name, f"repeated axis in {axis!r}")
    return tuple(sorted(normalized))


def reduced_shape(shape: tuple, axes: tuple | None, keepdims: bool) -> tuple:
    """Shape after reducing ``axes`` (all when None)."""
    axes = range(len(shape)) if axes is None else axes
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _check_nonempty(name: str, spec: ArraySpec, axes) -> None:
    axes = range(len(spec.shape)) if axes is None else axes
    if any(spec.shape[i] == 0 for i in axes):
        raise shape_error(name, "zero-size reduction has no identity", spec)


def _reduce_infer(name):
    function = getattr(np, name)

    def infer(x, *, axis, keepdims, dtype=None):
        dtypes.check_supported(name, x)
        if name in _NO_IDENTITY:
            _check_nonempty(name, x, axis)
        if dtype is None:
            dtype = dtypes.result_dtype(name, function, x)
        return (ArraySpec(reduced_shape(x.shape, axis, keepdims), dtype),)
    return infer


def _reduce_impl(name):
    def impl(xp, x, *, out, axis, keepdims, dtype=None):
        if dtype is None:
            getattr(xp, name)(x, axis=axis, keepdims=keepdims, out=out)
        else:
            getattr(xp, name)(x, axis=axis, keepdims=keepdims, out=out, dtype=dtype)
    return impl


def _arg_infer(name):
    def infer(x, *, axis, keepdims):
        dtypes.check_supported(name, x)
        axes = None if axis is None else (axis,)
        _check_nonempty(name, x, axes)
        return (ArraySpec(reduced_shape(x.shape, axes, keepdims), np.dtype(np.intp)),)
    return infer


def _register_all() -> None:
    for name in REDUCTIONS:
        register(name, _reduce_infer(name), _reduce_impl(name))
    for name in ARG_REDUCTIONS:
        register(name, _arg_infer(name), _reduce_impl(name))


_register_all()
