"""0-d boolean indices (``x[True]``, ``x[..., numpy.False_]``, ``x[array(False)]``), by
NumPy's rule: a 0-d boolean adds an axis of length 1 where it stands and is a boolean mask
of that axis, so it keeps the axis (True) or leaves it empty (False). As an advanced index
it broadcasts with the others and counts where they sit.

An index layout (``ops.indexing``) holds such an index as a Python ``bool``. ``resolve``
rewrites one: each bool becomes the integer array of its mask's ``nonzero()`` (``[0]`` or
``[]``) over a new length-1 axis, and the indexed array gets those axes (a view), so the
backend only ever sees integer indices.
"""
from __future__ import annotations


def is_scalar_mask(item) -> bool:
    """Whether a layout entry is a 0-d boolean index."""
    return type(item) is bool


def consumes_axis(item) -> bool:
    """Whether a layout entry indexes one axis of the indexed array (None, Ellipsis and
    0-d booleans do not)."""
    return item is not None and item is not Ellipsis and not is_scalar_mask(item)


def resolve(items: tuple, ndim: int, positions) -> tuple:
    """``(new axes, items)``: ``items`` (Ellipsis already expanded for an array of
    ``ndim`` axes) with each 0-d boolean replaced by ``positions(n)``, an index of the
    ``n`` (0 or 1) positions it keeps; ``new axes`` are where the indexed array gets a
    length-1 axis, in increasing order (insert them one by one)."""
    axes, out, dim = [], [], 0
    for item in items:
        if is_scalar_mask(item):
            axes.append(dim)
            out.append(positions(int(item)))
            dim += 1
        else:
            out.append(item)
            dim += item is not None
    return tuple(axes), tuple(out)


def with_axes(shape: tuple, axes: tuple) -> tuple:
    """``shape`` with a length-1 axis inserted at each of ``axes`` (in order)."""
    shape = list(shape)
    for axis in axes:
        shape.insert(axis, 1)
    return tuple(shape)


def native(xp, x, items: tuple):
    """``(array, index)`` to index with ``xp``: ``x`` with the new axes of the 0-d
    booleans of ``items`` (Ellipsis already expanded; ``x`` viewed, never copied) and the
    index with them as integer arrays."""
    axes, index = resolve(items, x.ndim, lambda n: xp.arange(n, dtype=xp.intp))
    for axis in axes:
        x = xp.expand_dims(x, axis)
    return x, index
