"""NumPy's sorting, searching, set and comparison functions, and rounding and complex
parts, under NumPy's names (exported through :mod:`minerva.statistics`).

``sort``, ``argsort``, ``partition``, ``argpartition``, ``searchsorted``, ``isin``,
``isclose``, ``round``, ``real``, ``imag``, ``angle`` and ``nan_to_num`` build ops and
return at once. Functions whose result's *shape* depends on the values (``unique`` and the
``unique_*`` family, ``argwhere``, ``flatnonzero``) wait for the input and compute on the
host; those that return a Python bool (``allclose``, ``array_equal``, ``array_equiv``)
build the comparison as ops and wait for its one value.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from minerva import creation, functions, indexing, ufuncs
from minerva._manipulation.views import flip
from minerva.builder import build, to_narray, upload
from minerva.common.errors import ShapeError
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.dtypes import is_scalar
from minerva.ops.elementwise import ARRAY
from minerva.ops.reductions import normalize_axis
from minerva.ops.sorting import kth_tuple

_OPS = registry.get


# ---- sorting ---------------------------------------------------------------------------

def _sort_axis(name: str, axis, ndim: int):
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        raise TypeError(f"{name}: 'tuple' object cannot be interpreted as an integer")
    return normalize_axis(name, axis, ndim)[0]


def _no_order(order) -> None:
    if order is not None:
        raise ShapeError("Cannot specify order when the array has no fields.")


def _sorting(name, a, axis, kind, order, stable, out=None):
    x = to_narray(a, name)
    _no_order(order)
    attrs = {"axis": _sort_axis(name, axis, x.ndim), "kind": kind, "stable": stable}
    return build(_OPS(name), [x], attrs, out)


def sort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False) -> NArray:
    """A sorted copy of ``a`` along ``axis`` (of the flattened array when None);
    ``descending`` (the array API's) sorts largest first, equal elements keeping their
    order when ``stable``."""
    if descending:
        x = to_narray(a, "sort")
        x, axis = (x.reshape(-1), -1) if axis is None else (x, axis)
        return flip(_sorting("sort", flip(x, axis), axis, kind, order, stable), axis)
    return _sorting("sort", a, axis, kind, order, stable)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False) -> NArray:
    """The indices that sort ``a`` along ``axis`` (of the flattened array when None);
    ``descending`` as in :func:`sort`."""
    if descending:
        x = to_narray(a, "argsort")
        x, axis = (x.reshape(-1), -1) if axis is None else (x, axis)
        n = x.shape[axis]
        return flip((n - 1) - _sorting("argsort", flip(x, axis), axis, kind, order, stable),
                    axis)
    return _sorting("argsort", a, axis, kind, order, stable)


def _sort_method(self, axis=-1, kind=None, order=None, *, stable=None) -> None:
    """Sort the array in place along ``axis`` (views and aliases see the sorted values)."""
    if axis is None:
        raise TypeError("'NoneType' object cannot be interpreted as an integer")
    indexing.check_writable(self)
    _sorting("sort", self, axis, kind, order, stable, out=self)


def _partitioning(name, a, kth, axis, kind, order, out=None):
    x = to_narray(a, name)
    _no_order(order)
    attrs = {"kth": kth_tuple(kth), "axis": _sort_axis(name, axis, x.ndim), "kind": kind}
    return build(_OPS(name), [x], attrs, out)


def partition(a, kth, axis=-1, kind="introselect", order=None) -> NArray:
    """A copy of ``a`` with the ``kth`` element(s) along ``axis`` where a sort would put
    them, smaller ones before and larger ones after (in no given order)."""
    return _partitioning("partition", a, kth, axis, kind, order)


def argpartition(a, kth, axis=-1, kind="introselect", order=None) -> NArray:
    """The indices that partition ``a`` around its ``kth`` element(s) along ``axis``."""
    return _partitioning("argpartition", a, kth, axis, kind, order)


def _partition_method(self, kth, axis=-1, kind="introselect", order=None) -> None:
    """Partition the array in place around its ``kth`` element(s) along ``axis``."""
    if axis is None:
        raise TypeError("'NoneType' object cannot be interpreted as an integer")
    indexing.check_writable(self)
    _partitioning("partition", self, kth, axis, kind, order, out=self)


# ---- searching and sets ----------------------------------------------------------------------

def searchsorted(a, v, side="left", sorter=None) -> NArray:
    """Where the values ``v`` would go in the sorted 1-D ``a`` (``sorter``: indices that
    sort ``a``) to keep it sorted; ``intp`` indices of ``v``'s shape. Values of ``sorter``
    out of range make the op fail (at the next wait)."""
    arrays = [to_narray(a, "searchsorted"), to_narray(v, "searchsorted")]
    if sorter is not None:
        arrays.append(to_narray(sorter, "searchsorted"))
    return build(_OPS("searchsorted"), arrays, {"side": side})


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Whether each element of ``element`` is in ``test_elements`` (booleans of
    ``element``'s shape; negated with ``invert``)."""
    arrays = [to_narray(element, "isin"), to_narray(test_elements, "isin")]
    attrs = {"assume_unique": bool(assume_unique), "invert": bool(invert), "kind": kind}
    return build(_OPS("isin"), arrays, attrs)


def _host(name, a) -> np.ndarray:
    return to_narray(a, name).to_numpy()


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, sorted=True):
    """``numpy.unique`` (NumPy 2's shapes for the inverse). The result's shape depends
    on the values: this waits for ``ar`` and computes on the host."""
    result = np.unique(_host("unique", ar), return_index, return_inverse, return_counts,
                       axis, equal_nan=equal_nan, sorted=sorted)
    return tuple(upload(r) for r in result) if isinstance(result, tuple) else upload(result)


def _unique_named(name):
    def function(x, /):
        result = getattr(np, name)(_host(name, x))
        if isinstance(result, np.ndarray):
            return upload(result)
        return type(result)(*(upload(r) for r in result))
    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"The array API's ``{name}`` (NumPy's named tuple of NArrays). "
                        "The result's shape depends on the values: this waits for ``x``.")
    return function


unique_all, unique_counts, unique_inverse, unique_values = map(
    _unique_named, ("unique_all", "unique_counts", "unique_inverse", "unique_values"))


def argwhere(a) -> NArray:
    """Indices of the non-zero elements, one row each. Waits for ``a`` (the result's
    shape depends on its values)."""
    return upload(np.argwhere(_host("argwhere", a)))


def flatnonzero(a) -> NArray:
    """Indices of the non-zero elements of the flattened ``a``. Waits for ``a`` (the
    result's shape depends on its values)."""
    return upload(np.flatnonzero(_host("flatnonzero", a)))


# ---- comparisons ---------------------------------------------------------------------------

def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> NArray:
    """Element-wise ``|a - b| <= atol + rtol * |b|`` (NaNs equal when ``equal_nan``);
    ``rtol`` and ``atol`` are scalars."""
    layout, arrays = [], []
    for value in (a, b):
        if is_scalar(value) and not isinstance(value, NArray):
            layout.append(value[()] if isinstance(value, np.ndarray) else value)
        else:
            layout.append(ARRAY)
            arrays.append(to_narray(value, "isclose"))
    if not arrays:
        layout[0], arrays = ARRAY, [to_narray(a, "isclose")]
    for name, tolerance in (("rtol", rtol), ("atol", atol)):
        if not is_scalar(tolerance) or isinstance(tolerance, NArray):
            raise TypeError(f"isclose: {name} must be a scalar in minerva")
    attrs = {"layout": tuple(layout), "rtol": rtol, "atol": atol,
             "equal_nan": bool(equal_nan)}
    return build(_OPS("isclose"), arrays, attrs)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether every pair of elements is close (see ``isclose``). Waits for one value."""
    return bool(functions.all(isclose(a, b, rtol, atol, equal_nan)))


def array_equal(a1, a2, equal_nan=False) -> bool:
    """Whether both arrays have one shape and equal elements (NaNs equal when
    ``equal_nan``). Waits for one value (not at all when the shapes differ)."""
    x, y = to_narray(a1, "array_equal"), to_narray(a2, "array_equal")
    if x.shape != y.shape:
        return False
    same = ufuncs.equal(x, y)
    if equal_nan and (x.dtype.kind in "fc" or y.dtype.kind in "fc"):
        both_nan = ufuncs.logical_and(ufuncs.isnan(x), ufuncs.isnan(y))
        same = ufuncs.logical_or(same, both_nan)
    return bool(functions.all(same))


def array_equiv(a1, a2) -> bool:
    """Whether both arrays broadcast to one shape and are equal there. Waits for one
    value (not at all when the shapes do not broadcast)."""
    x, y = to_narray(a1, "array_equiv"), to_narray(a2, "array_equiv")
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return False
    return bool(functions.all(ufuncs.equal(x, y)))


# ---- rounding and complex parts ----------------------------------------------------------------

def round(a, decimals=0, out=None) -> NArray:  # noqa: A001  (NumPy's name)
    """``a`` rounded to ``decimals`` places (negative: to tens, hundreds...), half to
    even, in ``a``'s dtype (``float16`` for booleans, as NumPy)."""
    x = to_narray(a, "round")
    return build(_OPS("round"), [x], {"decimals": operator.index(decimals)}, out)


around = round


def _python_round(self, ndigits=None):
    """``round(x)`` of a 0-d array, as of a NumPy scalar: a Python int (waits) without
    ``ndigits``, else a 0-d array."""
    if self.ndim:
        raise TypeError("type minerva.NArray doesn't define __round__ method")
    if ndigits is None:
        return builtins.round(self.item())
    return round(self, ndigits)


def real(val) -> NArray:
    """The real part: a copy for complex arrays (NumPy gives a view), the array itself
    (a view of it) otherwise."""
    x = to_narray(val, "real")
    if x.dtype.kind == "c":
        return build(_OPS("real_part"), [x], {"part": "real"})
    return functions.view_of(x, functions.explicit_view(x))


def imag(val) -> NArray:
    """The imaginary part: a copy for complex arrays (NumPy gives a view), zeros of the
    array's dtype otherwise."""
    x = to_narray(val, "imag")
    if x.dtype.kind == "c":
        return build(_OPS("real_part"), [x], {"part": "imag"})
    return creation.zeros(x.shape, x.dtype)


def _set_part(part):
    def setter(self, value):
        indexing.check_writable(self)
        if self.dtype.kind != "c":
            if part == "imag":
                raise TypeError("array does not have imaginary part to set")
            indexing.assign(self, value)
            return
        attrs = {"part": part, "shape": self.shape, "dtype": self.dtype}
        build(_OPS("set_part"), [to_narray(value, part)], attrs, out=self)
    return setter


def angle(z, deg=False) -> NArray:
    """The angle of each complex element, in radians (degrees with ``deg``)."""
    return build(_OPS("angle"), [to_narray(z, "angle")], {"deg": bool(deg)})


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None) -> NArray:
    """``x`` with NaN replaced by ``nan`` and infinities by ``posinf``/``neginf`` (the
    dtype's largest/smallest values by default); ``copy=False`` writes into an NArray
    ``x`` in place and returns it."""
    array = to_narray(x, "nan_to_num")
    attrs = {"nan": _scalar(nan), "posinf": _scalar(posinf), "neginf": _scalar(neginf)}
    out = array if not copy and isinstance(x, NArray) else None
    if out is not None:
        indexing.check_writable(out)
    return build(_OPS("nan_to_num"), [array], attrs, out)


def _scalar(value):
    if value is None or (is_scalar(value) and not isinstance(value, NArray)):
        return value[()] if isinstance(value, np.ndarray) else value
    raise TypeError(f"nan_to_num: expected a scalar, got {type(value).__name__}")


__all__ = [
    "allclose", "angle", "argpartition", "argsort", "argwhere", "around", "array_equal",
    "array_equiv", "flatnonzero", "imag", "isclose", "isin", "nan_to_num", "partition",
    "real", "round", "searchsorted", "sort", "unique", "unique_all", "unique_counts",
    "unique_inverse", "unique_values"]

METHODS: dict = {
    "sort": _sort_method, "argsort": argsort, "partition": _partition_method,
    "argpartition": argpartition, "searchsorted": searchsorted, "round": round,
    "__round__": _python_round, "conj": ufuncs.conjugate, "conjugate": ufuncs.conjugate,
    "real": property(real, _set_part("real"), doc="The real part (settable)."),
    "imag": property(imag, _set_part("imag"), doc="The imaginary part (settable)."),
}
"""NArray methods this module adds (name -> function taking the array first)."""
