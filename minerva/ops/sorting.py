"""Sorting and searching ops (``sort``, ``argsort``, ``partition``, ``argpartition``,
``searchsorted``, ``isin``) and element-wise ones (``isclose``, ``round``, ``angle``, real
and imaginary parts, ``nan_to_num``), by NumPy's rules.

``axis`` is an int, or None to work on the flattened array. ``kind`` and ``stable`` go to
NumPy as given (the sorted values are the same whatever the algorithm; ``argsort`` orders
ties by position when stable); CuPy's sorts are always stable, so other array modules get
neither.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from minerva.common.errors import DTypeError
from minerva.ops import dtypes
from minerva.ops.elementwise import broadcast_shape, mixed_args
from minerva.ops.indexing import fits
from minerva.ops.registry import ArraySpec, register, shape_error
from minerva.ops.statistics import call, numpy_dtype

_INDEX = np.dtype(np.intp)


def _flat(x, axis):
    """``x`` flattened with axis 0 when ``axis`` is None, else ``x`` and ``axis``."""
    return (x.reshape(-1), 0) if axis is None else (x, axis)


def _sort_options(xp, kind, stable) -> dict:
    if xp is not np:
        return {}
    options = {} if kind is None else {"kind": kind}
    if stable is not None:
        options["stable"] = stable
    return options


def _out_shape(x: ArraySpec, axis) -> tuple:
    return (int(np.prod(x.shape)),) if axis is None else x.shape


def _sort_infer(name):
    function = getattr(np, name)

    def infer(x, *, axis, kind, stable):
        dtypes.check_supported(name, x)
        numpy_dtype(name, function, x, kind=kind, stable=stable)
        return (ArraySpec(_out_shape(x, axis), _INDEX if name == "argsort" else x.dtype),)
    return infer


def _sort_impl(name):
    def impl(xp, x, *, out, axis, kind, stable):
        x, axis = _flat(x, axis)
        out[...] = getattr(xp, name)(x, axis=axis, **_sort_options(xp, kind, stable))
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


def _isin_infer(element, test, *, assume_unique, invert, kind):
    dtypes.check_supported("isin", element)
    dtypes.check_supported("isin", test)
    if kind is not None:
        numpy_dtype("isin", np.isin, element, test, kind=kind)
    return (ArraySpec(element.shape, np.dtype(np.bool_)),)


def _isin_impl(xp, element, test, *, out, assume_unique, invert, kind):
    extra = {} if kind is None else {"kind": kind}
    out[...] = call(xp, "isin", element, test, assume_unique=assume_unique, invert=invert,
                    **extra)


# ---- element-wise -------------------------------------------------------------------------------

def _unary_infer(name, function, dtype_attrs=()):
    def infer(x, **attrs):
        dtypes.check_supported(name, x)
        probe = {key: attrs[key] for key in dtype_attrs}
        return (ArraySpec(x.shape, numpy_dtype(name, function, x, **probe)),)
    return infer


def _round_impl(xp, x, *, out, decimals):
    out[...] = call(xp, "round", x, decimals)


def _angle_impl(xp, x, *, out, deg):
    out[...] = call(xp, "angle", x, deg=deg)


def _part_impl(xp, x, *, out, part):
    out[...] = getattr(x, part)


def _real_part(x, part):
    return getattr(x, part)


def _nan_to_num_impl(xp, x, *, out, nan, posinf, neginf):
    out[...] = call(xp, "nan_to_num", x, copy=True, nan=nan, posinf=posinf,
                    neginf=neginf)


def _isclose_infer(*specs, layout, rtol, atol, equal_nan):
    operands = mixed_args(layout, specs)
    numpy_dtype("isclose", np.isclose, *operands)
    return (ArraySpec(broadcast_shape("isclose", *specs), np.dtype(np.bool_)),)


def _isclose_impl(xp, *arrays, out, layout, rtol, atol, equal_nan):
    a, b = mixed_args(layout, arrays)
    out[...] = call(xp, "isclose", a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _set_part_infer(value, *, part, shape, dtype):
    if not fits(value.shape, shape):
        raise shape_error(f"set {part}", f"could not broadcast input array from shape "
                          f"{value.shape} into shape {shape}")
    return (ArraySpec(shape, dtype),)


def _set_part_impl(xp, value, *, out, part, shape, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's ComplexWarning: the imaginary part goes
        getattr(out, part)[...] = value


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
    register("isin", _isin_infer, _isin_impl)
    register("round", _unary_infer("round", np.round, ("decimals",)), _round_impl,
             elementwise=True)
    register("angle", _unary_infer("angle", np.angle), _angle_impl, elementwise=True)
    register("real_part", _unary_infer("real_part", _real_part, ("part",)), _part_impl,
             elementwise=True)
    register("nan_to_num", _unary_infer("nan_to_num", np.nan_to_num), _nan_to_num_impl,
             elementwise=True)
    register("isclose", _isclose_infer, _isclose_impl, elementwise=True)
    register("set_part", _set_part_infer, _set_part_impl, elementwise=True)


_register_all()
