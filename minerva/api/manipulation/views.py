"""Manipulations that give views of their input, as NumPy's do (no copy, no op): a write
through the result reaches the base array. Flips and rotations (``flip`` itself is in
``minerva.api.core.manipulation``), ``atleast_Nd``, the split family and ``unstack``."""
from __future__ import annotations

import operator

from minerva.api.core.arguments import axis_index
from minerva.api.core.manipulation import explicit_view, flip, reshape, transpose, view_of
from minerva.builder import to_narray
from minerva.narray import NArray
from minerva.ops import views

_ALL = slice(None)


def fliplr(m) -> NArray:
    """A view of ``m`` with its columns (axis 1) reversed; ``m`` must be at least 2-D."""
    x = to_narray(m, "fliplr")
    if x.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(x, 1)


def flipud(m) -> NArray:
    """A view of ``m`` with its rows (axis 0) reversed; ``m`` must be at least 1-D."""
    x = to_narray(m, "flipud")
    if x.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(x, 0)


def rot90(m, k=1, axes=(0, 1)) -> NArray:
    """A view of ``m`` rotated by 90 degrees ``k`` times in the plane of ``axes``, from
    the first axis towards the second."""
    x = to_narray(m, "rot90")
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    a, b = (operator.index(i) for i in axes)
    if a == b or abs(a - b) == x.ndim:
        raise ValueError("Axes must be different.")
    if not (-x.ndim <= a < x.ndim and -x.ndim <= b < x.ndim):
        raise ValueError(f"Axes={axes} out of range for array of ndim={x.ndim}.")
    k = operator.index(k) % 4
    if k == 0:
        return view_of(x, explicit_view(x))
    if k == 2:
        return flip(flip(x, a), b)
    order = list(range(x.ndim))
    order[a], order[b] = order[b], order[a]
    if k == 1:
        return transpose(flip(x, b), order)
    return flip(transpose(x, order), b)


# ---- at least N dimensions ----------------------------------------------------------------

def _at_least(a, ndim: int, name: str) -> NArray:
    x = to_narray(a, name)
    if x.ndim >= ndim:
        return x
    if x.ndim == 0:
        shape = (1,) * ndim
    elif x.ndim == 1:
        shape = (1,) + x.shape + ((1,) if ndim == 3 else ())
    else:
        shape = x.shape + (1,)
    return reshape(x, shape)


def _at_least_function(ndim: int):
    name = f"atleast_{ndim}d"

    def function(*arys):
        result = tuple(_at_least(a, ndim, name) for a in arys)
        return result[0] if len(result) == 1 else result
    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"Each input with at least {ndim} dimensions: the array itself when "
                        "it has them, else a view with size-1 axes added as NumPy adds them; "
                        "one array for one input, a tuple for several.")
    return function


atleast_1d, atleast_2d, atleast_3d = (_at_least_function(n) for n in (1, 2, 3))


# ---- splitting --------------------------------------------------------------------------

def _slab(x: NArray, axis: int, start: int, stop: int) -> NArray:
    items = (_ALL,) * axis + (slice(start, stop),)
    return view_of(x, views.index(explicit_view(x), items))


def array_split(ary, indices_or_sections, axis=0) -> list:
    """``ary`` split along ``axis`` into views: ``indices_or_sections`` is a number of
    pieces (the first ``n % sections`` one element longer) or the indices to split at."""
    x = to_narray(ary, "array_split")
    axis = axis_index("array_split", axis, x.ndim)
    n = x.shape[axis]
    try:
        bounds = [0] + [operator.index(i) for i in indices_or_sections] + [n]
    except TypeError:
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.") from None
        each, extras = divmod(n, sections)
        sizes = [0] + extras * [each + 1] + (sections - extras) * [each]
        bounds = [sum(sizes[:i + 1]) for i in range(len(sizes))]
    return [_slab(x, axis, start, stop) for start, stop in zip(bounds, bounds[1:])]


def split(ary, indices_or_sections, axis=0) -> list:
    """As ``array_split``, but a number of sections must divide the axis exactly
    (ValueError otherwise)."""
    x = to_narray(ary, "split")
    try:
        len(indices_or_sections)
    except TypeError:
        sections = indices_or_sections
        n = x.shape[axis_index("split", axis, x.ndim)]
        if n % sections:
            raise ValueError("array split does not result in an equal division") from None
    return array_split(x, indices_or_sections, axis)


def hsplit(ary, indices_or_sections) -> list:
    """``split`` along axis 1 (axis 0 for 1-D arrays)."""
    x = to_narray(ary, "hsplit")
    if x.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(x, indices_or_sections, 1 if x.ndim > 1 else 0)


def vsplit(ary, indices_or_sections) -> list:
    """``split`` along axis 0 of an array of at least 2 dimensions."""
    x = to_narray(ary, "vsplit")
    if x.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(x, indices_or_sections, 0)


def dsplit(ary, indices_or_sections) -> list:
    """``split`` along axis 2 of an array of at least 3 dimensions."""
    x = to_narray(ary, "dsplit")
    if x.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(x, indices_or_sections, 2)


def unstack(x, /, *, axis=0) -> tuple:
    """Views of ``x``'s slices along ``axis``, as a tuple (the array API's ``unstack``)."""
    x = to_narray(x, "unstack")
    if x.ndim == 0:
        raise ValueError("Input array must be at least 1-d.")
    axis = axis_index("unstack", axis, x.ndim)
    view = explicit_view(x)
    return tuple(view_of(x, views.index(view, (_ALL,) * axis + (i,)))
                 for i in range(x.shape[axis]))


__all__ = ["array_split", "atleast_1d", "atleast_2d", "atleast_3d", "dsplit", "fliplr",
           "flipud", "hsplit", "rot90", "split", "unstack", "vsplit"]
