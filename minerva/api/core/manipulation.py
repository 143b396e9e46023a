"""The basics of NumPy's array manipulation every chapter builds on: shapes and views
(``reshape``, ``ravel``, ``transpose``, ``permute_dims``, ``swapaxes``, ``moveaxis``,
``expand_dims``, ``squeeze``, ``broadcast_to``, ``broadcast_arrays``, ``flip``), joins
(``concatenate``, ``concat``, ``stack``), a diagonal as a view, and arrays in a memory
order.

Shape functions return views where NumPy does (``reshape`` when no copy is needed,
``transpose``, ``swapaxes``, ``moveaxis``, ``squeeze``, ``expand_dims``, ``broadcast_to``,
``ravel`` of a contiguous array, ``flip``), so writes through them reach the base array.
The rest of NumPy's manipulation functions are the chapter ``minerva.api.manipulation``.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from minerva.api.core.arguments import as_int, axis_index, axis_tuple
from minerva.builder import SEAM, build, note_view, to_narray
from minerva.common.errors import DTypeError, ShapeError
from minerva.narray import BaseLink, NArray
from minerva.ops import registry, views
from minerva.ops.dtypes import supported_dtype
from minerva.ops.manipulation import resolve_shape
from minerva.ops.registry import ArraySpec
from minerva.ops.reductions import normalize_axis

_OPS = registry.get
_REVERSED = slice(None, None, -1)
_ALL = slice(None)


# ---- views ----------------------------------------------------------------------------

def view_of(x: NArray, view: tuple, view_def=None, attrs=None,
            readonly: bool = False, dtype=None) -> NArray:
    """A handle on ``x``'s storage seeing ``view`` (shape, strides, offset in bytes), told
    to the op-building seam as ``view_def`` with ``attrs`` (by default the generic strided
    view, whose gradient maps elements back through the two views). A view of a read-only
    view is read-only too. Its elements are of ``x``'s dtype, or ``dtype`` (a view reading
    the buffer as another dtype: ``x.view(dtype)``). Its ``base`` is the array owning the
    data, as NumPy's."""
    storage = x._storage
    dtype = x.dtype if dtype is None else dtype
    spec = ArraySpec(view[0], dtype)
    buffer_spec = storage.current.spec
    if dtype == buffer_spec.dtype:
        seen = views.normalized(buffer_spec, (view[0], tuple(view[1]), view[2]))
    else:
        seen = views.typed(view, dtype)
    result = _handle_on(x, seen, spec, readonly)
    if SEAM.hooks:
        if view_def is None:
            view_def, attrs = views.STRIDED, {"x_view": explicit_view(x), "view": view}
        note_view(view_def, attrs, x, result)
    return result

def explicit_view(x: NArray) -> tuple:
    """``x``'s view as ``(shape, strides, offset)`` (the whole buffer when it has none)."""
    return views.of(x._spec, x._view)


def reshape(a, shape, order="C", *, copy=None) -> NArray:
    """``a`` in a new ``shape`` (an int or tuple; one entry may be -1): a view when NumPy
    makes one without copying, else a copy (``copy=True`` always copies). ``order`` is
    NumPy's: ``'F'`` reads and places the elements with the first index fastest (the C
    reshape of the transposes), ``'A'`` is F for an F- and not C-contiguous array."""
    if type(a) is NArray and a._view is None and order == "C" and copy is None \
            and not SEAM.hooks:
        return _whole_reshape(a, shape)
    x = to_narray(a, "reshape")
    shape = (shape,) if not isinstance(shape, (tuple, list)) else tuple(shape)
    if _index_order("reshape", x, order) == "F":
        return transpose(reshape(transpose(x), shape[::-1], copy=copy))
    shape = resolve_shape("reshape", x._spec, shape)
    view = None if copy else views.reshape(explicit_view(x), x.dtype, shape)
    if view is not None:
        return view_of(x, view, views.RESHAPE, {"shape": shape})
    if copy is False:
        raise ValueError("reshape: cannot reshape this array without copying (copy=False)")
    return build(_OPS("reshape"), [x], {"shape": shape})

_WHOLE_RESHAPES: dict = {}
"""(a whole value's shape and dtype, the shape asked) -> (the reshaped view's spec, its
view, None for the whole buffer): the reshapes of whole values met (bounded: cleared when
full)."""
_MAX_WHOLE_RESHAPES = 1024


def _whole_reshape(x: NArray, shape) -> NArray:
    """``reshape(x, shape)`` of a whole value (no view: C-ordered, so always a view) while
    nothing records at the seam: ``view_of``'s handle, its spec and view memoised."""
    key = x._spec.shape, x._spec.dtype, shape
    try:
        spec, seen = _WHOLE_RESHAPES[key]
    except (KeyError, TypeError):   # TypeError: a shape that is no key (a list)
        asked = (shape,) if not isinstance(shape, (tuple, list)) else tuple(shape)
        new = resolve_shape("reshape", x._spec, asked)
        view = views.reshape(explicit_view(x), x.dtype, new)
        spec = ArraySpec(new, x.dtype)
        seen = views.normalized(x._spec, (view[0], tuple(view[1]), view[2]))
        if type(shape) is int or (type(shape) is tuple and all(type(n) is int
                                                               for n in shape)):
            if len(_WHOLE_RESHAPES) >= _MAX_WHOLE_RESHAPES:
                _WHOLE_RESHAPES.clear()
            _WHOLE_RESHAPES[key] = spec, seen
    return _handle_on(x, seen, spec)


def _handle_on(x: NArray, seen, spec, readonly: bool = False) -> NArray:
    """A view's handle on ``x``'s storage: ``seen`` (None: the whole buffer) of ``spec``,
    read-only when ``x`` is or ``readonly``, based on the array owning the data."""
    result = NArray(x._storage, seen, spec)
    result._readonly = readonly or x._readonly
    result._owndata = False
    result._base = BaseLink(x) if x._base is None else x._base
    return result


def whole_flat(x: NArray) -> NArray | None:
    """``x``'s flat view when ``x`` is a whole value (C-ordered, no view), else None."""
    return reshape(x, -1) if x._view is None else None


def ravel(a, order="C") -> NArray:
    """``a`` flattened, its elements read in NumPy's ``order`` (``'K'``: as they lie in
    memory): a view when they are contiguous in that order, else a copy."""
    x = to_narray(a, "ravel")
    if order != "K":
        return reshape(x, (-1,), _index_order("ravel", x, order, "CFA"))
    if x.ndim < 2 or 0 in x.shape:
        return reshape(x, (-1,))
    return reshape(transpose(x, views.memory_order(explicit_view(x))), (-1,))


def _index_order(name: str, x: NArray, order, allowed: str = "CFA") -> str:
    """``'C'`` or ``'F'``: the index order NumPy's ``order`` argument stands for."""
    if order is None:
        return "C"
    if not isinstance(order, str) or order not in allowed:
        raise ValueError(f"{name}: order must be one of {', '.join(allowed)} (got "
                         f"{order!r})")
    if order == "A":
        shape, strides, offset = explicit_view(x)
        f = views.is_contiguous((shape[::-1], strides[::-1], offset), x.itemsize)
        return "F" if f and not views.is_contiguous((shape, strides, offset), x.itemsize) \
            else "C"
    return order

def transpose(a, axes=None) -> NArray:
    """A view of ``a`` with its axes permuted by ``axes`` (reversed when None)."""
    x = to_narray(a, "transpose")
    axes = _permutation(x, axes)
    return _permuted(x, axes)

def _permuted(x: NArray, axes: tuple) -> NArray:
    return view_of(x, views.permute(explicit_view(x), axes), views.TRANSPOSE,
                   {"axes": axes})

def in_memory_order(buffer: NArray, order: tuple) -> NArray:
    """A fresh array laid out with its axes ``order`` in memory (outermost first), from
    ``buffer``, a fresh C-ordered array holding its values with the axes so permuted: the
    array NumPy makes in that memory order (``copy(order='F')`` …), owning its data."""
    inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
    result = _permuted(buffer, inverse)
    result._owndata, result._base = True, None
    return result

permute_dims = transpose

def _permutation(x: NArray, axes) -> tuple:
    ndim = x.ndim
    if axes is None:
        return tuple(range(ndim))[::-1]
    axes = tuple(axes) if isinstance(axes, (tuple, list)) else (axes,)
    normalized = [operator.index(a) % ndim if ndim and -ndim <= operator.index(a) < ndim
                  else -1 for a in axes]
    if sorted(normalized) != list(range(ndim)):
        raise ShapeError(f"transpose: axes {axes} don't match an array of {ndim} dimensions")
    return tuple(normalized)

def swapaxes(a, axis1: int, axis2: int) -> NArray:
    """A view of ``a`` with two axes exchanged."""
    x = to_narray(a, "swapaxes")
    (i,), (j,) = normalize_axis("swapaxes", axis1, x.ndim), normalize_axis(
        "swapaxes", axis2, x.ndim)
    order = list(range(x.ndim))
    order[i], order[j] = j, i
    return _permuted(x, tuple(order))

def moveaxis(a, source, destination) -> NArray:
    """A view of ``a`` with axes moved from ``source`` to ``destination``."""
    x = to_narray(a, "moveaxis")
    src = _axis_list("moveaxis", source, x.ndim)
    dst = _axis_list("moveaxis", destination, x.ndim)
    if len(src) != len(dst):
        raise ShapeError("moveaxis: source and destination need the same number of axes")
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _permuted(x, tuple(order))

def _axis_list(name, axes, ndim) -> list:
    items = axes if isinstance(axes, (tuple, list)) else (axes,)
    result = [normalize_axis(name, a, ndim)[0] for a in items]
    if len(set(result)) != len(result):
        raise ShapeError(f"{name}: repeated axis in {axes!r}")
    return result

def expand_dims(a, axis) -> NArray:
    """A view of ``a`` with new size-1 axes at ``axis`` (an int or a tuple)."""
    x = to_narray(a, "expand_dims")
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    ndim = x.ndim + len(items)
    new = normalize_axis("expand_dims", tuple(items), ndim)
    dims = iter(x.shape)
    shape = tuple(1 if i in new else next(dims) for i in range(ndim))
    return reshape(x, shape)

def squeeze(a, axis=None) -> NArray:
    """A view of ``a`` without its size-1 axes (only those in ``axis`` when given)."""
    x = to_narray(a, "squeeze")
    axes = normalize_axis("squeeze", axis, x.ndim)
    axes = tuple(i for i, n in enumerate(x.shape) if n == 1) if axes is None else axes
    if builtins.any(x.shape[i] != 1 for i in axes):
        raise ShapeError("squeeze: cannot select an axis to squeeze out which has size not "
                         f"equal to one ({x.shape})")
    return reshape(x, tuple(n for i, n in enumerate(x.shape) if i not in axes))

def broadcast_to(a, shape) -> NArray:
    """A read-only view of ``a`` broadcast to ``shape``."""
    x = to_narray(a, "broadcast_to")
    shape = tuple(operator.index(n) for n in shape) if isinstance(shape, (tuple, list)) \
        else (operator.index(shape),)   # Python ints, as a spec's shape holds (np.int64 too)
    try:
        if np.broadcast_shapes(x.shape, shape) != shape:
            raise ValueError
    except ValueError:
        raise ShapeError(f"broadcast_to: cannot broadcast an array of shape {x.shape} to "
                         f"{shape}") from None
    return view_of(x, views.broadcast(explicit_view(x), shape), views.BROADCAST,
                   {"shape": shape}, readonly=True)

def broadcast_arrays(*args) -> tuple:
    """Read-only views of ``args`` broadcast to one shape."""
    arrays = [to_narray(a, "broadcast_arrays") for a in args]
    try:
        shape = np.broadcast_shapes(*(x.shape for x in arrays))
    except ValueError as exc:
        raise ShapeError(f"broadcast_arrays: {exc}") from None
    return tuple(broadcast_to(x, shape) for x in arrays)

def flip(m, axis=None) -> NArray:
    """A view of ``m`` with the order of elements reversed along ``axis`` (an int, a
    tuple, or None for every axis)."""
    x = to_narray(m, "flip")
    axes = range(x.ndim) if axis is None else axis_tuple("flip", axis, x.ndim)
    items = tuple(_REVERSED if d in axes else _ALL for d in range(x.ndim))
    return view_of(x, views.index(explicit_view(x), items))

def diagonal_view(x: NArray, offset: int = 0, axis1: int = 0, axis2: int = 1) -> NArray:
    """The diagonal of ``x`` in the plane of ``axis1``/``axis2``, as a view (writable:
    internal use; the public ``diagonal`` copies it). The diagonal is the last axis."""
    if x.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    a1, a2 = axis_index("diagonal", axis1, x.ndim), axis_index("diagonal", axis2, x.ndim)
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")
    offset = as_int("diagonal", offset)
    shape, strides, start = explicit_view(x)
    skip1, skip2 = max(0, -offset), max(0, offset)
    length = max(0, min(shape[a1] - skip1, shape[a2] - skip2))
    if length:
        start += skip1 * strides[a1] + skip2 * strides[a2]
    rest = [d for d in range(x.ndim) if d not in (a1, a2)]
    new_shape = tuple(shape[d] for d in rest) + (length,)
    new_strides = tuple(strides[d] for d in rest) + (strides[a1] + strides[a2],)
    return view_of(x, (new_shape, new_strides, start))

# ---- joins ------------------------------------------------------------------------------

def _join_inputs(name, arrays) -> list:
    if isinstance(arrays, NArray):
        arrays = [arrays[i] for i in range(len(arrays))]
    arrays = [to_narray(a, name) for a in arrays]
    if not arrays:
        raise ShapeError(f"{name}: need at least one array to concatenate")
    return arrays

def _cast_all(name: str, arrays: list, dtype, casting: str) -> list:
    """``arrays`` cast to ``dtype`` as NumPy's joins cast them (by ``casting``; NumPy's
    TypeError where it forbids the cast, for floats into datetimes ...)."""
    dtype = supported_dtype(dtype)
    for a in arrays:
        if not np.can_cast(a.dtype, dtype, casting):
            raise DTypeError(f"Cannot cast array data from {a.dtype!r} to {dtype!r} "
                             f"according to the rule {casting!r}")
    return [to_narray(a, name, dtype) for a in arrays]

def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind") -> NArray:
    """``arrays`` joined along an existing ``axis`` (flattened first when None), cast to
    ``dtype`` when given by the rule ``casting``."""
    arrays = _join_inputs("concatenate", arrays)
    if dtype is not None:
        arrays = _cast_all("concatenate", arrays, dtype, casting)
    if axis is not None:
        if builtins.any(a.ndim == 0 for a in arrays):
            raise ShapeError("concatenate: zero-dimensional arrays cannot be concatenated")
        (axis,) = normalize_axis("concatenate", axis, arrays[0].ndim)
    return build(_OPS("concatenate"), arrays, {"axis": axis}, out)

concat = concatenate

def stack(arrays, axis=0, out=None, dtype=None, casting="same_kind") -> NArray:
    """``arrays`` (one shape) joined along a new ``axis``, cast to ``dtype`` when given by
    the rule ``casting``."""
    arrays = _join_inputs("stack", arrays)
    if dtype is not None:
        arrays = _cast_all("stack", arrays, dtype, casting)
    (axis,) = normalize_axis("stack", axis, arrays[0].ndim + 1)
    return build(_OPS("stack"), arrays, {"axis": axis}, out)


__all__ = ["broadcast_arrays", "broadcast_to", "concat", "concatenate", "expand_dims", "flip",
           "moveaxis", "permute_dims", "ravel", "reshape", "squeeze", "stack", "swapaxes",
           "transpose"]
