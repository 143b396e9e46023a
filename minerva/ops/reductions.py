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
        elif dtype.kind not in dtypes.NUMERIC_KINDS or x.dtype.kind not in dtypes.NUMERIC_KINDS:
            dtype = dtypes.numpy_dtype(name, function, x, dtype=dtype)  # NumPy's, or error
        return (ArraySpec(reduced_shape(x.shape, axis, keepdims), dtype),)
    return infer


_UFUNC_OF = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
"""The reductions NumPy's functions run as a ufunc's ``reduce`` with the same arguments
(``numpy.sum`` is ``add.reduce`` after two wrapper calls): on NumPy, called directly."""


def numpy_kernel(name: str):
    """What reduction ``name``'s kernel calls on a CPU device, as ``kernel(x, axis=axis,
    keepdims=keepdims, out=out)`` when the op has no ``dtype``: the ufunc's ``reduce``
    for ``sum prod max min``, else NumPy's function (for the C lean path)."""
    ufunc = _UFUNC_OF.get(name)
    return getattr(np, name) if ufunc is None else ufunc.reduce


def _reduce_impl(name):
    ufunc = _UFUNC_OF.get(name)

    def impl(xp, x, *, out, axis, keepdims, dtype=None):
        if xp is np and ufunc is not None:
            ufunc.reduce(x, axis, dtype, out, keepdims)
        elif dtype is None:
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


# ---- ufunc methods: reduce, accumulate, reduceat of any two-operand ufunc -----------------
# On NumPy the kernels are NumPy's own methods; on another array module (CuPy, whose ufuncs
# lack most methods) they are built from its sums and products, or fold the ufunc itself:
# pairwise for the ufuncs NumPy may reorder, in order for the others.

REORDERABLE = frozenset({
    "add", "multiply", "maximum", "minimum", "fmax", "fmin", "bitwise_and", "bitwise_or",
    "bitwise_xor", "hypot", "logaddexp", "logaddexp2", "logical_and", "logical_or",
    "logical_xor", "gcd"})
"""The ufuncs whose reductions NumPy may reorder (several axes at once, pairwise)."""
_SCANNABLE = frozenset({"maximum", "minimum", "fmax", "fmin", "bitwise_and", "bitwise_or",
                        "bitwise_xor", "logical_and", "logical_or", "logical_xor", "gcd"})
_MODULE_REDUCTIONS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
                      "logical_and": "all", "logical_or": "any"}
_MODULE_SCANS = {"add": "cumsum", "multiply": "cumprod"}


def _ufunc_reduce_infer(x, *mask, name, axis, keepdims, dtype, initial, result):
    if mask and np.broadcast_shapes(mask[0].shape, x.shape) != x.shape:
        raise shape_error(f"{name}.reduce", "the where= mask does not broadcast to the "
                          "array", x, mask[0])
    return (ArraySpec(reduced_shape(x.shape, axis, keepdims), result),)


def _ufunc_reduce_impl(xp, x, *mask, out, name, axis, keepdims, dtype, initial, result):
    if xp is np:
        extras = {} if initial is None else {"initial": initial}
        getattr(np, name).reduce(x, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                                 where=mask[0] if mask else True, **extras)
        return
    out[...] = portable_reduce(xp, name, x.astype(result, copy=False),
                               mask[0] if mask else None, axis, initial).reshape(out.shape)


def portable_reduce(xp, name: str, x, mask, axis, initial):
    """``numpy.<name>.reduce(x, axis, initial=initial, where=mask)`` (no ``keepdims``)
    over array module ``xp``; ``x`` already of the result dtype."""
    identity = getattr(np, name).identity
    axes = tuple(range(x.ndim)) if axis is None else axis
    if mask is not None:
        mask = xp.broadcast_to(mask, x.shape)
        if name in REORDERABLE:
            filler = identity if identity is not None else initial
            x, mask = xp.where(mask, x, xp.asarray(filler).astype(x.dtype)), None
    x, mask = _axes_last(xp, x, axes), None if mask is None else _axes_last(xp, mask, axes)
    function, start = getattr(xp, name), _start(xp, x, initial, identity)
    if name in _MODULE_REDUCTIONS and x.shape[-1]:
        folded = getattr(xp, _MODULE_REDUCTIONS[name])(x, axis=-1).astype(x.dtype, copy=False)
    elif name in REORDERABLE:
        folded = _pairwise(xp, function, x)
    else:
        return _in_order(xp, function, x, mask, start)
    if folded is None:
        return start
    return folded if initial is None else function(start, folded)


def _axes_last(xp, x, axes):
    """``x`` with the ``axes`` moved last and merged into one."""
    kept = [d for d in range(x.ndim) if d not in axes]
    size = int(np.prod([x.shape[d] for d in axes]))
    return x.transpose(kept + list(axes)).reshape(tuple(x.shape[d] for d in kept) + (size,))


def _start(xp, x, initial, identity):
    """What a fold starts from: ``initial`` or the identity, broadcast to one slice (None
    when neither is given)."""
    value = initial if initial is not None else identity
    if value is None:
        return None
    return xp.broadcast_to(xp.asarray(value).astype(x.dtype), x.shape[:-1])


def _pairwise(xp, function, x):
    """``function`` folded over the last axis of ``x``, halving it each step (None for an
    empty axis)."""
    while x.shape[-1] > 1:
        half = x.shape[-1] // 2
        head = function(x[..., :half], x[..., half:2 * half])
        rest = x[..., 2 * half:]
        x = xp.concatenate([head, rest.astype(head.dtype)], axis=-1) if rest.shape[-1] else head
    return x[..., 0] if x.shape[-1] else None


def _in_order(xp, function, x, mask, start):
    """``function`` folded over the last axis of ``x``, element after element (skipping
    those ``mask`` hides), from ``start`` (or the first element)."""
    first = 0
    if start is None:
        if not x.shape[-1]:
            raise ValueError("zero-size array to reduction operation which has no identity")
        start, first = x[..., 0], 1
    for i in range(first, x.shape[-1]):
        step = function(start, x[..., i])
        start = step if mask is None else xp.where(mask[..., i], step, start)
    return start


def _ufunc_accumulate_infer(x, *, name, axis, dtype, result):
    return (ArraySpec(x.shape, result),)


def _ufunc_accumulate_impl(xp, x, *, out, name, axis, dtype, result):
    if xp is np:
        getattr(np, name).accumulate(x, axis=axis, dtype=dtype, out=out)
        return
    x = x.astype(result, copy=False)
    if name in _MODULE_SCANS:
        out[...] = getattr(xp, _MODULE_SCANS[name])(x, axis=axis, dtype=result)
        return
    out[...] = xp.moveaxis(portable_scan(xp, name, xp.moveaxis(x, axis, -1)), -1, axis)


def portable_scan(xp, name: str, x):
    """``numpy.<name>.accumulate`` along the last axis of ``x`` over array module ``xp``:
    doubling steps for the exact associative ufuncs, element after element otherwise."""
    function, n = getattr(xp, name), x.shape[-1]
    if name in _SCANNABLE:
        step = 1
        while step < n:
            x = xp.concatenate([x[..., :step], function(x[..., :-step], x[..., step:])
                                .astype(x.dtype)], axis=-1)
            step *= 2
        return x
    x = x.copy()
    for i in range(1, n):
        x[..., i] = function(x[..., i - 1], x[..., i])
    return x


def _ufunc_reduceat_infer(x, *, name, indices, axis, dtype, result):
    shape = x.shape[:axis] + (len(indices),) + x.shape[axis + 1:]
    return (ArraySpec(shape, result),)


def _ufunc_reduceat_impl(xp, x, *, out, name, indices, axis, dtype, result):
    if xp is np:
        getattr(np, name).reduceat(x, np.asarray(indices, dtype=np.intp), axis=axis,
                                   dtype=dtype, out=out)
        return
    x, before = x.astype(result, copy=False), (slice(None),) * axis
    ends = indices[1:] + (x.shape[axis],)
    for i, (start, stop) in enumerate(zip(indices, ends)):
        if start < stop:
            part = portable_reduce(xp, name, x[before + (slice(start, stop),)], None,
                                   (axis,), None)
        else:
            part = x[before + (start,)]
        out[before + (i,)] = part


register("ufunc_reduce", _ufunc_reduce_infer, _ufunc_reduce_impl)
register("ufunc_accumulate", _ufunc_accumulate_infer, _ufunc_accumulate_impl)
register("ufunc_reduceat", _ufunc_reduceat_infer, _ufunc_reduceat_impl)
