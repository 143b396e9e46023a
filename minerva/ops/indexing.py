"""Advanced indexing: gathering (``x[idx]``) and scattering (``x[idx] = v``) with integer
index arrays mixed with ints, slices, None and Ellipsis, by NumPy's rules.

An index is a ``layout``: a tuple of ints, slices, None, Ellipsis and ``ARRAY`` where the
next index array (an op input) goes. Boolean masks arrive as the integer arrays of their
``nonzero()``, which index the same elements in the same order.
"""
from __future__ import annotations

import numpy as np

from minerva.common.errors import ShapeIndexError
from minerva.ops.elementwise import ARRAY, mixed_args
from minerva.ops.registry import ArraySpec, register


def advanced_shape(shape: tuple, items: tuple) -> tuple:
    """The shape of ``a[items]`` for ``a`` of ``shape``: ``items`` hold ints, slices, None,
    Ellipsis and ArraySpecs (integer index arrays)."""
    items = _expand(items, len(shape))
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


def _expand(items: tuple, ndim: int) -> tuple:
    n_real = sum(1 for it in items if it is not None and it is not Ellipsis)
    if n_real > ndim:
        raise ShapeIndexError(f"too many indices for array: array is {ndim}-dimensional, "
                              f"but {n_real} were indexed")
    if sum(1 for it in items if it is Ellipsis) > 1:
        raise ShapeIndexError("an index can only have a single ellipsis ('...')")
    fill = (slice(None),) * (ndim - n_real)
    if Ellipsis in items:
        at = next(i for i, it in enumerate(items) if it is Ellipsis)
        return items[:at] + fill + items[at + 1:]
    return items + fill


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


def _axis_of(layout: tuple, slot: int, ndim: int) -> int:
    n_real = sum(1 for it in layout if it is not None and it is not Ellipsis)
    axis, seen = 0, 0
    for item in layout:
        if item is Ellipsis:
            axis += ndim - n_real
        elif item is ARRAY:
            if seen == slot:
                return axis
            seen += 1
            axis += 1
        elif item is not None:
            axis += 1
    raise IndexError("internal: index slot not found")


def _take_infer(x, *indices, layout):
    return (ArraySpec(advanced_shape(x.shape, tuple(mixed_args(layout, indices))), x.dtype),)


def _take_impl(xp, x, *indices, out, layout):
    out[...] = x[tuple(mixed_args(layout, indices))]


def _put_infer(*specs, layout, value, shape, dtype):
    indices = specs[1:] if value is ARRAY else specs
    target = advanced_shape(shape, tuple(mixed_args(layout, indices)))
    if value is ARRAY:
        _check_fits(specs[0].shape, target)
    return (ArraySpec(shape, dtype),)


def fits(value_shape: tuple, target: tuple) -> bool:
    """Whether a value of ``value_shape`` can be assigned to elements of shape ``target``
    (NumPy broadcasts it, dropping extra leading size-1 axes)."""
    while len(value_shape) > len(target) and value_shape[0] == 1:
        value_shape = value_shape[1:]
    try:
        return np.broadcast_shapes(value_shape, target) == target
    except ValueError:
        return False


def _check_fits(value_shape: tuple, target: tuple) -> None:
    if not fits(value_shape, target):
        raise ShapeIndexError(f"shape mismatch: value array of shape {value_shape} could "
                              f"not be broadcast to indexing result of shape {target}")


def _put_impl(xp, *arrays, out, layout, value, shape, dtype):
    if value is ARRAY:
        value, arrays = arrays[0], arrays[1:]
    out[tuple(mixed_args(layout, arrays))] = value


def _scatter_add_infer(*specs, layout, shape, dtype):
    _check_fits(specs[0].shape, advanced_shape(shape, tuple(mixed_args(layout, specs[1:]))))
    return (ArraySpec(shape, dtype),)


def _scatter_add_impl(xp, values, *indices, out, layout, shape, dtype):
    xp.add.at(out, tuple(mixed_args(layout, indices)), values)


TAKE = register("take_index", _take_infer, _take_impl)
SCATTER_ADD = register("scatter_add", _scatter_add_infer, _scatter_add_impl)
"""``add.at(x, index, values)`` into ``out=x``: unbuffered, every repeated index adds."""
PUT = register("put_index", _put_infer, _put_impl)
