"""NumPy's sorting, searching and counting functions: ``sort``, ``argsort``,
``partition``, ``argpartition``, ``searchsorted``, ``argwhere`` and ``flatnonzero`` (and
the in-place ``x.sort()`` and ``x.partition()``).

``sort``, ``argsort``, ``partition``, ``argpartition`` and ``searchsorted`` build ops and
return at once. Functions whose result's *shape* depends on the values (``argwhere``,
``flatnonzero``) wait for the input and compute on the host. (``argmax``/``argmin`` are in
``minerva.api.core.reductions``, ``nonzero`` in ``minerva.api.core.indexing``, the
nan-arg-extremes and ``count_nonzero`` in ``minerva.api.statistics``.)
"""
from __future__ import annotations

import numpy as np

from minerva.api.core.indexing import check_writable
from minerva.api.core.manipulation import flip
from minerva.builder import build, to_narray, upload
from minerva.common.errors import ShapeError
from minerva.narray import NArray
from minerva.ops import registry
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

def _no_order(order, x=None) -> None:
    if order is not None and (x is None or x.dtype.names is None):
        raise ShapeError("Cannot specify order when the array has no fields.")

def _sorting(name, a, axis, kind, order, stable, out=None):
    x = to_narray(a, name)
    _no_order(order, x)
    attrs = {"axis": _sort_axis(name, axis, x.ndim), "kind": kind, "stable": stable}
    if order is not None:  # records by their fields, NumPy's ValueError for a wrong name
        attrs["order"] = order if isinstance(order, str) else tuple(order)
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

def sort_in_place(self, axis=-1, kind=None, order=None, *, stable=None) -> None:
    """Sort the array in place along ``axis`` (views and aliases see the sorted values)."""
    if axis is None:
        raise TypeError("'NoneType' object cannot be interpreted as an integer")
    check_writable(self)
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

def partition_in_place(self, kth, axis=-1, kind="introselect", order=None) -> None:
    """Partition the array in place around its ``kth`` element(s) along ``axis``."""
    if axis is None:
        raise TypeError("'NoneType' object cannot be interpreted as an integer")
    check_writable(self)
    _partitioning("partition", self, kth, axis, kind, order, out=self)

# ---- searching -------------------------------------------------------------------------

def searchsorted(a, v, side="left", sorter=None) -> NArray:
    """Where the values ``v`` would go in the sorted 1-D ``a`` (``sorter``: indices that
    sort ``a``) to keep it sorted; ``intp`` indices of ``v``'s shape. Values of ``sorter``
    out of range make the op fail (at the next wait)."""
    arrays = [to_narray(a, "searchsorted"), to_narray(v, "searchsorted")]
    if sorter is not None:
        arrays.append(to_narray(sorter, "searchsorted"))
    return build(_OPS("searchsorted"), arrays, {"side": side})

def _host(name, a) -> np.ndarray:
    return to_narray(a, name).to_numpy()

def argwhere(a) -> NArray:
    """Indices of the non-zero elements, one row each. Waits for ``a`` (the result's
    shape depends on its values)."""
    return upload(np.argwhere(_host("argwhere", a)))

def flatnonzero(a) -> NArray:
    """Indices of the non-zero elements of the flattened ``a``. Waits for ``a`` (the
    result's shape depends on its values)."""
    return upload(np.flatnonzero(_host("flatnonzero", a)))


__all__ = ["argpartition", "argsort", "argwhere", "flatnonzero", "partition", "searchsorted",
           "sort"]
