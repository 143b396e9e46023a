"""Reductions over ``axis=None|int|tuple`` with ``keepdims``, by NumPy's rules (``sum``,
``prod``, ``max``, ``min``, ``mean``, ``any``, ``all``, ``argmax``, ``argmin``); cumulative
sums and products, and ``diff``."""
from __future__ import annotations

import operator

import numpy as np

from minerva.ops import dtypes
from minerva.ops.dtypes import numpy_dtype
from minerva.ops.kernels import call
from minerva.ops.registry import ArraySpec, register, shape_error

REDUCTIONS = ("sum", "prod", "max", "min", "mean", "any", "all")
ARG_REDUCTIONS = ("argmax", "argmin")
_NO_IDENTITY = ("max", "min", "argmax", "argmin")
_NO_IDENTITY_MESSAGE = "zero-size reduction has no identity"


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


def check_nonempty(name: str, spec: ArraySpec, axes, message: str, error=None) -> None:
    """NumPy's error (ShapeError unless ``error`` is given) when a reduction over ``axes``
    (all when None) of ``spec`` has no element to start from."""
    axes = range(len(spec.shape)) if axes is None else axes
    if any(spec.shape[i] == 0 for i in axes):
        raise (error or shape_error)(name, message, spec)


def _reduce_infer(name):
    function = getattr(np, name)

    def infer(x, *, axis, keepdims, dtype=None):
        dtypes.check_supported(name, x)
        if name in _NO_IDENTITY:
            check_nonempty(name, x, axis, _NO_IDENTITY_MESSAGE)
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
        check_nonempty(name, x, axes, _NO_IDENTITY_MESSAGE)
        return (ArraySpec(reduced_shape(x.shape, axes, keepdims), np.dtype(np.intp)),)
    return infer


# ---- cumulative sums, products and differences --------------------------------------------

def _cumulative_infer(x, *, name, axis, dtype, include_initial):
    dtypes.check_supported(name, x)
    result = numpy_dtype(name, getattr(np, name), x, dtype=dtype)
    shape = (int(np.prod(x.shape)),) if axis is None else x.shape
    axis = 0 if axis is None else axis
    shape = shape[:axis] + (shape[axis] + include_initial,) + shape[axis + 1:]
    return (ArraySpec(shape, result),)


def _cumulative_impl(xp, x, *, out, name, axis, dtype, include_initial):
    if axis is None:
        x, axis = x.reshape(-1), 0
    if include_initial:
        before = (slice(None),) * axis
        out[before + (slice(0, 1),)] = 0 if name == "cumsum" else 1
        out = out[before + (slice(1, None),)]
    getattr(xp, name)(x, axis=axis, dtype=out.dtype, out=out)


def _diff_infer(x, *, n, axis):
    dtype = numpy_dtype("diff", np.diff, x)
    shape = x.shape[:axis] + (max(x.shape[axis] - n, 0),) + x.shape[axis + 1:]
    return (ArraySpec(shape, dtype),)


def _diff_impl(xp, x, *, out, n, axis):
    out[...] = call(xp, "diff", x, n=n, axis=axis)


def _register_all() -> None:
    for name in REDUCTIONS:
        register(name, _reduce_infer(name), _reduce_impl(name))
    for name in ARG_REDUCTIONS:
        register(name, _arg_infer(name), _reduce_impl(name))
    register("cumulative", _cumulative_infer, _cumulative_impl)
    register("diff", _diff_infer, _diff_impl)


_register_all()
