"""``x[key]`` and ``x[key] = value``, by NumPy's rules.

Basic indices (ints, slices, None, Ellipsis) give views: reading one costs no op, writing
through it writes the base array. An index that picks one element by integers alone gives
a scalar, as NumPy does: NumPy's own, read at once (``Engine.element_now``: no op, as
iteration reads), when the value is computed on a CPU device with no write pending and
nothing records at the seam (autograd, jit: they need the op); else a copy marked as a
NumPy scalar (``minerva.api.core.scalars``), computed with the program.
Integer arrays (NArrays, NumPy arrays, lists, ranges) and boolean masks are *advanced*
indices: reading gathers a copy, writing scatters into the array in place. A boolean
mask selects the elements of its ``nonzero()`` (a 0-d one adds an axis of length 1 or 0,
as NumPy's; ``minerva.ops.scalar_masks``); reading through a mask that is an NArray
waits for the mask's values, since the result's shape depends on them (writing a scalar
through it does not wait). Host index arrays are checked against the array's bounds at
once; NArray indices when the op runs. Where every index array is a host one and nothing
records at the seam, the op's kernel reads them as they are, not uploaded, when it runs at
once on a CPU device (``_take_now``, ``_put_now``: ``Engine.run_host``); a mask of the
array's leading shape alone in the index is read by the kernel itself, never turned into
its ``nonzero()`` (``minerva.api.core.masks``), and integer arrays of one shape on the
leading axes index in one NumPy call (``minerva.api.core.picks``). ``nonzero``
gives the integer arrays of a mask; ``take_axis`` gathers along one axis,
``device_indices`` checks NArray index values.
"""
from __future__ import annotations

import numpy as np

from minerva.api.core import masks, picks
from minerva.api.core.advanced import advanced
from minerva.api.core.at_once import gather_now, scatter_now
from minerva.api.core.manipulation import explicit_view, view_of
from minerva.api.core.scalars import numpy_scalar
from minerva.builder import COPY, SEAM, build, note_write, same_buffer, to_narray, upload
from minerva.common.errors import DTypeError, IntegerOverflowError, ShapeError
from minerva.current import Runtime, get_system
from minerva.narray import COPIED_SCALARS, HOST_READS, NArray
from minerva.ops import registry, views
from minerva.ops.dtypes import NUMERIC_KINDS
from minerva.ops.registry import ArraySpec
from minerva.ops.elementwise import ARRAY, fits
from minerva.ops.indexing import PUT, SCATTER_ADD, TAKE

FILL = registry.get("fill")
ASSIGN = registry.get("assign")




def getitem(x: NArray, key):
    """``x[key]``: a view for basic indices, a gathered copy for advanced ones; one element
    picked by integers is NumPy's scalar, read at once when the value is computed on a CPU
    device and nothing records (autograd, jit), else a lazy one."""
    spec = x._spec
    at_once = not SEAM.hooks and HOST_READS.refuse is None \
        and spec.dtype.kind in COPIED_SCALARS   # see ``element_now``
    if type(key) is NArray and at_once and not key._spec.shape \
            and key._spec.dtype.kind in "iu" and key._storage.current.done:
        key = int(key)   # a computed 0-d integer array indexes as its int (NumPy's rule)
    if type(key) is int and at_once and len(spec.shape) == 1:   # x[i]: the common case
        storage = x._storage
        element = storage.engine.element_now(storage, x._view, key)
        if element is not None:
            return element
    items = key if type(key) is tuple else (key,)
    basic = None if type(key) in ADVANCED_KEYS else views.basic_index(explicit_view(x),
                                                                     items)
    if basic is not None:
        view, scalar = basic
        if scalar and at_once:
            element = x._storage.engine.element_now(x._storage, _typed(x, view))
            if element is not None:
                return element
        result = view_of(x, view, views.INDEX, {"index": items, "shape": view[0]})
        if scalar:
            return numpy_scalar(build(COPY, [result]))
        return result
    mask = _host_mask(x, items)
    if mask is not None:
        result = gather_now(masks.take_plan(x, mask))
        if result is not None:
            return result
        items = (mask,)
    else:
        found = picks.host_picks(x, items)
        result = None if found is None else gather_now(picks.take_plan(x, found))
        if result is not None:
            return result
    layout, arrays = advanced(x, items)
    result = _take_now(x, layout, arrays)
    if result is None:
        result = build(TAKE, [x] + _uploaded(arrays), {"layout": layout})
    if not result.ndim and all(item is not Ellipsis for item in items):
        numpy_scalar(result)  # picked by integers and 0-d integer arrays alone
    return result


ADVANCED_KEYS = (list, np.ndarray, NArray)
"""Types of a key that is an advanced index whatever it holds (NumPy's rules)."""

FRONT = (ARRAY,)
"""The layout of ``x[idx]``: one index array, on the first axis."""


def _take_now(x: NArray, layout: tuple, arrays: list):
    """``x[index]`` gathered at once where nothing records at the seam and some index
    arrays are host ones: the kernel reads their NumPy arrays as they are, not uploaded
    (the engine's ``run_host``); None where it takes ``build``'s way (nothing done)."""
    if SEAM.hooks or not _any_host(arrays):
        return None
    inputs, host = _split([x], arrays)
    attrs = {"layout": layout}
    shape = x._spec.shape
    if layout == FRONT and shape and len(inputs) == 1:   # x[idx]: idx's shape, x's others
        spec = ArraySpec(arrays[0].shape + shape[1:], x._spec.dtype)
    else:
        spec = _inferred(TAKE, [x._spec] + [_spec_of(a) for a in arrays], attrs)
    if spec.dtype.kind not in NUMERIC_KINDS:
        return None
    system = Runtime.system or get_system()
    storage = system.engine.run_host(TAKE, attrs, [y._storage for y in inputs], host, spec,
                                     system.current_device(), _views(inputs))
    return None if storage is None else NArray(storage, None, spec)


def _put_now(x: NArray, inputs: list, arrays: list, attrs: dict) -> bool:
    """``x[index] = value`` written at once where nothing records at the seam, some index
    arrays are host ones (as ``_take_now``) and no input (``inputs``: the value, or none
    for a scalar, then the NArray indices) reads ``x``'s buffer; whether it was (else
    nothing done)."""
    written = x._storage
    if SEAM.hooks or not _any_host(arrays):
        return False
    if inputs or attrs["layout"] != FRONT or not x._spec.shape:   # else nothing to check
        _inferred(PUT, [v._spec for v in inputs] + [_spec_of(a) for a in arrays], attrs)
    inputs, host = _split(inputs, arrays)
    for value in inputs:
        if value._storage is written:   # the general path copies it first
            return False
    current = written.current
    return (Runtime.system or get_system()).engine.run_host(
        PUT, attrs, [v._storage for v in inputs], host, current.spec, current.device_id,
        _views(inputs), written, x._view) is not None


def _split(inputs: list, arrays: list) -> tuple:
    """``(NArray operands, host ones)``: ``inputs`` then the NArrays of index ``arrays``,
    and ``(position, NumPy array)`` of each host one among all those operands."""
    device, host = list(inputs), []
    for position, array in enumerate(arrays, len(inputs)):
        if type(array) is np.ndarray:
            host.append((position, array))
        else:
            device.append(array)
    return device, tuple(host)


def _spec_of(array):
    return ArraySpec(array.shape, array.dtype) if type(array) is np.ndarray else array._spec


def _views(inputs: list):
    """The views of ``inputs`` (one per input), or None when none is a view."""
    for x in inputs:
        if x._view is not None:
            return [y._view for y in inputs]
    return None


def _inferred(op_def, specs: list, attrs: dict):
    """The one output spec of ``op_def`` over ``specs``, its ShapeError told of the op
    as ``build`` tells it."""
    try:
        return op_def.infer(*specs, **attrs)[0]
    except ShapeError as err:
        err.add_note(f"in op '{op_def.name}'")
        raise


def _any_host(arrays: list) -> bool:
    for array in arrays:
        if type(array) is np.ndarray:
            return True
    return False


def _uploaded(arrays: list) -> list:
    """``arrays`` with each host index array uploaded (NArrays as they are)."""
    return [upload(a) if type(a) is np.ndarray else a for a in arrays]


def _typed(x: NArray, view):
    """``view`` of ``x``'s buffer reading ``x``'s dtype where ``x`` reads the buffer as
    another dtype (``x.view(dtype)``)."""
    return view if views.read_as(x._view) is None else views.typed(view, x.dtype)


def setitem(x: NArray, key, value) -> None:
    """``x[key] = value``: writes into ``x`` in place (value broadcast and cast to it)."""
    items = key if type(key) is tuple else (key,)
    basic = None if type(key) in ADVANCED_KEYS else views.basic_index(explicit_view(x),
                                                                     items)
    if basic is not None:
        value = assign(view_of(x, basic[0]), value)
        note_write(x, items, value)
        return
    check_writable(x)
    scalar = _is_scalar(value)
    if scalar and type(key) is NArray and scatter_now(
            x, masks.fill_plan(x, key, _converted(x.dtype, value))):
        return
    mask = None if scalar else _host_mask(x, items)
    if mask is not None:
        value = to_narray(value, "setitem")
        if scatter_now(x, masks.put_plan(x, mask, value)):
            return
        items = (mask,)
    elif _put_picked(x, items, value, scalar):
        return
    layout, arrays = advanced(x, items, scalar)
    attrs = {"layout": layout, "shape": x.shape, "dtype": x.dtype}
    if scalar:
        attrs["value"], inputs = _converted(x.dtype, value), []
    else:
        value = to_narray(value, "setitem")
        attrs["value"], inputs = ARRAY, [value]
    if _put_now(x, inputs, arrays, attrs):
        return
    arrays = _uploaded(arrays)
    build(PUT, inputs + arrays, attrs, out=x)
    note_write(x, _index_of(layout, arrays), value)


def _put_picked(x: NArray, items: tuple, value, scalar: bool) -> bool:
    """``x[items] = value`` by integer index arrays at once (``picks``); whether it was."""
    found = picks.host_picks(x, items)
    if found is None:
        return False
    value = _converted(x.dtype, value) if scalar else to_narray(value, "setitem")
    return scatter_now(x, picks.put_plan(x, found, value, scalar))


def _host_mask(x: NArray, items: tuple):
    """The host values of the one boolean array of ``x``'s leading shape that index
    ``items`` is (an NArray mask is read now: the result's shape depends on it), or None
    for any other index (``masks.mask_of``)."""
    mask = masks.mask_of(x, items)
    return to_narray(mask, "index").to_numpy() if type(mask) is NArray else mask


def assign(target: NArray, value):
    """Write ``value`` (a scalar or an array broadcast to ``target``'s shape) into the
    elements ``target`` sees; the value written (an NArray, or the converted scalar)."""
    check_writable(target)
    if _is_scalar(value) or isinstance(value, (str, bytes)):
        value = _converted(target.dtype, value)
        build(FILL, [], {"shape": target.shape, "dtype": target.dtype, "value": value},
              out=target)
        return value
    value = to_narray(value, "setitem")
    if same_buffer(value, target):
        return value
    if not fits(value.shape, target.shape):
        raise ShapeError(f"could not broadcast input array from shape {value.shape} into "
                         f"shape {target.shape}")
    if value.ndim > target.ndim:
        value = value.reshape(value.shape[value.ndim - target.ndim:])
    build(ASSIGN, [value], {"dtype": target.dtype}, out=target)
    return value


def add_at(a: NArray, indices, b) -> None:
    """``numpy.add.at``: add ``b`` into ``a`` at ``indices`` in place, unbuffered (an index
    that repeats adds each time)."""
    items = indices if type(indices) is tuple else (indices,)
    check_writable(a)
    scalar = _is_scalar(b)
    found = picks.host_picks(a, items) if scalar or isinstance(b, NArray) else None
    if found is not None and scatter_now(a, picks.put_plan(
            a, found, a.dtype.type(b) if scalar else b, scalar, picks.PICK_ADD)):
        return
    layout, arrays = advanced(a, items)
    values = to_narray(b, "add.at", a.dtype)
    build(SCATTER_ADD, [values] + _uploaded(arrays), {"layout": layout, "shape": a.shape,
                                                      "dtype": a.dtype}, out=a)


def advanced_index(x: NArray, key) -> tuple:
    """``(layout, index arrays)`` of index ``key`` into ``x``, as a scatter op takes them
    (``ops.indexing``; masks become their ``nonzero()``, host arrays are bounds-checked)."""
    layout, arrays = advanced(x, key if type(key) is tuple else (key,))
    return layout, _uploaded(arrays)


def nonzero(a) -> tuple:
    """Indices of the non-zero elements, one array per axis. The result's shape depends on
    the values: this waits for ``a``."""
    values = to_narray(a, "nonzero").to_numpy()
    if values.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                         "np.atleast_1d(scalar).nonzero() instead.")
    return tuple(upload(i) for i in np.nonzero(values))


def device_indices(name: str, indices: NArray) -> NArray:
    """NArray index values, cast to ``intp`` when they are bool or narrower integers;
    TypeError for other dtypes."""
    if indices.dtype.kind not in "biu" or not np.can_cast(indices.dtype, np.intp,
                                                          "same_kind"):
        raise DTypeError(f"{name}: Cannot cast array data from {indices.dtype!r} to "
                         f"{np.dtype(np.intp)!r} according to the rule 'same_kind'")
    return to_narray(indices, name, np.intp)

def take_axis(x: NArray, positions, axis: int, out=None) -> NArray:
    """``x`` gathered at ``positions`` (host ``intp`` values already in bounds, or an
    NArray) along ``axis``: a new array, as ``numpy.take``."""
    layout = (slice(None),) * axis + (ARRAY,)
    if not isinstance(positions, NArray):
        positions = np.asarray(positions, dtype=np.intp)
        result = None if out is not None else _take_now(x, layout, [positions])
        if result is not None:
            return result
        positions = upload(positions)
    return build(TAKE, [x, positions], {"layout": layout}, out)


def _index_of(layout: tuple, arrays: list) -> tuple:
    """The index a layout and its arrays stand for (arrays as NArrays)."""
    slots = iter(arrays)
    return tuple(next(slots) if item is ARRAY else item for item in layout)


def check_writable(target: NArray) -> None:
    """ValueError, as NumPy's, when ``target`` is read-only (a broadcast view, a view of
    one, an array whose ``flags.writeable`` was turned off)."""
    if target._readonly:
        raise ValueError("assignment destination is read-only")


def host_element(x: NArray, value):
    """One element of ``x`` as iterating over ``x`` gives it (``for v in x`` over a 1-D
    array, ``x.flat``, ``ndenumerate``), from ``value``, that element already read on the
    host (``minerva.api.core.iteration`` reads the array once): NumPy's scalar of it, as
    NumPy's iteration yields. The one place that decides what an iterated element is."""
    return value


def _is_scalar(value) -> bool:
    if type(value) is NArray:   # (an NArray's isinstance would ask its __class__, 5 times)
        return False
    return isinstance(value, (int, float, complex, bool, np.generic)) or (
        isinstance(value, np.ndarray) and value.ndim == 0)


def _converted(dtype, value):
    """``value`` as NumPy stores it in an array of ``dtype`` (raising now what NumPy
    raises for it)."""
    probe = np.empty((), dtype)
    try:
        probe[()] = value
    except OverflowError as exc:  # NumPy 2: a Python int out of the dtype's range
        raise IntegerOverflowError(f"{exc}") from None
    except (TypeError, ValueError) as exc:
        kind = DTypeError if isinstance(exc, TypeError) else ShapeError
        raise kind(f"cannot assign {value!r} to an array of {dtype}: {exc}") from None
    return probe[()]


__all__ = ["nonzero"]
