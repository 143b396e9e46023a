"""Writes through aliases: memory that several handles share (views, ``detach()``, the
temporary views of item writes) is followed by storage, whichever handle a write went
through.

- **Variables.** ``attach_grad`` and ``mark_variables`` register the variable's handle
  under its storage. A write made while recording into memory that overlaps a live
  variable that needs a gradient is refused (``written_variable``), through the variable
  itself or any alias of it.
- **Arrays that were not recorded.** A recorded write (its value takes part in gradients)
  into a view of an array that has no gradient info leaves the array's other handles
  without it: reading one of them in a recorded op would take the written values for
  constants. The storage remembers the versions such writes made (``note_write``) and
  such a read raises (``check_untracked``).

Overlap is by memory range (NumPy's ``may_share_memory``): two views of one buffer whose
byte ranges meet count as overlapping even when their elements interleave.
"""
from __future__ import annotations

import weakref

from minerva.autograd.tape import AutogradError, Leaf
from minerva.common.callsite import format_callsite
from minerva.ops import views

_VARIABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Storage -> weak references to the variable handles registered on it."""

_GRADIENT_WRITES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Storage -> (first version, last version, op name, call site) of the recorded writes
into it (those whose value takes part in gradients)."""


def register(x) -> None:
    """Remember ``x`` (a handle just made a variable) under its storage."""
    handles = _VARIABLES.setdefault(x._storage, [])
    handles[:] = [h for h in handles if h() is not None and h() is not x]
    handles.append(weakref.ref(x))


def written_variable(y):
    """The live variable that needs a gradient whose memory overlaps ``y``'s (a handle
    being written), or None."""
    handles = _VARIABLES.get(y._storage)
    if not handles:
        return None
    lo, hi = _extent(y)
    for ref in handles:
        x = ref()
        info = None if x is None else x._grad_info
        if isinstance(info, Leaf) and info.grad_req != "null":
            start, end = _extent(x)
            if lo < end and start < hi:
                return x
    return None


def _extent(x) -> tuple[int, int]:
    """The byte range ``[start, end)`` of ``x``'s storage that ``x`` sees."""
    shape, strides, offset = views.of(x._spec, x._view)
    if 0 in shape:
        return offset, offset
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    return offset + low, offset + high + x.dtype.itemsize


def variable_error(op_name: str, x) -> AutogradError:
    """The error for ``op_name`` writing into the memory of variable ``x``."""
    return AutogradError(
        f"an in-place write ({describe(op_name)}) into the memory of a variable that needs "
        f"a gradient (attach_grad or mark_variables; shape {x.shape}, through any view of "
        "it) while recording; write outside autograd.record(), use autograd.pause(), or "
        "write into a copy")


def note_write(node, outputs) -> None:
    """Remember that recorded ``node`` wrote the storages of ``outputs``: the first and
    the last version such writes made, and where the last was made."""
    for y in outputs:
        storage = y._storage
        version = storage.current.version
        known = _GRADIENT_WRITES.get(storage)
        first = version if known is None else known[0]
        _GRADIENT_WRITES[storage] = (first, version, node.name, node.created_at)


def describe(op_name: str) -> str:
    """An op's name as the errors quote it."""
    return "an item assignment" if op_name in _ITEM_WRITES else f"'{op_name}'"


_ITEM_WRITES = frozenset({"write_region", "fill", "put_index"})


def check_untracked(x, writing: bool = False, what: str = "recording an op") -> None:
    """AutogradError when ``x`` (a handle without gradient info) holds values that a
    recorded write made, through another handle, with a value that takes part in
    gradients. ``writing``: ``x`` is being written by the write being recorded now (an
    item write is recorded on the array after the write into its temporary view)."""
    known = _GRADIENT_WRITES.get(x._storage)
    if known is None:
        return
    first, last, name, created_at = known
    current = x._storage.current.version
    if first < current or last == current and not writing:
        raise AutogradError(
            f"{what}: this array has no gradient info, but its memory was written "
            f"through another view by {describe(name)} (last at "
            f"{format_callsite(created_at)}) with a value that takes part in gradients; "
            "autograd follows writes made through the array itself only: write with "
            "x[index] = value into the array you read, or write into a copy")
