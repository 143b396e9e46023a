"""NumPy's set routines: ``isin`` (an op, returns at once), ``unique`` and the array
API's ``unique_all``, ``unique_counts``, ``unique_inverse`` and ``unique_values``, and the
set operations ``intersect1d``, ``union1d``, ``setdiff1d``, ``setxor1d``, whose results'
shapes depend on the values: they wait for the inputs and compute on the host. (NumPy 2.4
has no ``in1d``: ``isin`` replaces it.)
"""
from __future__ import annotations

import numpy as np

from minerva.builder import build, to_narray, upload
from minerva.ops import registry

_ISIN = registry.get("isin")


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Whether each element of ``element`` is in ``test_elements`` (booleans of
    ``element``'s shape; negated with ``invert``)."""
    arrays = [to_narray(element, "isin"), to_narray(test_elements, "isin")]
    attrs = {"assume_unique": bool(assume_unique), "invert": bool(invert), "kind": kind}
    return build(_ISIN, arrays, attrs)

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


def _host_set(name: str):
    function = getattr(np, name)

    def host_set(ar1, ar2, *args, **kwargs):
        result = function(_host(name, ar1), _host(name, ar2), *args, **kwargs)
        return tuple(upload(r) for r in result) if isinstance(result, tuple) else upload(result)
    host_set.__name__ = host_set.__qualname__ = name
    host_set.__doc__ = (f"``numpy.{name}`` (NumPy's keywords). The result's shape depends on "
                        "the values: this waits for both inputs and computes on the host "
                        "(NumPy's code), then copies the result onto the current device.")
    return host_set

intersect1d, union1d, setdiff1d, setxor1d = map(
    _host_set, ("intersect1d", "union1d", "setdiff1d", "setxor1d"))


__all__ = ["intersect1d", "isin", "setdiff1d", "setxor1d", "union1d", "unique", "unique_all",
           "unique_counts", "unique_inverse", "unique_values"]
