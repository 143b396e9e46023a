"""Views: which elements of a buffer a handle sees, as NumPy describes them.

A view is ``(shape, strides, offset)``, strides and offset in bytes, over one C-contiguous
buffer (a storage). The whole buffer in C order is no view at all (``None``), so most
handles carry nothing. These functions compute views on the user's thread, by NumPy's
rules: basic indexing, permuted axes, and reshapes that NumPy makes without a copy. They
never touch memory.

A view builds no op (it is a handle on the same storage), but autograd and jit must see it:
the definitions at the end name each kind of view, with its shape rule (their gradient
rules are in ``ops.views_grad``); their ``impl`` is never called. ``view_strided`` covers
any other view (flip, diagonal, ...).
"""
from __future__ import annotations

import operator

import numpy as np

from minerva.common.errors import ShapeIndexError
from minerva.ops.registry import ArraySpec, register

_ANCHORS: dict = {}


_C_STRIDES: dict = {}
"""(shape, itemsize) -> its C strides, for the shapes met (bounded: cleared when full)."""
_MAX_C_STRIDES = 4096


def c_strides(shape: tuple, itemsize: int) -> tuple:
    """Byte strides of a C-contiguous array of ``shape`` (all 0 without elements, as
    NumPy's new arrays have)."""
    try:
        return _C_STRIDES[shape, itemsize]
    except KeyError:
        pass
    if 0 in shape:
        strides = (0,) * len(shape)
    else:
        steps, step = [], itemsize
        for n in reversed(shape):
            steps.append(step)
            step *= max(n, 1)
        strides = tuple(reversed(steps))
    if len(_C_STRIDES) >= _MAX_C_STRIDES:
        _C_STRIDES.clear()
    _C_STRIDES[shape, itemsize] = strides
    return strides


def of(spec, view) -> tuple:
    """``view`` made explicit: the whole buffer of ``spec`` when None."""
    if view is None:
        return spec.shape, c_strides(spec.shape, spec.dtype.itemsize), 0
    return view


def normalized(spec, view):
    """``view``, or None when it is the whole buffer of ``spec`` in C order."""
    shape, strides, offset = view
    if offset == 0 and shape == spec.shape and strides == c_strides(shape,
                                                                     spec.dtype.itemsize):
        return None
    return view


_BASIC_KINDS = frozenset({int, slice, type(None), type(Ellipsis)})


def is_basic(index) -> bool:
    """Whether ``index`` (a tuple) holds only ints, slices, None and Ellipsis. Read by
    type (an NArray's ``isinstance`` would ask its ``__class__`` property)."""
    for item in index:
        kind = type(item)
        if kind not in _BASIC_KINDS and (not issubclass(kind, (int, np.integer)) or
                                         issubclass(kind, (bool, np.bool_))):
            return False
    return True


def index(view: tuple, items: tuple) -> tuple:
    """The view that ``a[items]`` (a basic index) gives of an array seen through ``view``."""
    shape, strides, offset = view
    items = _expand_ellipsis(items, len(shape))
    new_shape, new_strides, dim = [], [], 0
    for item in items:
        if item is None:
            new_shape.append(1)
            new_strides.append(0)
            continue
        n, stride = shape[dim], strides[dim]
        if isinstance(item, slice):
            start, stop, step = item.indices(n)
            length = len(range(start, stop, step))
            if length:
                offset += start * stride
            new_shape.append(length)
            new_strides.append(stride * step)
        else:
            offset += _bounded(operator.index(item), n, dim) * stride
        dim += 1
    return tuple(new_shape), tuple(new_strides), offset


def basic_index(view: tuple, items: tuple):
    """``(index(view, items), is_scalar_index(items, ndim))`` in one pass for a basic
    index (``ndim`` the view's), None for any other: the path of every ``x[i, j:k]``.
    Exact ints and slices, no more than the view has axes, are read here; anything else
    (None, Ellipsis, NumPy integers, an int out of bounds: its error) as ``index`` reads
    it."""
    shape, strides, offset = view
    ndim = len(shape)
    if len(items) > ndim:
        return _basic_index_general(view, items)
    new_shape, new_strides, n_ints = [], [], 0
    for dim, item in enumerate(items):
        kind = type(item)
        if kind is int:
            n = shape[dim]
            if not -n <= item < n:
                return _basic_index_general(view, items)
            offset += (item + n if item < 0 else item) * strides[dim]
            n_ints += 1
        elif kind is slice:
            start, stop, step = item.indices(shape[dim])
            length = len(range(start, stop, step))
            if length:
                offset += start * strides[dim]
            new_shape.append(length)
            new_strides.append(strides[dim] * step)
        else:
            return _basic_index_general(view, items)
    if len(items) < ndim:
        new_shape.extend(shape[len(items):])
        new_strides.extend(strides[len(items):])
    return (tuple(new_shape), tuple(new_strides), offset), n_ints == ndim


def _basic_index_general(view: tuple, items: tuple):
    if not is_basic(items):
        return None
    return index(view, items), is_scalar_index(items, len(view[0]))


def is_scalar_index(items: tuple, ndim: int) -> bool:
    """Whether ``a[items]`` picks one element by integers alone (NumPy gives a scalar, a
    copy, rather than a 0-d view)."""
    return len(items) == ndim and all(
        isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))
        for i in items)


def _expand_ellipsis(items: tuple, ndim: int) -> tuple:
    if len(items) <= ndim:   # the common case: no Ellipsis, no None
        for item in items:
            if item is None or item is Ellipsis:
                break
        else:
            return items + (slice(None),) * (ndim - len(items))
    n_ellipsis = sum(1 for item in items if item is Ellipsis)
    if n_ellipsis > 1:
        raise ShapeIndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for item in items if item is not None and item is not Ellipsis)
    if n_real > ndim:
        raise ShapeIndexError(f"too many indices for array: array is {ndim}-dimensional, "
                              f"but {n_real} were indexed")
    fill = (slice(None),) * (ndim - n_real)
    if n_ellipsis:
        at = items.index(Ellipsis)
        return items[:at] + fill + items[at + 1:]
    return items + fill


def _bounded(i: int, n: int, axis: int) -> int:
    if not -n <= i < n:
        raise ShapeIndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
    return i + n if i < 0 else i


def permute(view: tuple, axes: tuple) -> tuple:
    """The view with its axes in the order ``axes`` (transpose, swapaxes, moveaxis)."""
    shape, strides, offset = view
    return tuple(shape[a] for a in axes), tuple(strides[a] for a in axes), offset


def reshape(view: tuple, dtype, shape: tuple):
    """The view ``shape`` gives without copying, by NumPy's rules; None when NumPy would
    have to copy."""
    old_shape, strides, offset = view
    itemsize = dtype.itemsize
    if tuple(strides) == c_strides(old_shape, itemsize) and 0 not in old_shape:
        return shape, c_strides(shape, itemsize), offset   # C order stays C order
    try:
        probe = np.lib.stride_tricks.as_strided(_anchor(dtype), old_shape, strides)
        reshaped = probe.reshape(shape, copy=False)
    except ValueError:
        return None
    return reshaped.shape, reshaped.strides, offset


def broadcast(view: tuple, shape: tuple) -> tuple:
    """The view of broadcasting to ``shape`` (zero strides on new and stretched axes)."""
    old_shape, strides, offset = view
    lead = len(shape) - len(old_shape)
    new_strides = [0] * lead
    for n, target, stride in zip(old_shape, shape[lead:], strides):
        new_strides.append(stride if n == target else 0)
    return tuple(shape), tuple(new_strides), offset


def memory_order(view) -> tuple:
    """The axes of ``view`` from the largest stride to the smallest (NumPy's ``order='K'``
    layout of a result made from it); C order for no view."""
    if view is None:
        return ()
    strides = view[1]
    n = len(strides)
    if n < 2 or all(abs(strides[a]) >= abs(strides[a + 1]) for a in range(n - 1)):
        return tuple(range(n))   # already largest first (what the stable sort keeps)
    return tuple(sorted(range(n), key=lambda a: -abs(strides[a])))


def laid_out(shape: tuple, order: tuple, itemsize: int) -> tuple:
    """A fresh buffer's view when its axes are stored in ``order`` (outermost first):
    ``(buffer shape, the view of it in logical axis order)``."""
    buffer_shape = tuple(shape[a] for a in order)
    buffer_strides = c_strides(buffer_shape, itemsize)
    strides = [0] * len(shape)
    for position, axis in enumerate(order):
        strides[axis] = buffer_strides[position]
    return buffer_shape, (tuple(shape), tuple(strides), 0)


def is_contiguous(view, itemsize: int) -> bool:
    """Whether a view covers a C-contiguous range (None: the whole buffer)."""
    if view is None:
        return True
    shape, strides, _ = view
    if 0 in shape:
        return True
    return all(n == 1 or s == want for n, s, want in
               zip(shape, strides, c_strides(shape, itemsize)))


def _anchor(dtype):
    anchor = _ANCHORS.get(dtype)
    if anchor is None:
        anchor = _ANCHORS[dtype] = np.zeros(1, dtype)
    return anchor


# ---- views that read their buffer as another dtype ---------------------------------------

class ReadAs(tuple):
    """The byte strides of a view that reads its buffer as another dtype than the buffer's
    (``x.view(dtype)``, ``x.getfield``): a tuple like any strides, so every view function
    and every copy of a view (a jit plan's) keeps working unchanged, carrying ``dtype``
    for the devices (``Device.view``, ``read_as``)."""

    def __new__(cls, strides, dtype):
        strides = super().__new__(cls, strides)
        strides.dtype = np.dtype(dtype)
        return strides


def read_as(view):
    """The dtype ``view`` reads its buffer as, or None for the buffer's own."""
    return None if view is None else getattr(view[1], "dtype", None)


def typed(view: tuple, dtype) -> tuple:
    """``view`` reading its buffer as ``dtype``."""
    shape, strides, offset = view
    return shape, ReadAs(strides, dtype), offset


def reinterpret(view: tuple, dtype, new_dtype) -> tuple:
    """The view ``a.view(new_dtype)`` gives of an array of ``dtype`` seen through ``view``,
    by NumPy's rules on itemsize changes (NumPy's ValueError when it has none)."""
    shape, strides, offset = view
    probe = np.lib.stride_tricks.as_strided(_anchor(dtype), shape, strides)
    reinterpreted = probe.view(new_dtype)
    return reinterpreted.shape, reinterpreted.strides, offset


def field(view: tuple, dtype, new_dtype, offset: int) -> tuple:
    """The view ``a.getfield(new_dtype, offset)`` gives: the same elements, each read as
    ``new_dtype`` from ``offset`` bytes into it (NumPy's ValueError when it does not fit)."""
    new_dtype = np.dtype(new_dtype)
    limit = np.dtype(dtype).itemsize - new_dtype.itemsize
    if not 0 <= offset <= limit:
        raise ValueError(f"Need 0 <= offset <= {limit} for requested type but received "
                         f"offset = {offset}")
    shape, strides, start = view
    return shape, strides, start + offset


def within(view: tuple, itemsize: int, nbytes: int) -> bool:
    """Whether every element of ``view`` lies inside a buffer of ``nbytes`` bytes (NumPy's
    check of new strides)."""
    shape, strides, offset = view
    if 0 in shape:
        return True
    low = offset + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    high = offset + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
    return low >= 0 and high <= nbytes


# ---- views as the recorders see them ------------------------------------------------------

def _never(*_args, **_attrs):
    raise RuntimeError("internal: a view definition is not an op to run")


def _transpose_infer(x, *, axes):
    return (ArraySpec(tuple(x.shape[a] for a in axes), x.dtype),)


def _reshape_infer(x, *, shape):
    return (ArraySpec(tuple(shape), x.dtype),)


def _index_infer(x, *, index, shape):
    return (ArraySpec(tuple(shape), x.dtype),)


def _strided_infer(x, *, x_view, view):
    return (ArraySpec(tuple(view[0]), x.dtype),)


def _dtype_infer(x, *, dtype, view):
    return (ArraySpec(tuple(view[0]), dtype),)


TRANSPOSE = register("view_transpose", _transpose_infer, _never)
RESHAPE = register("view_reshape", _reshape_infer, _never)
INDEX = register("view_index", _index_infer, _never)
BROADCAST = register("view_broadcast", _reshape_infer, _never)
STRIDED = register("view_strided", _strided_infer, _never)
VIEW_DTYPE = register("view_dtype", _dtype_infer, _never)
"""``x.view(dtype)``, ``x.getfield``: the buffer read as another dtype (no gradient)."""
WRITE_REGION = register("write_region", lambda x, *value, index: (x,), _never)
"""``x[index] = value`` as the recorders see it: the elements of ``x`` at ``index`` now
come from ``value`` (told on ``x`` itself, whatever view the write went through; the
write's own op is told too)."""


PSEUDO_OPS = frozenset({"view_transpose", "view_reshape", "view_index", "view_broadcast",
                        "view_strided", "view_dtype", "write_region"})
"""The names of the definitions above: what recorders are told of, never ops to run."""
