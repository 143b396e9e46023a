"""Reductions, products, shape functions and selections under NumPy's names.

Shape functions return views where NumPy does (``reshape`` when no copy is needed,
``transpose``, ``swapaxes``, ``moveaxis``, ``squeeze``, ``expand_dims``, ``broadcast_to``,
``ravel`` of a contiguous array), so writes through them reach the base array.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from minerva.builder import SEAM, build, note_view, to_narray, upload
from minerva.common.errors import ShapeError
from minerva.narray import NArray
from minerva.ops import registry, views
from minerva.ops.elementwise import ARRAY
from minerva.ops.dtypes import is_scalar, supported_dtype
from minerva.ops.reductions import normalize_axis
from minerva.ops.registry import ArraySpec
from minerva.ops.manipulation import resolve_shape

_OPS = registry.get


# ---- views ----------------------------------------------------------------------------

def view_of(x: NArray, view: tuple, view_def=None, attrs=None,
            readonly: bool = False) -> NArray:
    """A handle on ``x``'s storage seeing ``view`` (shape, strides, offset in bytes), told
    to the op-building seam as ``view_def`` with ``attrs`` (by default the generic strided
    view, whose gradient maps elements back through the two views). A view of a read-only
    view is read-only too."""
    storage = x._storage
    spec = ArraySpec(view[0], x.dtype)
    result = NArray(storage, views.normalized(storage.current.spec, view), spec)
    result._readonly = readonly or x._readonly
    result._owndata = False
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
    makes one without copying, else a copy (``copy=True`` always copies)."""
    x = to_narray(a, "reshape")
    if order != "C":
        raise ValueError(f"reshape: only order='C' is supported, got {order!r}")
    shape = (shape,) if not isinstance(shape, (tuple, list)) else tuple(shape)
    shape = resolve_shape("reshape", x._spec, shape)
    view = None if copy else views.reshape(explicit_view(x), x.dtype, shape)
    if view is not None:
        return view_of(x, view, views.RESHAPE, {"shape": shape})
    if copy is False:
        raise ValueError("reshape: cannot reshape this array without copying (copy=False)")
    return build(_OPS("reshape"), [x], {"shape": shape})


def ravel(a, order="C") -> NArray:
    """``a`` flattened: a view when its elements are contiguous, else a copy."""
    return reshape(a, (-1,), order)


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
    result._owndata = True
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
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
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


# ---- joins ------------------------------------------------------------------------------

def _join_inputs(name, arrays) -> list:
    if isinstance(arrays, NArray):
        arrays = [arrays[i] for i in range(len(arrays))]
    arrays = [to_narray(a, name) for a in arrays]
    if not arrays:
        raise ShapeError(f"{name}: need at least one array to concatenate")
    return arrays


def concatenate(arrays, axis=0, out=None, dtype=None) -> NArray:
    """``arrays`` joined along an existing ``axis`` (flattened first when None)."""
    arrays = _join_inputs("concatenate", arrays)
    if dtype is not None:
        arrays = [to_narray(a, "concatenate", dtype) for a in arrays]
    if axis is not None:
        if builtins.any(a.ndim == 0 for a in arrays):
            raise ShapeError("concatenate: zero-dimensional arrays cannot be concatenated")
        (axis,) = normalize_axis("concatenate", axis, arrays[0].ndim)
    return build(_OPS("concatenate"), arrays, {"axis": axis}, out)


concat = concatenate


def stack(arrays, axis=0, out=None, dtype=None) -> NArray:
    """``arrays`` (one shape) joined along a new ``axis``."""
    arrays = _join_inputs("stack", arrays)
    if dtype is not None:
        arrays = [to_narray(a, "stack", dtype) for a in arrays]
    (axis,) = normalize_axis("stack", axis, arrays[0].ndim + 1)
    return build(_OPS("stack"), arrays, {"axis": axis}, out)


# ---- selection ----------------------------------------------------------------------------

def _mixed(name, operands, out=None):
    layout, arrays = [], []
    for value in operands:
        if value is None or (is_scalar(value) and not isinstance(value, NArray)):
            layout.append(value[()] if isinstance(value, np.ndarray) else value)
        else:
            layout.append(ARRAY)
            arrays.append(to_narray(value, name))
    return build(_OPS(name), arrays, {"layout": tuple(layout)}, out)


def clip(a, a_min=None, a_max=None, out=None, **kwargs) -> NArray:
    """``a`` limited to ``[a_min, a_max]`` (scalars, arrays, or None for no bound)."""
    a_min = kwargs.pop("min", a_min)
    a_max = kwargs.pop("max", a_max)
    if kwargs:
        raise TypeError(f"clip: unsupported keyword argument(s) {sorted(kwargs)}")
    x = to_narray(a, "clip")
    if a_min is None and a_max is None:  # NumPy 2: a copy (into out=, when given)
        return build(_OPS("copy"), [x]) if out is None else build(
            _OPS("assign"), [x], {"dtype": out.dtype}, out)
    return _mixed("clip", (x, a_min, a_max), out)


def where(condition, x=None, y=None) -> NArray:
    """Elements of ``x`` where ``condition`` is true, else of ``y`` (arrays or scalars,
    broadcast); with ``condition`` alone, ``nonzero(condition)``."""
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    return _mixed("where", (to_narray(condition, "where"), x, y))


def nonzero(a) -> tuple:
    """Indices of the non-zero elements, one array per axis. The result's shape depends on
    the values: this waits for ``a``."""
    values = to_narray(a, "nonzero").to_numpy()
    if values.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                         "np.atleast_1d(scalar).nonzero() instead.")
    return tuple(upload(i) for i in np.nonzero(values))


def astype(x, dtype, /, *, copy=True) -> NArray:
    """``x`` cast to ``dtype`` (a copy; ``x`` itself when ``copy=False`` and no cast is
    needed)."""
    x = to_narray(x, "astype")
    dtype = supported_dtype(dtype)
    if not copy and dtype == x.dtype:
        return x
    return build(_OPS("astype"), [x], {"dtype": dtype})


# ---- reductions -----------------------------------------------------------------------------

def _reduction(name):
    def function(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        no_extras(name, kwargs)
        x = to_narray(a, name)
        axes = normalize_axis(name, axis, x.ndim)
        attrs = {"axis": axes, "keepdims": bool(keepdims)}
        if dtype is not None:
            dtype = supported_dtype(dtype)
            if name in _DTYPE_REDUCTIONS:
                attrs["dtype"] = dtype
        return build(_OPS(name), [x], attrs, out)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"``numpy.{name}`` over ``axis`` (None, an int or a tuple), keeping "
                        "reduced axes as size 1 when ``keepdims``; ``out=`` writes the result "
                        "into an array.")
    return function


_DTYPE_REDUCTIONS = ("sum", "prod", "mean")


def no_extras(name: str, kwargs: dict, none_defaults=("initial",)) -> None:
    """Drop NumPy's keywords that ask for nothing (``where=True``; ``None`` for the names
    in ``none_defaults``); TypeError naming any other keyword left in ``kwargs``."""
    for key in none_defaults:
        if kwargs.get(key, None) is None:
            kwargs.pop(key, None)
    if kwargs.get("where", True) is True:
        kwargs.pop("where", None)
    if kwargs:
        raise TypeError(f"{name}: unsupported keyword argument(s) {sorted(kwargs)}")


sum, prod, max, min, mean, any, all = map(
    _reduction, ("sum", "prod", "max", "min", "mean", "any", "all"))
amax, amin = max, min


def _arg_reduction(name):
    def function(a, axis=None, out=None, *, keepdims=False):
        x = to_narray(a, name)
        if axis is not None:
            if isinstance(axis, (tuple, list)):
                raise TypeError(f"{name}: axis must be None or an int, got {axis!r}")
            (axis,) = normalize_axis(name, axis, x.ndim)
        return build(_OPS(name), [x], {"axis": axis, "keepdims": bool(keepdims)}, out)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Indices of the {name[3:]}imum along ``axis`` (flattened when None)."
    return function


argmax, argmin = _arg_reduction("argmax"), _arg_reduction("argmin")


# ---- products ---------------------------------------------------------------------------------

def matmul(x1, x2, /, out=None, *, transpose_a: bool = False,
           transpose_b: bool = False) -> NArray:
    """Matrix product (1-D, 2-D and batched operands, as NumPy's ``matmul``).

    ``transpose_a``/``transpose_b`` swap the last two axes of that operand inside the
    kernel: ``matmul(x, dy, transpose_a=True)`` equals ``x.T @ dy``.
    """
    a, b = to_narray(x1, "matmul"), to_narray(x2, "matmul")
    for name, flag, x in (("transpose_a", transpose_a, a), ("transpose_b", transpose_b, b)):
        if flag and x.ndim < 2:
            raise ShapeError(f"matmul: {name} needs at least 2 dimensions, got shape "
                             f"{x.shape}")
    if transpose_a:
        a = swapaxes(a, -1, -2)
    if transpose_b:
        b = swapaxes(b, -1, -2)
    return build(_OPS("matmul"), [a, b], out=out)


def dot(a, b, out=None) -> NArray:
    """``numpy.dot``: the matrix product for 1-D and 2-D operands, a product with a scalar
    for 0-d ones, and a sum over the last axis of ``a`` and the second-to-last of ``b``
    otherwise."""
    a, b = to_narray(a, "dot"), to_narray(b, "dot")
    if a.ndim == 0 or b.ndim == 0:
        return build(_OPS("multiply"), [a, b], out=out)
    if b.ndim <= 2:
        return build(_OPS("matmul"), [a, b], out=out)
    return build(_OPS("tensordot"), [a, b], {"axes": ((a.ndim - 1,), (b.ndim - 2,))}, out)

