"""Ops of NumPy's indexing routines. Advanced indexing: gathering (``x[idx]``) and
scattering (``x[idx] = v``) with integer index arrays mixed with ints, slices, None and
Ellipsis, by NumPy's rules; taking and putting along an axis (``take_along_axis``,
``put_along_axis``), flat ``put``, ``indices``, and a basic index as a copy (``getitem``).

An index is a ``layout``: a tuple of ints, slices, None, Ellipsis and ``ARRAY`` where the
next index array (an op input) goes. Boolean masks arrive as the integer arrays of their
``nonzero()``, which index the same elements in the same order; a 0-d boolean stays a
Python bool (``scalar_masks``).
"""
from __future__ import annotations

import math

import numpy as np

from minerva.common.errors import ShapeIndexError
from minerva.ops.elementwise import ARRAY, fits, mixed_args, ufunc_function
from minerva.ops.registry import ArraySpec, register, shape_error
from minerva.ops import scalar_masks


def advanced_shape(shape: tuple, items: tuple) -> tuple:
    """The shape of ``a[items]`` for ``a`` of ``shape``: ``items`` hold ints, slices, None,
    Ellipsis, 0-d booleans (``scalar_masks``) and ArraySpecs (integer index arrays)."""
    items = _expand(items, len(shape))
    axes, items = scalar_masks.resolve(items, len(shape), lambda n: ArraySpec((n,), np.intp))
    shape = scalar_masks.with_axes(shape, axes)
    arrays = [it.shape for it in items if isinstance(it, ArraySpec)]
    try:
        broadcast = tuple(np.broadcast_shapes(*arrays)) if arrays else ()
    except ValueError:
        shown = " ".join(str(s) for s in arrays)
        raise ShapeIndexError(f"shape mismatch: indexing arrays could not be broadcast "
                              f"together with shapes {shown}") from None
    positions = [i for i, it in enumerate(items) if _is_advanced(it)]
    pieces, dim = [], 0
    for item in items:
        if item is None:
            pieces.append((1,))
            continue
        if isinstance(item, slice):
            pieces.append((len(range(*item.indices(shape[dim]))),))
        elif not isinstance(item, ArraySpec):
            _check_int(item, shape[dim], dim)
        dim += 1
        if _is_advanced(item):
            pieces.append(None)
    together = positions == list(range(positions[0], positions[-1] + 1))
    result = [] if together else list(broadcast)
    for piece in pieces:
        if piece is None:
            if together:
                result.extend(broadcast)
                together = False
        else:
            result.extend(piece)
    return tuple(result)


def _is_advanced(item) -> bool:
    return isinstance(item, ArraySpec) or (item is not None and item is not Ellipsis
                                           and not isinstance(item, slice))


def _expand(items: tuple, ndim: int, values: tuple | None = None) -> tuple:
    """``values`` (``items`` when None; an index with ``items``'s layout) with its
    Ellipsis, or what it leaves out at the end, as full slices for an array of ``ndim``."""
    values = items if values is None else values
    n_real = sum(1 for it in items if scalar_masks.consumes_axis(it))
    if n_real > ndim:
        raise ShapeIndexError(f"too many indices for array: array is {ndim}-dimensional, "
                              f"but {n_real} were indexed")
    ellipses = [i for i, it in enumerate(items) if it is Ellipsis]
    if len(ellipses) > 1:
        raise ShapeIndexError("an index can only have a single ellipsis ('...')")
    fill = (slice(None),) * (ndim - n_real)
    if ellipses:
        return values[:ellipses[0]] + fill + values[ellipses[0] + 1:]
    return values + fill


def _check_int(i: int, n: int, axis: int) -> None:
    if not -n <= i < n:
        raise ShapeIndexError(f"index {i} is out of bounds for axis {axis} with size {n}")


def check_index_array(values: np.ndarray, shape: tuple, layout: tuple, slot: int) -> None:
    """IndexError now for host index ``values`` (the ``slot``-th array of ``layout``) out
    of bounds of the axis they index."""
    axis = _axis_of(layout, slot, len(shape))
    n = shape[axis]
    if values.size and (values.min() < -n or values.max() >= n):
        bad = values[(values < -n) | (values >= n)].flat[0]
        raise ShapeIndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")


SMALL_INDEX = 16
"""Host index arrays of at most this many values are bounds-checked as Python ints."""


def small_within(values: np.ndarray, n: int) -> bool:
    """Whether a host index array of at most ``SMALL_INDEX`` values, read as Python ints,
    is within ``-n .. n-1`` (an empty one is)."""
    listed = values.ravel().tolist()
    return not listed or (-n <= min(listed) and max(listed) < n)


def range_values(item: range) -> np.ndarray:
    """The values of a ``range`` index as NumPy reads them (``intp``)."""
    return np.arange(item.start, item.stop, item.step, dtype=np.intp)


def range_within(item: range, n: int) -> bool:
    """Whether every value of a non-empty ``range`` is within ``-n .. n-1`` (its ends
    decide)."""
    ends = (item[0], item[-1])
    return -n <= min(ends) and max(ends) < n


def _axis_of(layout: tuple, slot: int, ndim: int) -> int:
    n_real = sum(1 for it in layout if scalar_masks.consumes_axis(it))
    axis, seen = 0, 0
    for item in layout:
        if item is Ellipsis:
            axis += ndim - n_real
        elif item is ARRAY:
            if seen == slot:
                return axis
            seen += 1
            axis += 1
        elif scalar_masks.consumes_axis(item):
            axis += 1
    raise IndexError("internal: index slot not found")


def _take_infer(x, *indices, layout):
    return (ArraySpec(advanced_shape(x.shape, tuple(mixed_args(layout, indices))), x.dtype),)


def native_index(xp, x, layout: tuple, indices):
    """``(array, index)`` for ``xp`` to index: ``x[layout with indices]`` is
    ``array[index]`` (0-d booleans become integer arrays over new axes of ``x``)."""
    index = tuple(mixed_args(layout, indices))
    if not any(scalar_masks.is_scalar_mask(item) for item in index):
        return x, index
    return scalar_masks.native(xp, x, _expand(layout, x.ndim, index))


def _take_impl(xp, x, *indices, out, layout):
    x, index = native_index(xp, x, layout, indices)
    out[...] = x[index]


def take_by_mask(xp, x, *, out, mask):
    """``x[mask]`` into ``out``, boolean ``mask`` (of ``x``'s leading shape) indexing as it
    is: the kernel of ``take_index``'s twin for one mask (``minerva.api.core.masks``)."""
    out[...] = x[mask]


def put_by_mask(xp, values, *, out, mask):
    """``out[mask] = values``: ``put_index``'s twin for one boolean mask."""
    out[mask] = values


def fill_by_mask(xp, mask, *, out, value):
    """``out[mask] = value``, a scalar, through a boolean ``mask`` array operand."""
    out[mask] = value


def take_by_indices(xp, x, *indices, out, host):
    """``x[i0, i1, ...]`` into ``out``, by integer index arrays on ``x``'s leading axes:
    ``indices`` the arrays of the NArray ones, ``host`` ``(position, array)`` of the
    others (``take_index``'s twin of ``minerva.api.core.picks``)."""
    out[...] = x[_with_host(indices, host)]


def put_by_indices(xp, *arrays, out, host, value):
    """``out[i0, i1, ...] = value`` (``value`` ARRAY: the first of ``arrays``), by index
    arrays as ``take_by_indices`` takes them."""
    if value is ARRAY:
        value, arrays = arrays[0], arrays[1:]
    out[_with_host(arrays, host)] = value


def add_by_indices(xp, *arrays, out, host, value):
    """``xp.add.at(out, (i0, i1, ...), value)`` (unbuffered: a repeated index adds each
    time), by index arrays as ``take_by_indices`` takes them."""
    if value is ARRAY:
        value, arrays = arrays[0], arrays[1:]
    xp.add.at(out, _with_host(arrays, host), value)


def _with_host(arrays, host) -> tuple:
    index = list(arrays)
    for position, array in host:
        index.insert(position, array)
    return tuple(index)


def _put_infer(*specs, layout, value, shape, dtype):
    indices = specs[1:] if value is ARRAY else specs
    target = advanced_shape(shape, tuple(mixed_args(layout, indices)))
    if value is ARRAY:
        _check_fits(specs[0].shape, target)
    return (ArraySpec(shape, dtype),)


def _check_fits(value_shape: tuple, target: tuple) -> None:
    if not fits(value_shape, target):
        raise ShapeIndexError(f"shape mismatch: value array of shape {value_shape} could "
                              f"not be broadcast to indexing result of shape {target}")


def _put_impl(xp, *arrays, out, layout, value, shape, dtype):
    if value is ARRAY:
        value, arrays = arrays[0], arrays[1:]
    target, index = native_index(xp, out, layout, arrays)
    target[index] = value


def _scatter_add_infer(*specs, layout, shape, dtype):
    _check_fits(specs[0].shape, advanced_shape(shape, tuple(mixed_args(layout, specs[1:]))))
    return (ArraySpec(shape, dtype),)


def _scatter_add_impl(xp, values, *indices, out, layout, shape, dtype):
    xp.add.at(*native_index(xp, out, layout, indices), values)


def _ufunc_at_infer(*specs, name, **attrs):
    return _put_infer(*specs, **attrs)


def _ufunc_at_impl(xp, *arrays, out, name, layout, value, shape, dtype):
    """``numpy.<name>.at(out, index, value)`` (``value`` None for a one-operand ufunc)."""
    if value is ARRAY:
        value, arrays = arrays[0], arrays[1:]
    out, index = native_index(xp, out, layout, arrays)
    operands = () if value is None else (value,)
    if xp is np and hasattr(np, name):
        getattr(np, name).at(out, index, *operands)
        return
    portable_at(xp, ufunc_function(xp, name), out, index, *operands)


def portable_at(xp, function, out, index, *value) -> None:
    """``ufunc.at`` over array module ``xp``: the elements ``index`` picks are updated in
    rounds, the k-th occurrence of each element in round k (so a repeated index applies
    ``function`` once per occurrence, in index order, as NumPy's unbuffered ``at``)."""
    positions = xp.arange(out.size).reshape(out.shape)[index]
    values = [xp.broadcast_to(xp.asarray(v), positions.shape).reshape(-1) for v in value]
    positions = positions.reshape(-1)
    if positions.size == 0:
        return
    order = xp.argsort(positions, kind="stable")
    ordered = positions[order]
    rank = xp.empty_like(order)
    rank[order] = xp.arange(positions.size) - xp.searchsorted(ordered, ordered, side="left")
    for round_ in range(int(rank.max()) + 1):
        picked = rank == round_
        where = xp.unravel_index(positions[picked], out.shape)
        out[where] = function(out[where], *(v[picked] for v in values))


# ---- along an axis, flat positions ----------------------------------------------------

def along_shape(name: str, shape: tuple, indices: ArraySpec, axis) -> tuple:
    """Shape of ``take_along_axis`` of an array of ``shape`` (flattened when ``axis`` is
    None) by ``indices``: each other axis broadcast with the indices' axis."""
    if indices.dtype.kind not in "iu":
        raise ShapeIndexError(f"{name}: `indices` must be an integer array")
    if axis is None:
        if len(indices.shape) != 1:
            raise shape_error(name, "when axis=None, `indices` must have a single "
                              "dimension.", indices)
        return indices.shape
    if len(indices.shape) != len(shape):
        raise shape_error(name, "`indices` and `arr` must have the same number of "
                          "dimensions", indices)
    result = []
    for d, (n, m) in enumerate(zip(shape, indices.shape)):
        if d != axis and n != m and 1 not in (n, m):
            raise ShapeIndexError(f"{name}: shape mismatch: indexing arrays could not be "
                                  f"broadcast together with shapes {shape} {indices.shape}")
        result.append(m if d == axis or n == 1 else n)
    return tuple(result)

def along_index(xp, shape: tuple, indices, axis) -> tuple:
    """The fancy index that picks ``indices`` along ``axis`` of an array of ``shape``
    (NumPy's ``_make_along_axis_idx``)."""
    index = []
    for d, n in enumerate(shape):
        if d == axis:
            index.append(indices)
        else:
            fancy = [1] * len(shape)
            fancy[d] = n
            index.append(xp.arange(n).reshape(fancy))
    return tuple(index)

def flat_index(xp, shape: tuple, indices):
    """Flat ``indices`` (negative ones count from the end) as a multi-index of ``shape``."""
    indices = xp.where(indices < 0, indices + math.prod(shape), indices)
    return xp.unravel_index(indices, shape)

def _take_along_infer(x, indices, *, axis):
    shape = along_shape("take_along_axis", x.shape, indices, axis)
    return (ArraySpec(shape, x.dtype),)

def _take_along_impl(xp, x, indices, *, out, axis):
    if axis is None:
        out[...] = x.reshape(-1)[indices]
        return
    out[...] = x[along_index(xp, x.shape, indices, axis)]

def _put_along_infer(indices, values, *, axis, shape, dtype):
    target = along_shape("put_along_axis", shape, indices, axis)
    try:
        np.broadcast_shapes(values.shape, target)
    except ValueError:
        raise shape_error("put_along_axis", f"shape mismatch: value array of shape "
                          f"{values.shape} could not be broadcast to indexing result of "
                          f"shape {target}") from None
    return (ArraySpec(shape, dtype),)

def _put_along_impl(xp, indices, values, *, out, axis, shape, dtype):
    if axis is None:
        out[flat_index(xp, shape, indices)] = values
        return
    out[along_index(xp, shape, indices, axis)] = values

def _flat_put_infer(indices, values, *, mode, shape, dtype):
    return (ArraySpec(shape, dtype),)

def _flat_put_impl(xp, indices, values, *, out, mode, shape, dtype):
    indices, values = indices.reshape(-1), values.reshape(-1)
    if indices.size == 0 or values.size == 0:
        return
    size = math.prod(shape)
    if mode == "wrap":
        indices = xp.mod(indices, size)
    elif mode == "clip":
        indices = xp.clip(indices, 0, size - 1)
    if values.size < indices.size:
        values = xp.tile(values, -(-indices.size // values.size))
    out[flat_index(xp, shape, indices)] = values[:indices.size]


# ---- index grids and basic indices ----------------------------------------------------

def _indices_infer(*, dimensions, dtype):
    return (ArraySpec((len(dimensions),) + dimensions, dtype),)

def _indices_impl(xp, *, out, dimensions, dtype):
    out[...] = xp.indices(dimensions, dtype=dtype)

def _getitem_infer(x, *, index):
    probe = np.lib.stride_tricks.as_strided(np.zeros(1, x.dtype), shape=x.shape,
                                            strides=(0,) * len(x.shape))
    try:
        shape = probe[index].shape
    except IndexError as exc:
        raise ShapeIndexError(f"getitem: {exc} (array shape {x.shape})") from None
    return (ArraySpec(shape, x.dtype),)

def _getitem_impl(xp, x, *, out, index):
    out[...] = x[index]


TAKE = register("take_index", _take_infer, _take_impl)
SCATTER_ADD = register("scatter_add", _scatter_add_infer, _scatter_add_impl)
"""``add.at(x, index, values)`` into ``out=x``: unbuffered, every repeated index adds."""
UFUNC_AT = register("ufunc_at", _ufunc_at_infer, _ufunc_at_impl)
"""``<ufunc>.at(x, index[, value])`` into ``out=x``: unbuffered, for every ufunc."""
PUT = register("put_index", _put_infer, _put_impl)
register("take_along_axis", _take_along_infer, _take_along_impl)
register("put_along_axis", _put_along_infer, _put_along_impl)
register("put", _flat_put_infer, _flat_put_impl)
register("indices", _indices_infer, _indices_impl)
register("getitem", _getitem_infer, _getitem_impl)


# ---- flat positions and the indices per axis they stand for -----------------------------------

def _unravel_infer(indices, *, shape, order):
    if indices.dtype.kind not in "iu":
        raise ShapeIndexError("only int indices permitted")
    return (ArraySpec((len(shape),) + indices.shape, np.dtype(np.intp)),)


def _unravel_impl(xp, indices, *, out, shape, order):
    """``numpy.unravel_index``, the index of each axis stacked along the first axis (its
    ValueError for a position out of bounds, when the op runs)."""
    for axis, values in enumerate(xp.unravel_index(indices, shape, order=order)):
        out[axis] = values


def _ravel_multi_infer(*indices, dims, mode, order):
    if any(spec.dtype.kind not in "iu" for spec in indices):
        raise ShapeIndexError("only int indices permitted")
    if len(indices) != len(dims):
        raise shape_error("ravel_multi_index", f"parameter multi_index must be a sequence "
                          f"of length {len(dims)}")
    try:
        shape = np.broadcast_shapes(*(spec.shape for spec in indices))
    except ValueError as exc:
        raise shape_error("ravel_multi_index", str(exc)) from None
    return (ArraySpec(tuple(shape), np.dtype(np.intp)),)


def _ravel_multi_impl(xp, *indices, out, dims, mode, order):
    """``numpy.ravel_multi_index`` (its ValueError for an entry out of bounds with
    ``mode='raise'``, when the op runs)."""
    out[...] = xp.ravel_multi_index(tuple(indices), dims, mode=mode, order=order)


register("unravel_index", _unravel_infer, _unravel_impl)
register("ravel_multi_index", _ravel_multi_infer, _ravel_multi_impl)
