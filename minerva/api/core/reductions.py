"""NumPy's reductions and what they build on: ``sum``, ``prod``, ``max``/``amax``,
``min``/``amin``, ``mean``, ``any``, ``all``, ``argmax``, ``argmin`` over ``axis`` (None, an
int or a tuple) with ``keepdims``, ``dtype`` and ``out=``; cumulative sums and products
(``cumsum``, ``cumprod``, the array API's ``cumulative_sum`` and ``cumulative_prod``) and
``diff``. Every function builds one op and returns at once.
"""
from __future__ import annotations

import operator

from minerva.api.core.arguments import int_axis
from minerva.api.core.manipulation import broadcast_to, concatenate
from minerva.builder import build, to_narray
from minerva.common.errors import ShapeError
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.dtypes import supported_dtype
from minerva.ops.reductions import normalize_axis

_OPS = registry.get
_NO_VALUE = object()


def _reduction(name):
    def function(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        no_extras(name, kwargs)
        x = to_narray(a, name)
        axes = normalize_axis(name, axis, x.ndim)
        attrs = {"axis": axes, "keepdims": bool(keepdims)}
        if dtype is not None:
            dtype = supported_dtype(dtype)
            if name in _DTYPE_REDUCTIONS:
                attrs["dtype"] = dtype
        return build(_OPS(name), [x], attrs, out)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"``numpy.{name}`` over ``axis`` (None, an int or a tuple), keeping "
                        "reduced axes as size 1 when ``keepdims``; ``out=`` writes the result "
                        "into an array.")
    return function

_DTYPE_REDUCTIONS = ("sum", "prod", "mean")

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

sum, prod, max, min, mean, any, all = map(
    _reduction, ("sum", "prod", "max", "min", "mean", "any", "all"))
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
    return build(_OPS("cumulative"), [x], attrs, out)

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


__all__ = ["all", "amax", "amin", "any", "argmax", "argmin", "cumprod", "cumsum",
           "cumulative_prod", "cumulative_sum", "diff", "max", "mean", "min", "prod", "sum"]
