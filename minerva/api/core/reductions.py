"""NumPy's reductions and what they build on: ``sum``, ``prod``, ``max``/``amax``,
``min``/``amin``, ``mean``, ``any``, ``all``, ``argmax``, ``argmin`` over ``axis`` (None, an
int or a tuple) with NumPy's keywords (``keepdims``, ``dtype``, ``initial``, ``where``,
``out=`` cast as NumPy casts into it); cumulative sums and products
(``cumsum``, ``cumprod``, the array API's ``cumulative_sum`` and ``cumulative_prod``) and
``diff``. Every function builds one op and returns at once.
"""
from __future__ import annotations

import builtins
import operator
import warnings

import numpy as np

from minerva.api.core import lean
from minerva.api.core.arguments import int_axis
from minerva.api.core.manipulation import broadcast_to, concatenate
from minerva.builder import build, to_narray
from minerva.common.errors import ShapeError
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.dtypes import supported_dtype
from minerva.ops.reductions import normalize_axis

_OPS = registry.get
_NO_VALUE = np._NoValue
_UFUNC_REDUCE, _ASSIGN = _OPS("ufunc_reduce"), _OPS("assign")
_DIVIDE, _ASTYPE = _OPS("divide"), _OPS("astype")


def _reduce(name: str, a, axis, dtype, out, keepdims, initial, where, extra: dict):
    """``numpy.<name>`` (``sum`` ... ``all``): one op over ``axis``; with ``initial`` or
    ``where``, NumPy's ufunc reduction (``add.reduce`` ...: ``_folded``); ``out=`` of
    another dtype receives the result cast unsafely, as NumPy's reductions cast it."""
    if not extra and dtype is None and out is None and type(a) is NArray \
            and initial is _NO_VALUE and (where is True or where is _NO_VALUE) \
            and (axis is None or type(axis) is int) and not a._storage.engine.closed:
        attrs = {"axis": normalize_axis(name, axis, len(a._spec.shape)),   # the common call
                 "keepdims": False if keepdims is _NO_VALUE else bool(keepdims)}
        return build(_OPS(name), [a], attrs)
    no_extras(name, extra, ("dtype",))  # dtype=None: what minerva's ufunc folds pass
    keepdims = False if keepdims is _NO_VALUE else keepdims
    where = True if where is _NO_VALUE else where
    x = to_narray(a, name)
    axes = normalize_axis(name, axis, x.ndim)
    dtype = None if dtype is None else supported_dtype(dtype)
    mask = None if where is True else to_narray(where, name, np.bool_)
    if initial is None:
        initial = _NO_VALUE
    if name == "mean" and mask is not None:
        return _masked_mean(x, axes, dtype, out, keepdims, mask)
    if mask is not None or initial is not _NO_VALUE:
        return _folded(name, x, axes, dtype, out, keepdims, initial, mask)
    attrs = {"axis": axes, "keepdims": bool(keepdims)}
    if dtype is not None and name in _DTYPE_REDUCTIONS:
        attrs["dtype"] = dtype
    return into(_OPS(name), [x], attrs, out)

_DTYPE_REDUCTIONS = ("sum", "prod", "mean")
_FOLDS = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum",
          "any": "logical_or", "all": "logical_and"}

def no_extras(name: str, kwargs: dict, none_defaults=("initial",)) -> None:
    """Drop NumPy's keywords that ask for nothing (``where=True``; ``None`` for the names
    in ``none_defaults``); TypeError naming any other keyword left in ``kwargs``."""
    for key in none_defaults:
        if kwargs.get(key, None) is None:
            kwargs.pop(key, None)
    if kwargs.get("where", True) is True:
        kwargs.pop("where", None)
    if kwargs:
        raise TypeError(f"{name}: unsupported keyword argument(s) {sorted(kwargs)}")

def into(op_def, inputs: list, attrs: dict, out):
    """The op's result, or ``out`` after writing it there as NumPy's reductions write it:
    of the result's shape exactly, cast unsafely when ``out`` (an NArray or a NumPy
    array) has another dtype."""
    if out is None:
        return build(op_def, inputs, attrs)
    (spec,) = op_def.infer(*[x._spec for x in inputs], **attrs)
    if tuple(out.shape) != spec.shape:
        raise ShapeError(f"{op_def.name}: out= has shape {tuple(out.shape)}, the result has "
                         f"shape {spec.shape}")
    if out.dtype == spec.dtype:
        return build(op_def, inputs, attrs, out)
    build(_ASSIGN, [build(op_def, inputs, attrs)], {"dtype": out.dtype}, out)
    return out

def _folded(name, x: NArray, axes, dtype, out, keepdims, initial, mask):
    """``numpy.<ufunc>.reduce`` with ``initial`` and ``where`` (NumPy's own on CPU devices:
    the ``ufunc_reduce`` op), the result's dtype and NumPy's errors found on stand-ins."""
    ufunc = getattr(np, _FOLDS[name])
    extras = {} if initial is _NO_VALUE else {"initial": initial}
    if mask is not None:
        extras["where"] = np.ones(_cut(mask.shape), np.bool_)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = np.asarray(ufunc.reduce(np.zeros(_cut(x.shape), x.dtype), axis=axes,
                                         dtype=dtype, keepdims=keepdims, **extras)).dtype
    attrs = {"name": ufunc.__name__, "axis": axes, "keepdims": bool(keepdims),
             "initial": extras.get("initial"), "dtype": dtype, "result": result}
    return into(_UFUNC_REDUCE, [x] if mask is None else [x, mask], attrs, out)

def _cut(shape: tuple) -> tuple:
    """A stand-in's shape: each axis of ``shape`` cut to at most one element."""
    return tuple(builtins.min(n, 1) for n in shape)

def _masked_mean(x: NArray, axes, dtype, out, keepdims, mask: NArray):
    """NumPy's ``mean(where=mask)``: the masked sum over the count of the elements the mask
    selects, in NumPy's dtypes (float64 for integers, float32 then float16 for float16)."""
    result = dtype
    if dtype is None:
        half = x.dtype == np.float16
        dtype = np.dtype(np.float32) if half else (
            np.dtype(np.float64) if x.dtype.kind in "biu" else None)
        result = x.dtype if half else None
    total = _folded("sum", x, axes, dtype, None, keepdims, _NO_VALUE, mask)
    count = sum(broadcast_to(mask, x.shape), axes, np.intp, None, keepdims)
    mean = build(_ASTYPE, [build(_DIVIDE, [total, count])],
                 {"dtype": total.dtype if result is None else result})
    return mean if out is None else into(_ASTYPE, [mean], {"dtype": mean.dtype}, out)

def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NO_VALUE, where=True,
        **extra):
    """``numpy.sum`` over ``axis`` (None, an int or a tuple), reduced axes kept as size 1
    when ``keepdims``, from ``initial``, over the elements ``where`` selects; ``out=``
    receives the result."""
    return _reduce("sum", a, axis, dtype, out, keepdims, initial, where, extra)

def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NO_VALUE,
         where=True, **extra):
    """``numpy.prod``, with the keywords of ``sum``."""
    return _reduce("prod", a, axis, dtype, out, keepdims, initial, where, extra)

def max(a, axis=None, out=None, keepdims=False, initial=_NO_VALUE, where=True, **extra):
    """``numpy.max`` (``amax``): with ``where``, ``initial`` is needed (NumPy's ValueError);
    an empty reduction gives ``initial``."""
    return _reduce("max", a, axis, None, out, keepdims, initial, where, extra)

def min(a, axis=None, out=None, keepdims=False, initial=_NO_VALUE, where=True, **extra):
    """``numpy.min`` (``amin``), with the keywords of ``max``."""
    return _reduce("min", a, axis, None, out, keepdims, initial, where, extra)

def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True, **extra):
    """``numpy.mean``: float64 for integers unless ``dtype`` says otherwise; ``where``
    averages the elements it selects (NaN, with NumPy's warning, where it selects none)."""
    return _reduce("mean", a, axis, dtype, out, keepdims, _NO_VALUE, where, extra)

def any(a, axis=None, out=None, keepdims=False, *, where=True, **extra):
    """``numpy.any``: whether an element ``where`` selects is true."""
    return _reduce("any", a, axis, None, out, keepdims, _NO_VALUE, where, extra)

def all(a, axis=None, out=None, keepdims=False, *, where=True, **extra):
    """``numpy.all``: whether every element ``where`` selects is true."""
    return _reduce("all", a, axis, None, out, keepdims, _NO_VALUE, where, extra)

amax, amin = max, min

def _arg_reduction(name):
    def function(a, axis=None, out=None, *, keepdims=False):
        x = to_narray(a, name)
        if axis is not None:
            if isinstance(axis, (tuple, list)):
                raise TypeError(f"{name}: axis must be None or an int, got {axis!r}")
            (axis,) = normalize_axis(name, axis, x.ndim)
        return build(_OPS(name), [x], {"axis": axis, "keepdims": bool(keepdims)}, out)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Indices of the {name[3:]}imum along ``axis`` (flattened when None)."
    return function

argmax, argmin = _arg_reduction("argmax"), _arg_reduction("argmin")

# ---- cumulative sums and differences ---------------------------------------------------

def _dtype(dtype):
    return None if dtype is None else supported_dtype(dtype)

def _cumulative(name, a, axis, dtype, out, include_initial=False):
    x = to_narray(a, name)
    attrs = {"name": name, "axis": int_axis(name, axis, x.ndim), "dtype": _dtype(dtype),
             "include_initial": bool(include_initial)}
    return into(_OPS("cumulative"), [x], attrs, out)

def cumsum(a, axis=None, dtype=None, out=None) -> NArray:
    """Cumulative sums along ``axis`` (of the flattened array when None)."""
    return _cumulative("cumsum", a, axis, dtype, out)

def cumprod(a, axis=None, dtype=None, out=None) -> NArray:
    """Cumulative products along ``axis`` (of the flattened array when None)."""
    return _cumulative("cumprod", a, axis, dtype, out)

def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """The array API's cumulative sum: ``axis`` may be None only for 0-d and 1-D arrays;
    ``include_initial`` starts each run with 0."""
    x = to_narray(x, "cumulative_sum")
    _check_cumulative_axis(x, axis)
    return _cumulative("cumsum", x, axis, dtype, out, include_initial)

def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """The array API's cumulative product: ``axis`` may be None only for 0-d and 1-D
    arrays; ``include_initial`` starts each run with 1."""
    x = to_narray(x, "cumulative_prod")
    _check_cumulative_axis(x, axis)
    return _cumulative("cumprod", x, axis, dtype, out, include_initial)

def _check_cumulative_axis(x: NArray, axis) -> None:
    if axis is None and x.ndim > 1:
        raise ShapeError("For arrays which have more than one dimension ``axis`` argument "
                         "is required.")

def diff(a, n=1, axis=-1, prepend=_NO_VALUE, append=_NO_VALUE) -> NArray:
    """The ``n``-th discrete difference along ``axis`` (``not_equal`` for booleans), after
    joining ``prepend`` and ``append`` (scalars are broadcast to one slice); ``n=0`` gives
    ``a`` itself."""
    x = to_narray(a, "diff")
    n = operator.index(n)
    if n < 0:
        raise ShapeError(f"order must be non-negative but got {n}")
    if x.ndim == 0:
        raise ShapeError("diff requires input that is at least one dimensional")
    (axis,) = normalize_axis("diff", axis, x.ndim)
    parts = [_edge(prepend, x, axis), x, _edge(append, x, axis)]
    parts = [p for p in parts if p is not None]
    if len(parts) > 1:
        x = concatenate(parts, axis)
    if n == 0:
        return x
    return build(_OPS("diff"), [x], {"n": n, "axis": axis})

def _edge(value, x: NArray, axis: int):
    if value is _NO_VALUE:
        return None
    value = to_narray(value, "diff")
    if value.ndim == 0:
        shape = x.shape[:axis] + (1,) + x.shape[axis + 1:]
        return broadcast_to(value, shape)
    return value


sum, prod, mean = (lean.reduction(sum, "sum"), lean.reduction(prod, "prod"),   # in C
                   lean.reduction(mean, "mean"))                             # where they can
max, min = lean.reduction(max, "max"), lean.reduction(min, "min")
any, all = lean.reduction(any, "any"), lean.reduction(all, "all")
amax, amin = max, min

__all__ = ["all", "amax", "amin", "any", "argmax", "argmin", "cumprod", "cumsum",
           "cumulative_prod", "cumulative_sum", "diff", "max", "mean", "min", "prod", "sum"]
