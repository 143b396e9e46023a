"""NumPy's statistics under its names: ``std``, ``var``, the nan-functions, ``median``,
quantiles, ``average``, ``ptp``, ``count_nonzero``, cumulative sums and products, ``diff``,
``histogram`` and ``bincount``; and, from :mod:`minerva.sorting`, sorting, searching, set
and comparison functions.

Every function builds ops and returns at once, except where the result's shape depends on
the values (``bincount``, ``histogram`` with a string ``bins``): those wait for them. Errors
NumPy raises from shapes, dtypes and arguments are raised at once; those that depend on
values (all-NaN slices of ``nanargmax``, weights summing to zero in ``average``, quantiles of
an NArray ``q`` out of range) are raised by the op, at the next wait.
"""
from __future__ import annotations

import operator

import numpy as np

from minerva import sorting
from minerva.builder import build, host_array, to_narray, upload
from minerva.common.errors import ShapeError
from minerva.functions import broadcast_to, concatenate, no_extras
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.dtypes import supported_dtype
from minerva.ops.elementwise import ARRAY
from minerva.ops.reductions import normalize_axis
from minerva.sorting import *  # noqa: F401,F403  (exported from here too)

_OPS = registry.get
_NO_VALUE = object()


# ---- axes and keyword checks ------------------------------------------------------------

def ordered_axes(name: str, axis, ndim: int):
    """``axis`` (None, an int or a tuple) as a tuple of non-negative ints in the caller's
    order (NumPy pairs weights with axes in that order); None stays None."""
    normalize_axis(name, axis, ndim)
    if axis is None:
        return None
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    return tuple(operator.index(a) % ndim if ndim else 0 for a in items)


def int_axis(name: str, axis, ndim: int):
    """``axis`` as one non-negative int (None stays None); TypeError for a tuple, as
    NumPy's functions that take a single axis."""
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        raise TypeError(f"{name}: 'tuple' object cannot be interpreted as an integer")
    return normalize_axis(name, axis, ndim)[0]


def _dtype(dtype):
    return None if dtype is None else supported_dtype(dtype)


def _reduce(name, a, axis, out, keepdims, **attrs):
    x = to_narray(a, name)
    axes = normalize_axis(name, axis, x.ndim)
    return build(_OPS(name), [x], dict(attrs, axis=axes, keepdims=bool(keepdims)), out)


# ---- reductions -----------------------------------------------------------------------------

def _spread(name):
    def function(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
                 correction=None, **kwargs):
        no_extras(name, kwargs, ("initial", "mean"))
        if correction is not None:
            if ddof != 0:
                raise ValueError("ddof and correction can't be provided simultaneously.")
            ddof = correction
        return _reduce(name, a, axis, out, keepdims, dtype=_dtype(dtype), ddof=ddof)
    function.__doc__ = (f"``numpy.{name}`` over ``axis`` (None, an int or a tuple) with "
                        "``ddof`` (or ``correction``) degrees of freedom, ``dtype``, "
                        "``keepdims`` and ``out=``.")
    return _named(function, name)


def _accumulating(name):
    def function(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        no_extras(name, kwargs, ("initial", "mean"))
        return _reduce(name, a, axis, out, keepdims, dtype=_dtype(dtype))
    function.__doc__ = (f"``numpy.{name}`` over ``axis`` (None, an int or a tuple) with "
                        "``dtype``, ``keepdims`` and ``out=`` (NaNs count as "
                        f"{'one' if name == 'nanprod' else 'zero'} or are skipped).")
    return _named(function, name)


def _extreme(name):
    def function(a, axis=None, out=None, keepdims=False, **kwargs):
        no_extras(name, kwargs, ("initial", "mean"))
        return _reduce(name, a, axis, out, keepdims)
    function.__doc__ = (f"``numpy.{name}`` over ``axis`` (None, an int or a tuple) with "
                        "``keepdims`` and ``out=``.")
    return _named(function, name)


def _arg_extreme(name):
    def function(a, axis=None, out=None, *, keepdims=False):
        x = to_narray(a, name)
        axis = int_axis(name, axis, x.ndim)
        return build(_OPS(name), [x], {"axis": axis, "keepdims": bool(keepdims)}, out)
    function.__doc__ = (f"Indices of the {name[6:]}imum along ``axis`` ignoring NaNs "
                        "(flattened when None); an all-NaN slice makes the op fail "
                        "(ValueError at the next wait).")
    return _named(function, name)


def _middle(name):
    def function(a, axis=None, out=None, overwrite_input=False, keepdims=False):
        return _reduce(name, a, axis, out, keepdims)
    function.__doc__ = (f"``numpy.{name}`` over ``axis`` (None, an int or a tuple); the "
                        "input is never overwritten.")
    return _named(function, name)


def _named(function, name):
    function.__name__ = function.__qualname__ = name
    return function


std, var, nanstd, nanvar = map(_spread, ("std", "var", "nanstd", "nanvar"))
nansum, nanprod, nanmean = map(_accumulating, ("nansum", "nanprod", "nanmean"))
nanmax, nanmin, ptp = map(_extreme, ("nanmax", "nanmin", "ptp"))
nanargmax, nanargmin = map(_arg_extreme, ("nanargmax", "nanargmin"))
median, nanmedian = map(_middle, ("median", "nanmedian"))


def count_nonzero(a, axis=None, *, keepdims=False) -> NArray:
    """The number of non-zero elements along ``axis`` (all when None), as ``intp``. With
    ``axis=None`` the result is a 0-d array (NumPy gives a scalar)."""
    return _reduce("count_nonzero", a, axis, None, keepdims)


# ---- quantiles and averages -------------------------------------------------------------------

def _quantile(name, scale):
    limit = "Percentiles must be in the range [0, 100]" if scale == 100 else \
        "Quantiles must be in the range [0, 1]"

    def function(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                 keepdims=False, *, weights=None):
        x = to_narray(a, name)
        arrays, q_attr = [x], ARRAY
        if type(q) in (int, float):
            _check_q(np.asarray(q), scale, limit)
            q_attr = q
        elif isinstance(q, NArray):
            arrays.append(q)
        else:
            arrays.append(upload(_check_q(host_array(q, name), scale, limit)))
        if weights is not None:
            arrays.append(to_narray(weights, name))
        attrs = {"axis": ordered_axes(name, axis, x.ndim), "keepdims": bool(keepdims),
                 "method": str(method), "q": q_attr}
        return build(_OPS(name), arrays, attrs, out)
    function.__doc__ = (f"``numpy.{name}``: the ``q``-th {name.removeprefix('nan')}(s) "
                        "along ``axis`` (None, an int or a tuple) by ``method`` (default "
                        "'linear'); ``q``'s shape leads the result's. Host ``q`` is checked "
                        "at once, an NArray ``q`` when the op runs.")
    return _named(function, name)


def _check_q(q: np.ndarray, scale, limit) -> np.ndarray:
    if q.dtype.kind in "biuf":
        with np.errstate(all="ignore"):
            scaled = np.true_divide(q, scale)
        if not np.all((scaled >= 0) & (scaled <= 1)):
            raise ShapeError(limit)
    return q


percentile, nanpercentile = _quantile("percentile", 100), _quantile("nanpercentile", 100)
quantile, nanquantile = _quantile("quantile", 1), _quantile("nanquantile", 1)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """The (``weights``-)weighted mean along ``axis`` (None, an int or a tuple); with
    ``returned``, also the sum of weights (broadcast to the average's shape). Weights that
    sum to zero make the op fail (ZeroDivisionError at the next wait)."""
    x = to_narray(a, "average")
    arrays = [x] if weights is None else [x, to_narray(weights, "average")]
    attrs = {"axis": ordered_axes("average", axis, x.ndim), "keepdims": bool(keepdims),
             "returned": bool(returned)}
    return build(_OPS("average_returned" if returned else "average"), arrays, attrs)


# ---- cumulative sums and differences -----------------------------------------------------------

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


# ---- histograms ---------------------------------------------------------------------------------

def histogram(a, bins=10, range=None, density=None, weights=None) -> tuple:
    """``(hist, bin_edges)`` of ``a`` over ``bins`` (a count or the edges) within ``range``.
    A string ``bins`` ('auto', ...) makes the number of bins depend on the values: that
    call waits for ``a`` and computes on the host."""
    x = to_narray(a, "histogram")
    if isinstance(bins, str):
        return _host_histogram(x, bins, range, density, weights)
    range = None if range is None else tuple(range)
    arrays, bins = _bins(x, bins, range)
    if weights is not None:
        arrays.append(to_narray(weights, "histogram"))
    attrs = {"bins": bins, "range": range, "density": density,
             "weighted": weights is not None}
    return build(_OPS("histogram"), arrays, attrs)


def _bins(x: NArray, bins, range) -> tuple:
    if isinstance(bins, NArray):
        return [x, bins], ARRAY
    edges = np.asarray(bins)
    if edges.ndim == 0:
        if edges.dtype.kind not in "iub":
            raise TypeError("`bins` must be an integer, a string, or an array")
        return [x], int(edges)
    np.histogram(np.zeros(0, x.dtype), edges, range)  # NumPy's checks of the edges
    return [x, upload(host_array(edges, "histogram"))], ARRAY


def _host_histogram(x, bins, range, density, weights) -> tuple:
    w = None if weights is None else to_narray(weights, "histogram").to_numpy()
    hist, edges = np.histogram(x.to_numpy(), bins, range, density=density, weights=w)
    return upload(hist), upload(edges)


def bincount(x, /, weights=None, minlength=0) -> NArray:
    """The number of occurrences of each non-negative int in ``x`` (summed ``weights``
    when given). The result's length depends on the largest value: this waits for ``x``
    and counts on the host."""
    values = to_narray(x, "bincount").to_numpy()
    w = None if weights is None else to_narray(weights, "bincount").to_numpy()
    return upload(np.bincount(values, w, minlength))


_STATISTICS = [
    "average", "bincount", "count_nonzero", "cumprod", "cumsum", "cumulative_prod",
    "cumulative_sum", "diff", "histogram", "median", "nanargmax", "nanargmin", "nanmax",
    "nanmean", "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd",
    "nansum", "nanvar", "percentile", "ptp", "quantile", "std", "var"]
__all__ = sorted(_STATISTICS + sorting.__all__)


METHODS: dict = {"cumsum": cumsum, "cumprod": cumprod, "std": std, "var": var, "ptp": ptp,
                 **sorting.METHODS}
"""NArray methods this module adds (name -> function taking the array first)."""
