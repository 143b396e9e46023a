"""NumPy's statistics under its names: ``std``, ``var``, the nan-functions (``nanargmax``
and ``nanargmin`` too), ``median``, quantiles, ``average``, ``ptp``, ``count_nonzero``,
``histogram`` and ``bincount``. (``mean``, ``max``, ``min`` and the cumulative sums are
``minerva.api.core.reductions``.)

Every function builds ops and returns at once, except where the result's shape depends on
the values (``bincount``, ``histogram`` with a string ``bins``): those wait for them. Errors
NumPy raises from shapes, dtypes and arguments are raised at once; those that depend on
values (all-NaN slices of ``nanargmax``, weights summing to zero in ``average``, quantiles of
an NArray ``q`` out of range) are raised by the op, at the next wait.
"""
from __future__ import annotations

import numpy as np

from minerva.api.core.arguments import int_axis, ordered_axes
from minerva.api.core.reductions import no_extras
from minerva.builder import build, host_array, to_narray, upload
from minerva.common.errors import ShapeError
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.dtypes import supported_dtype
from minerva.ops.elementwise import ARRAY
from minerva.ops.reductions import normalize_axis

_OPS = registry.get


# ---- arguments ----------------------------------------------------------------------------

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


__all__ = [
    "average", "bincount", "count_nonzero", "histogram", "median", "nanargmax", "nanargmin",
    "nanmax", "nanmean", "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile",
    "nanstd", "nansum", "nanvar", "percentile", "ptp", "quantile", "std", "var"]
