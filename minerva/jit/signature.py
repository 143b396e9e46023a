"""What a plan depends on (a call's signature), and the offsets it does not depend on.

A call's **signature** is the current device; per NArray argument its shape, dtype and
device, its layout (none for a whole buffer; else its strides and the shape and dtype of
the storage it views), how it aliases earlier arguments (the first argument on its storage
and the distance in bytes between their offsets), and its gradient buffer; the value of
every other argument (hashable).

The **offset** of a view argument is not in it: the mini-batches ``data[i:i+32]`` of a
loop share one plan. A plan keeps the views it uses on such an argument's storage relative
to the argument's offset (``relative``), and each replay moves them by its call's own
offsets (``moved``). A plan that reached the storage through a handle made from no
argument (a captured array on the same buffer) is **pinned**: it is kept for the offsets
it was recorded with (``offsets``), and other offsets record their own plans.
"""
from __future__ import annotations

from minerva.common.errors import JitError
from minerva.narray import NArray


def signature(args, device) -> tuple:
    """The signature of a call with ``args`` on ``device`` (see the module docstring);
    JitError for an argument that is neither an NArray nor hashable."""
    key = [device]
    first_on: dict = {}  # id(storage) -> (index, offset) of the first argument on it
    for i, x in enumerate(args):   # an array's key in line, no properties: a call's cost
        if isinstance(x, NArray):
            storage, view, spec = x._storage, x._view, x._spec
            current = storage.current
            if view is None:
                offset, layout = 0, None
            else:
                offset = view[2]
                layout = (view[1], current.spec.shape, current.spec.dtype)
            first, first_offset = first_on.setdefault(id(storage), (i, offset))
            grad = None if x._grad_info is None else x.grad
            key.append(("array", spec.shape, spec.dtype, current.device_id, layout, first,
                        offset - first_offset, None if grad is None else id(grad._storage)))
        else:
            _check_hashable(i, x)
            key.append(("value", type(x), x))
    return tuple(key)


def _check_hashable(i: int, x) -> None:
    try:
        hash(x)
    except TypeError:
        raise JitError(f"argument {i} of a jitted function is neither an NArray nor "
                       f"hashable ({type(x).__name__}): pass arrays as NArrays, other "
                       "values as hashable ones") from None


def offset_of(x: NArray) -> int:
    """Where ``x`` starts in its storage, in bytes."""
    return 0 if x._view is None else x._view[2]


def offsets(args) -> tuple:
    """The offsets of the array arguments: what a pinned plan is kept for."""
    return tuple(offset_of(x) for x in args if isinstance(x, NArray))


def relative(pairs: list, base: dict) -> list:
    """``(vid, view)`` pairs with the views on the storages of ``base`` (vid -> recorded
    offset of its argument) made relative to that offset."""
    return [(vid, view) if view is None or vid not in base else
            (vid, (view[0], view[1], view[2] - base[vid])) for vid, view in pairs]


def moved(view, offset: int):
    """A relative ``view`` placed at an argument's ``offset``."""
    return view if view is None else (view[0], view[1], view[2] + offset)


__all__ = ["signature", "offset_of", "offsets", "relative", "moved"]
