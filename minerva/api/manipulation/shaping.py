"""Manipulations that make a new array of another layout: ``roll``, ``tile``, ``repeat``,
``pad`` and ``resize``; and ``copyto``, which copies into an NArray in place. Each is one
op on the device (``resize`` a few), built at once."""
from __future__ import annotations

import operator

import numpy as np

from minerva.api.core.arguments import as_int, axis_index, host_indices
from minerva.api.core.creation import check_shape, zeros
from minerva.api.core.indexing import assign, check_writable
from minerva.api.core.manipulation import ravel, reshape
from minerva.builder import COPY, build, to_narray, upload
from minerva.common.errors import DTypeError, ShapeError
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.dtypes import is_scalar

_ROLL, _TILE = registry.get("roll"), registry.get("tile")
_REPEAT, _PAD = registry.get("repeat"), registry.get("pad")
_COPYTO = registry.get("copyto")


def roll(a, shift, axis=None) -> NArray:
    """``a`` with its elements shifted by ``shift`` along ``axis`` (the flattened array
    when None), those pushed past the end coming back at the start."""
    x = to_narray(a, "roll")
    if axis is None:
        total = int(np.sum(np.asarray(shift)))
        flat = build(_ROLL, [ravel(x)], {"shift": total, "axis": 0})
        return reshape(flat, x.shape)
    if type(shift) is int and type(axis) is int:   # the common call: one axis
        ax = axis_index("roll", axis, x.ndim)
        if not shift:
            return build(COPY, [x])
        return build(_ROLL, [x], {"shift": (shift,), "axis": (ax,)})
    axes = [axis_index("roll", ax, x.ndim)
            for ax in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    try:
        pairs = np.broadcast(np.asarray(shift), np.asarray(axes))
    except ValueError as exc:
        raise ValueError(f"roll: {exc}") from None
    if pairs.nd > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = dict.fromkeys(range(x.ndim), 0)
    for step, ax in pairs:
        shifts[int(ax)] += int(step)
    moved = tuple(d for d, step in shifts.items() if step)
    if not moved:
        return build(COPY, [x])
    return build(_ROLL, [x], {"shift": tuple(shifts[d] for d in moved), "axis": moved})


def tile(A, reps) -> NArray:
    """``A`` repeated ``reps`` times along each axis (``reps`` an int or a tuple; the
    shorter of the two is padded with leading ones)."""
    x = to_narray(A, "tile")
    items = tuple(reps) if isinstance(reps, (tuple, list)) else (reps,)
    reps = tuple(as_int("tile", r) for r in items)
    if any(r < 0 for r in reps):
        raise ValueError("negative dimensions are not allowed")
    return build(_TILE, [x], {"reps": reps})


def repeat(a, repeats, axis=None) -> NArray:
    """Each element of ``a`` repeated ``repeats`` times (an int, or one count per element
    along ``axis``) along ``axis`` (of the flattened array when None). An NArray of counts
    is read back first: the result's shape depends on its values (this waits)."""
    x = to_narray(a, "repeat")
    if axis is not None:
        axis = axis_index("repeat", axis, x.ndim)
    if isinstance(repeats, NArray):
        repeats = repeats.to_numpy()
    counts = _counts(repeats)
    if min(counts, default=0) < 0:
        raise ValueError("repeats may not contain negative values.")
    value = counts if np.ndim(repeats) else counts[0]
    return build(_REPEAT, [x], {"repeats": value, "axis": axis})


def _counts(repeats) -> tuple:
    if isinstance(repeats, (np.ndarray, np.generic)) and repeats.dtype.kind not in "biu":
        raise TypeError(f"Cannot cast array data from {repeats.dtype!r} to "
                        f"{np.dtype(np.intp)!r} according to the rule 'safe'")
    values = host_indices("repeat", repeats)
    if values.ndim > 1:
        raise ValueError("repeat: repeats must be an int or a 1-D sequence of ints")
    return tuple(int(n) for n in values.reshape(-1))


def resize(a, new_shape) -> NArray:
    """A new array of ``new_shape`` holding ``a``'s flattened elements repeated as often
    as needed (zeros when ``a`` is empty), as ``numpy.resize``."""
    x = to_narray(a, "resize")
    items = new_shape if isinstance(new_shape, (tuple, list)) else (new_shape,)
    dims = tuple(operator.index(n) for n in items)
    if any(n < 0 for n in dims):
        raise ValueError("all elements of `new_shape` must be non-negative")
    dims = check_shape(dims)
    total = int(np.prod(dims, dtype=np.int64))
    if x.size == 0 or total == 0:
        return zeros(dims, x.dtype)
    flat = build(_TILE, [ravel(x)], {"reps": (-(-total // x.size),)})
    return reshape(flat[:total], dims)


# ---- pad --------------------------------------------------------------------------------

_PAD_OPTIONS = {
    "constant": ("constant_values",), "edge": (), "wrap": (), "empty": (),
    "linear_ramp": ("end_values",), "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",), "maximum": ("stat_length",), "mean": ("stat_length",),
    "median": ("stat_length",), "minimum": ("stat_length",),
}


def pad(array, pad_width, mode="constant", **kwargs) -> NArray:
    """``array`` padded by ``pad_width`` (an int, a ``(before, after)`` pair, or one pair
    per axis) with NumPy's ``mode``: constant (``constant_values``), edge, linear_ramp,
    maximum, mean, median, minimum, reflect, symmetric (``reflect_type``), wrap, empty.
    A callable mode is not supported."""
    x = to_narray(array, "pad")
    if mode not in _PAD_OPTIONS:
        raise ValueError(f"mode {mode!r} is not supported")
    unknown = set(kwargs) - set(_PAD_OPTIONS[mode])
    if unknown:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unknown}")
    widths = _pad_widths(pad_width, x.ndim)
    if x.size == 0 and mode not in ("constant", "empty"):
        for axis, pair in enumerate(widths):
            if x.shape[axis] == 0 and any(pair):
                raise ValueError(f"can't extend empty axis {axis} using modes other than "
                                 "'constant' or 'empty'")
    options = tuple((key, _option(key, value, x.ndim)) for key, value in kwargs.items())
    return build(_PAD, [x], {"pad_width": widths, "mode": mode, "options": options})


def _pad_widths(pad_width, ndim: int) -> tuple:
    widths = np.asarray(pad_width)
    if widths.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    return _pairs(widths, ndim, as_index=True)


def _pairs(values: np.ndarray, ndim: int, as_index: bool = False) -> tuple:
    """``values`` broadcast to one ``(before, after)`` pair per axis, as nested tuples."""
    if as_index and values.size and values.min() < 0:
        raise ValueError("index can't contain negative values")
    try:
        pairs = np.broadcast_to(values, (ndim, 2))
    except ValueError as exc:
        raise ValueError(f"pad: {exc}") from None
    return tuple((a.item(), b.item()) for a, b in pairs)


def _option(key: str, value, ndim: int):
    if key == "reflect_type":
        return str(value)
    if value is None:
        return None
    if isinstance(value, NArray):
        value = value.to_numpy()
    values = np.asarray(value)
    if key == "stat_length":
        if values.dtype.kind not in "iu":
            values = values.round().astype(np.intp)
        return _pairs(values, ndim, as_index=True)
    return _pairs(values, ndim)


# ---- copying into an array -------------------------------------------------------------

def copyto(dst, src, casting="same_kind", where=True) -> None:
    """Copy ``src`` (broadcast) into ``dst`` in place, where ``where`` is true; TypeError
    when ``src`` cannot be cast to ``dst``'s dtype under ``casting``."""
    if not isinstance(dst, NArray):
        raise TypeError(f"copyto() argument 1 must be an NArray, not {type(dst).__name__}")
    _check_cast(src, dst.dtype, casting)
    check_writable(dst)
    if where is True:
        assign(dst, src)
        return
    if isinstance(src, NArray):
        value = src
    else:
        value = upload(np.asarray(src, dtype=dst.dtype if is_scalar(src) else None))
    mask = _mask(where)
    inputs = [_trimmed(value, dst.ndim, "input array"), _trimmed(mask, dst.ndim, "where mask")]
    build(_COPYTO, inputs, {"shape": dst.shape, "dtype": dst.dtype}, out=dst)

_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")

def _check_cast(src, dtype: np.dtype, casting: str) -> None:
    if casting not in _CASTINGS:
        raise ValueError(f"casting must be one of {', '.join(map(repr, _CASTINGS))} "
                         f"(got {casting!r})")
    if isinstance(src, NArray) or not is_scalar(src):
        kind = src.dtype if isinstance(src, NArray) else np.asarray(src).dtype
        if not np.can_cast(kind, dtype, casting):
            raise DTypeError(f"Cannot cast array data from {kind!r} to {dtype!r} according "
                             f"to the rule {casting!r}")
        return
    try:
        np.copyto(np.empty((), dtype), src, casting=casting)  # NumPy's scalar rules
    except TypeError as exc:
        raise DTypeError(str(exc)) from None

def _mask(where) -> NArray:
    if isinstance(where, (NArray, np.ndarray)) and where.dtype != np.bool_:
        raise DTypeError(f"Cannot cast array data from {where.dtype!r} to "
                         f"{np.dtype(np.bool_)!r} according to the rule 'safe'")
    return to_narray(where, "copyto", np.bool_)

def _trimmed(x: NArray, ndim: int, what: str) -> NArray:
    """``x`` without leading size-1 axes beyond ``ndim`` (NumPy drops them)."""
    extra = x.shape[:max(0, x.ndim - ndim)]
    if any(n != 1 for n in extra):
        raise ShapeError(f"could not broadcast {what} from shape {x.shape} into an array "
                         f"of {ndim} dimensions")
    return reshape(x, x.shape[len(extra):]) if extra else x


__all__ = ["copyto", "pad", "repeat", "resize", "roll", "tile"]
