"""Sorting and searching ops (``sort``, ``argsort``, ``partition``, ``argpartition``,
``searchsorted``), by NumPy's rules.

``axis`` is an int, or None to work on the flattened array. ``kind`` and ``stable`` go to
NumPy as given (the sorted values are the same whatever the algorithm; ``argsort`` orders
ties by position when stable); CuPy's sorts are always stable, so other array modules get
neither.
"""
from __future__ import annotations

import operator

import numpy as np

from minerva.common.errors import DTypeError
from minerva.ops import dtypes
from minerva.ops.dtypes import numpy_dtype
from minerva.ops.kernels import call
from minerva.ops.registry import ArraySpec, register, shape_error

_INDEX = np.dtype(np.intp)


def _flat(x, axis):
    """``x`` flattened with axis 0 when ``axis`` is None, else ``x`` and ``axis``."""
    return (x.reshape(-1), 0) if axis is None else (x, axis)


def _sort_options(xp, kind, stable, order=None) -> dict:
    if xp is not np:
        return {}
    options = {} if kind is None else {"kind": kind}
    if stable is not None:
        options["stable"] = stable
    if order is not None:  # the fields of records to sort by (records live on CPUs)
        options["order"] = order
    return options


def _out_shape(x: ArraySpec, axis) -> tuple:
    return (int(np.prod(x.shape)),) if axis is None else x.shape


def _sort_infer(name):
    function = getattr(np, name)

    def infer(x, *, axis, kind, stable, order=None):
        dtypes.check_supported(name, x)
        numpy_dtype(name, function, x, kind=kind, stable=stable, order=order)
        return (ArraySpec(_out_shape(x, axis), _INDEX if name == "argsort" else x.dtype),)
    return infer


def _sort_impl(name):
    def impl(xp, x, *, out, axis, kind, stable, order=None):
        x, axis = _flat(x, axis)
        out[...] = getattr(xp, name)(x, axis=axis, **_sort_options(xp, kind, stable, order))
    return impl


def check_kth(name: str, x: ArraySpec, kth: tuple, axis) -> None:
    """NumPy's ValueError for a ``kth`` out of the bounds of the partitioned axis."""
    n = _out_shape(x, axis)[0 if axis is None else axis]
    for k in kth:
        if not -n <= k < n:
            raise shape_error(name, f"kth(={k}) out of bounds ({n})", x)


def _partition_infer(name):
    def infer(x, *, kth, axis, kind):
        dtypes.check_supported(name, x)
        if kind != "introselect":
            raise shape_error(name, f"{kind!r} is an invalid selection kind (only "
                              "'introselect' is valid)")
        check_kth(name, x, kth, axis)
        return (ArraySpec(_out_shape(x, axis),
                          _INDEX if name == "argpartition" else x.dtype),)
    return infer


def _partition_impl(name):
    def impl(xp, x, *, out, kth, axis, kind):
        x, axis = _flat(x, axis)
        out[...] = call(xp, name, x, list(kth), axis=axis)
    return impl


def _searchsorted_infer(a, v, *sorter, side):
    if len(a.shape) != 1:
        depth = "too small" if not a.shape else "too deep"
        raise shape_error("searchsorted", f"object of {depth} depth for desired array", a)
    if sorter:
        _check_sorter(a, sorter[0])
    numpy_dtype("searchsorted", np.searchsorted, a, v, side=side)
    return (ArraySpec(v.shape, _INDEX),)


def _check_sorter(a: ArraySpec, sorter: ArraySpec) -> None:
    if sorter.dtype.kind not in "iu":
        raise DTypeError("searchsorted: sorter must only contain integers")
    if len(sorter.shape) != 1:
        raise shape_error("searchsorted", "object too deep for desired array", sorter)
    if sorter.shape[0] != a.shape[0]:
        raise shape_error("searchsorted", "sorter.size must equal a.size", a, sorter)


def _searchsorted_impl(xp, a, v, *sorter, out, side):
    out[...] = call(xp, "searchsorted", a, v, side=side,
                    sorter=sorter[0] if sorter else None)


def kth_tuple(kth) -> tuple:
    """``kth`` (an int or a sequence of ints) as a tuple of ints."""
    items = kth if isinstance(kth, (tuple, list, range)) else (
        kth.tolist() if isinstance(kth, np.ndarray) else (kth,))
    items = items if isinstance(items, (tuple, list, range)) else (items,)
    try:
        return tuple(operator.index(k) for k in items)
    except TypeError:
        raise DTypeError(f"Partition index must be integer, got {kth!r}") from None


def _register_all() -> None:
    for name in ("sort", "argsort"):
        register(name, _sort_infer(name), _sort_impl(name))
    for name in ("partition", "argpartition"):
        register(name, _partition_infer(name), _partition_impl(name))
    register("searchsorted", _searchsorted_infer, _searchsorted_impl)


_register_all()
