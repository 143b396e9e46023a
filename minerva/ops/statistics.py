"""Statistics ops: reductions beyond the core (``std``, ``var``, the nan-functions,
``median``, ``ptp``, ``count_nonzero``), quantiles, ``average`` and ``histogram``.

Kernels call the array module's function of NumPy's name (NumPy's own on a host copy where
the module lacks it); shapes and dtypes are NumPy's, found by probing NumPy on 1-element
arrays.
"""
from __future__ import annotations

import warnings

import numpy as np

from minerva.common.errors import DTypeError, ShapeIndexError
from minerva.ops import dtypes
from minerva.ops.dtypes import numpy_dtype
from minerva.ops.elementwise import ARRAY
from minerva.ops.kernels import call
from minerva.ops.reductions import check_nonempty, reduced_shape
from minerva.ops.registry import ArraySpec, register, shape_error

# ---- reductions -----------------------------------------------------------------------------

_NO_IDENTITY = {"nanmax": "fmax", "nanmin": "fmin", "ptp": "maximum"}
_ARG = ("nanargmax", "nanargmin")


def _reduce_infer(name):
    function = getattr(np, name)

    def infer(x, *, axis, keepdims, **attrs):
        dtypes.check_supported(name, x)
        axes = (axis,) if isinstance(axis, int) else axis
        if name in _NO_IDENTITY:
            check_nonempty(name, x, axes, "zero-size array to reduction operation "
                           f"{_NO_IDENTITY[name]} which has no identity")
        if name in _ARG:
            check_nonempty(name, x, axes, f"attempt to get {name[5:]} of an empty sequence")
        probe = {"dtype": attrs["dtype"]} if attrs.get("dtype") is not None else {}
        dtype = numpy_dtype(name, function, x, **probe)
        return (ArraySpec(reduced_shape(x.shape, axes, keepdims), dtype),)
    return infer


def _reduce_impl(name):
    def impl(xp, x, *, out, **attrs):
        out[...] = call(xp, name, x, **attrs)
    return impl


REDUCTIONS = ("std", "var", "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanstd",
              "nanvar", "nanargmax", "nanargmin", "median", "nanmedian", "ptp",
              "count_nonzero")


# ---- quantiles and weighted averages --------------------------------------------------------

def check_weights(name: str, x: ArraySpec, w: ArraySpec, axis) -> None:
    """NumPy's checks of ``weights`` against ``a`` (``axis``: a tuple in the caller's order
    or None): the same shape, or the shape of ``a`` along ``axis``."""
    if w.shape == x.shape:
        return
    if axis is None:
        raise DTypeError(f"{name}: Axis must be specified when shapes of a and "
                                "weights differ.")
    if w.shape != tuple(x.shape[i] for i in axis):
        raise shape_error(name, "Shape of weights must be consistent with shape of a "
                          "along specified axis.", x, w)


def _quantile_infer(name):
    function = getattr(np, name)

    def numpy_quantile(a, q, *weights, method):
        return function(a, q, method=method, weights=weights[0] if weights else None)

    def infer(x, *arrays, axis, keepdims, method, q):
        if x.dtype.kind == "c":
            raise DTypeError(f"{name}: a must be an array of real numbers")
        dtypes.check_supported(name, x)
        q_spec, weights = (arrays[0], arrays[1:]) if q is ARRAY else (q, arrays)
        if weights:
            check_weights(name, x, weights[0], axis)
        if not name.startswith("nan"):
            check_nonempty(name, x, axis, "index -1 is out of bounds for axis 0 with size 0",
                           ShapeIndexError)
        dtype = numpy_dtype(f"{name}-{method}", numpy_quantile, x, q_spec, *weights,
                            method=method)
        q_shape = q_spec.shape if q is ARRAY else ()
        return (ArraySpec(q_shape + reduced_shape(x.shape, axis, keepdims), dtype),)
    return infer


def _quantile_impl(name):
    def impl(xp, x, *arrays, out, axis, keepdims, method, q):
        if q is ARRAY:
            q, arrays = arrays[0], arrays[1:]
        extra = {"weights": arrays[0]} if arrays else {}
        if method != "linear":
            extra["method"] = method
        out[...] = call(xp, name, x, q, axis=axis, keepdims=keepdims, **extra)
    return impl


def _average_infer(x, *weights, axis, keepdims, returned):
    dtypes.check_supported("average", x)
    if weights:
        check_weights("average", x, weights[0], axis)
    dtype = numpy_dtype("average", _numpy_average, x, *weights)
    spec = ArraySpec(reduced_shape(x.shape, axis, keepdims), dtype)
    return (spec, spec) if returned else (spec,)


def _numpy_average(a, *weights):
    return np.average(a, weights=weights[0] if weights else None)


def _average_impl(xp, x, *weights, out, axis, keepdims, returned):
    result = call(xp, "average", x, axis=axis, weights=weights[0] if weights else None,
                  returned=returned, keepdims=keepdims)
    if returned:
        out[0][...], out[1][...] = result
    else:
        out[...] = result


# ---- histogram --------------------------------------------------------------------------------

def _histogram_infer(x, *arrays, bins, range, density, weighted):
    dtypes.check_supported("histogram", x)
    arrays = list(arrays)
    edges = arrays.pop(0) if bins is ARRAY else None
    w = arrays.pop(0) if weighted else None
    if w is not None and w.shape != x.shape:
        raise shape_error("histogram", "weights should have the same shape as a.", x, w)
    if edges is not None and (len(edges.shape) != 1 or edges.shape[0] == 0):
        raise shape_error("histogram", "`bins` must be 1d, when an array", edges)
    if edges is None and bins < 1:
        raise shape_error("histogram", "`bins` must be positive, when an integer")
    counts, edge_values = _histogram_probe(x, edges, range, density, w)
    n = edges.shape[0] - 1 if edges is not None else bins
    return ArraySpec((n,), counts.dtype), ArraySpec((n + 1,), edge_values.dtype)


def _histogram_probe(x, edges, range, density, w) -> tuple:
    """NumPy's histogram of 1-element stand-ins (its dtypes, its errors for ``range``)."""
    extra = {"weights": dtypes.probe(w)} if w is not None else {}
    bins = np.arange(2, dtype=edges.dtype) if edges is not None else 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.histogram(dtypes.probe(x), bins, range, density=density, **extra)
    except TypeError as exc:
        raise DTypeError(f"histogram: {exc}") from None
    except ValueError as exc:
        raise shape_error("histogram", str(exc)) from None


def _histogram_impl(xp, x, *arrays, out, bins, range, density, weighted):
    arrays = list(arrays)
    if bins is ARRAY:
        bins = arrays.pop(0)
    w = arrays.pop(0) if weighted else None
    counts, edges = call(xp, "histogram", x, bins, range=range, density=density, weights=w)
    out[0][...], out[1][...] = counts, edges


def _register_all() -> None:
    for name in REDUCTIONS:
        register(name, _reduce_infer(name), _reduce_impl(name))
    for name in ("percentile", "quantile", "nanpercentile", "nanquantile"):
        register(name, _quantile_infer(name), _quantile_impl(name))
    register("average", _average_infer, _average_impl)
    register("average_returned", _average_infer, _average_impl, n_outputs=2)
    register("histogram", _histogram_infer, _histogram_impl, n_outputs=2)


_register_all()
