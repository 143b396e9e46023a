"""Building ops: the one seam every public function, method and operator goes through.

``build(op_def, inputs, attrs, out=None)`` infers the outputs' shapes and dtypes on the
user's thread (a ShapeError is raised here, at the user's line), finds the device (the
thread's current one; for a write, the device of the written array), and registers the op
with the engine, which copies inputs that live elsewhere and orders writes after earlier
readers. It returns NArrays at once. Autograd and jit record at this seam.

Writes (``out=``, in-place operators, item assignment) go through ``build`` too: the op
overwrites the written array's buffer in place, seen through the written handle's view.
Views build no op: ``minerva.api.core.manipulation.view_of`` makes a handle on the same
storage and tells the seam (``note_view``).

The seam is one of the few modules that touch NArray's private fields (see doc/design.md,
"NArray's door"): the functions at the end give the rest of the face what it needs of the
runtime (the current device, the devices, the default dtype).
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import threading

import numpy as np

from minerva.common.callsite import user_callsite
from minerva.common.errors import DTypeError, ShapeError
from minerva.current import Runtime, get_system, running
from minerva.narray import NArray
from minerva.ops import registry, views
from minerva.ops.dtypes import NUMERIC_KINDS, check_device, holds, supported_dtype
from minerva.ops.registry import ArraySpec
from minerva.ops.views import laid_out, memory_order

EMPTY: dict = {}
COPY = registry.get("copy")
FROM_HOST = registry.get("from_host")
ASSIGN = registry.get("assign")


def build(op_def, inputs, attrs=EMPTY, out=None):
    """Build ``op_def`` over NArrays ``inputs`` on the current device; its NArray result
    (a tuple for ops with several outputs), or ``out`` after writing into it."""
    declined = False   # the accelerator's lean path declined the op: not asked again
    if out is None:   # the accelerator's whole build of a one-output op at once, if any
        result = ACCELERATOR.build_op(op_def, inputs, attrs)
        if result is NotImplemented:
            declined = True
        elif result is not None:
            return result
    system = Runtime.system or get_system()
    try:
        if len(inputs) == 1:
            out_specs = op_def.infer(inputs[0]._spec, **attrs)
        else:
            out_specs = op_def.infer(*[x._spec for x in inputs], **attrs)
    except ShapeError as err:
        err.add_note(f"in op '{op_def.name}'")
        raise
    if out is not None:
        result = _write(system, op_def, inputs, attrs, out_specs, out)
    else:
        result = None
        spec = out_specs[0]
        if len(out_specs) == 1 and spec.dtype.kind in NUMERIC_KINDS:
            views = None
            for x in inputs:
                if x._view is not None:
                    views = [y._view for y in inputs]
                    break
            # the lean path first: a tiny op of computed inputs runs here and now (an
            # element-wise one reading a view keeps its inputs' order: ``_keep_order``)
            if views is None or not op_def.elementwise:
                if not declined:
                    result = ACCELERATOR.run_op(op_def, attrs, inputs, spec)
                if result is None:
                    storage = system.engine.run_lean(
                        op_def, attrs, [x._storage for x in inputs], spec,
                        system.current_device(), views)
                    if storage is not None:
                        result = NArray(storage, None, spec)
        if result is None:
            result = _fresh(system, op_def, inputs, attrs, out_specs)
        if not spec.shape and op_def.name in SCALAR_RESULT_OPS:
            _mark_scalars(result)
    if SEAM.hooks:
        SEAM.notify(op_def, attrs, inputs, result, out)
    return result


def _no_accelerator(op_def, attrs, inputs, spec_or_out):
    return None


def _no_build(op_def, inputs, attrs):
    return None


class Accelerator:
    """What the optional C accelerator lends ``build`` (``minerva.api.core.lean`` sets
    it when it is active): ``run_op(op_def, attrs, inputs, spec)``, the lean path of one
    op over NArrays ``inputs`` in C — its result handle, or None (nothing done) for the
    Python one —, and ``run_write(op_def, attrs, inputs, out)``, the same of an op
    written into NArray ``out`` (``out``, or None); ``build_op(op_def, inputs, attrs)``,
    the whole of ``build`` for a one-output op with no ``out=`` that runs at once (the
    shape rule's answer from its memo, then ``run_op``'s steps), NotImplemented where
    those steps declined it (not to be tried again), or None."""

    run_op = staticmethod(_no_accelerator)
    run_write = staticmethod(_no_accelerator)
    build_op = staticmethod(_no_build)


ACCELERATOR = Accelerator()


SCALAR_RESULT_OPS: set = set()
"""Names of the ops whose 0-d results are NumPy scalars (``minerva.api.core.scalars``
fills it): ``build`` marks those results (not an ``out=``)."""


def _mark_scalars(result) -> None:
    for x in result if isinstance(result, tuple) else (result,):
        x._numpy_scalar = not x._spec.shape


def _fresh(system, op_def, inputs, attrs, out_specs):
    """The op's results in new storages."""
    device = system.current_device()
    for spec in out_specs:
        if spec.dtype.kind not in NUMERIC_KINDS:
            check_device(spec.dtype, system.devices.table[device])
    views = None
    for x in inputs:
        if x._view is not None:
            views = [y._view for y in inputs]
            if op_def.elementwise and len(out_specs) == 1:
                return _keep_order(system, op_def, inputs, attrs, out_specs[0], views)
            break
    storages = [x._storage for x in inputs]
    storages = system.engine.submit(op_def, attrs, storages, out_specs, device, None, views)
    if len(storages) == 1:
        return NArray(storages[0], None, out_specs[0])
    return tuple(NArray(s, None, spec) for s, spec in zip(storages, out_specs))


class Seam(threading.local):
    """Who listens at the op-building seam, per thread: ``hooks`` is a tuple of callables
    ``hook(op_def, attrs, inputs, result, out)`` told of every op built (``out`` set for a
    write) and every view made (``op_def`` a view definition of ``ops.views``). Autograd
    records through it, jit captures through it."""

    hooks: tuple = ()
    listening = [0]
    """How many hooks listen, on every thread together (one list all threads share: the C
    lean path tells a quiet seam by it without reading the per-thread ``hooks``)."""
    _counting = threading.Lock()

    def notify(self, op_def, attrs, inputs, result, out=None) -> None:
        """Tell every hook of one op (or view) just built."""
        for hook in self.hooks:
            hook(op_def, attrs, inputs, result, out)

    def push(self, hook) -> None:
        """Listen with ``hook`` on this thread (until ``pop``)."""
        with Seam._counting:
            Seam.listening[0] += 1
            self.hooks = self.hooks + (hook,)

    def pop(self, hook) -> None:
        """Stop listening with ``hook`` on this thread."""
        hooks = list(self.hooks)
        hooks.remove(hook)
        with Seam._counting:
            self.hooks = tuple(hooks)
            Seam.listening[0] -= 1


SEAM = Seam()


def note_write(x: NArray, index, value) -> None:
    """Tell the seam that ``x[index] = value`` was just built (``value`` an NArray, or a
    scalar), on ``x`` itself: the write went through a view of it."""
    if SEAM.hooks:
        inputs = (x, value) if isinstance(value, NArray) else (x,)
        SEAM.notify(views.WRITE_REGION, {"index": index}, inputs, x, x)


def note_view(view_def, attrs: dict, x: NArray, result: NArray) -> NArray:
    """``result``, a view of ``x`` made by ``view_def`` with ``attrs``, told to the seam
    (views build no op, but autograd and jit must see them); returns ``result``."""
    if SEAM.hooks:
        SEAM.notify(view_def, attrs, (x,), result)
    return result


def _keep_order(system, op_def, inputs, attrs, spec, views):
    """An element-wise result laid out in its inputs' memory order, as NumPy's
    ``order='K'`` lays it out (so a later reshape is a view exactly where NumPy's is)."""
    order = _common_order(inputs, spec.shape)
    storages, device = [x._storage for x in inputs], system.current_device()
    out_views, buffer_spec = None, spec
    if order is None:   # a C-order result: a tiny op's shortcut past ``submit``
        storage = system.engine.run_lean(op_def, attrs, storages, spec, device, views)
        if storage is not None:
            return NArray(storage, None, spec)
    else:
        buffer_shape, view = laid_out(spec.shape, order, spec.dtype.itemsize)
        buffer_spec, out_views = ArraySpec(buffer_shape, spec.dtype), [view]
    (storage,) = system.engine.submit(op_def, attrs, storages, (buffer_spec,), device, None,
                                      views, None, out_views)
    return NArray(storage, None if out_views is None else out_views[0], spec)


def _common_order(inputs, shape):
    """The memory order of the full-shape inputs when they all agree and it is not C
    order; None otherwise."""
    order = None
    for x in inputs:
        if x._spec.shape == shape:
            mine = memory_order(x._view) or tuple(range(len(shape)))
            if order is not None and mine != order:
                return None
            order = mine
    return None if order is None or order == tuple(range(len(shape))) else order


def _write(system, op_def, inputs, attrs, out_specs, out):
    if type(out) is NArray and len(out_specs) == 1:
        return _write_one(system, op_def, inputs, attrs, out_specs[0], out)
    outs = out if isinstance(out, tuple) else (out,)
    if len(outs) != len(out_specs):
        raise ShapeError(f"{op_def.name}: needs {len(out_specs)} output array(s) in out=, "
                         f"got {len(outs)}")
    for target, spec in zip(outs, out_specs):
        _check_target(op_def, target, spec)
    if any(isinstance(t, np.ndarray) for t in outs):
        return _write_host(op_def, inputs, attrs, outs, out)
    if any(t.dtype != s.dtype for t, s in zip(outs, out_specs)):
        results = build(op_def, inputs, attrs)  # compute, then cast into out
        results = results if isinstance(results, tuple) else (results,)
        for target, value in zip(outs, results):
            build(ASSIGN, [value], {"dtype": target.dtype}, out=target)
        return out
    inputs = _unaliased(op_def, inputs, outs)
    views = None
    if any(x._view is not None for x in inputs):
        views = [x._view for x in inputs]
    out_views = None
    if any(t._view is not None for t in outs):
        out_views = [t._view for t in outs]
    writes = [t._storage for t in outs]
    storages = [x._storage for x in inputs]
    if len(writes) == 1:   # the lean path first: a tiny write runs here and now
        written = writes[0]
        if system.engine.run_lean(op_def, attrs, storages, written.current.spec,
                                  outs[0].device, views, None, written,
                                  None if out_views is None else out_views[0]) is not None:
            return out
    system.engine.submit(op_def, attrs, storages, [w.current.spec for w in writes],
                         outs[0].device, user_callsite(), views, writes, out_views)
    return out


def _write_one(system, op_def, inputs, attrs, spec, out):
    """``_write`` of an op with one output into one NArray (``x += y``, ``x[i] = v``): the
    same checks and paths, without the loops over several outputs."""
    target = out._spec
    if out._readonly or target.shape != spec.shape or target.dtype != spec.dtype:
        _check_target(op_def, out, spec)   # raises, or passes a broadcast or a cast
        if target.dtype != spec.dtype:
            build(ASSIGN, [build(op_def, inputs, attrs)], {"dtype": target.dtype}, out=out)
            return out
    written, out_view = out._storage, out._view
    for x in inputs:
        if x._storage is written and not (op_def.elementwise and x._view == out_view):
            inputs = _unaliased(op_def, inputs, (out,))
            break
    if ACCELERATOR.run_write(op_def, attrs, inputs, out) is not None:
        return out
    views = None
    for x in inputs:
        if x._view is not None:
            views = [y._view for y in inputs]
            break
    storages = [x._storage for x in inputs]
    device = written.current.device_id
    if system.engine.run_lean(op_def, attrs, storages, written.current.spec, device, views,
                              None, written, out_view) is not None:
        return out
    system.engine.submit(op_def, attrs, storages, [written.current.spec], device,
                         user_callsite(), views, [written],
                         None if out_view is None else [out_view])
    return out


def _write_host(op_def, inputs, attrs, outs, out):
    """``out=`` holding NumPy arrays (NumPy's functions take them): the op computed in
    minerva, then its values written into them (waiting for them), cast as checked."""
    results = build(op_def, inputs, attrs)
    results = results if isinstance(results, tuple) else (results,)
    for target, value in zip(outs, results):
        if isinstance(target, np.ndarray):
            np.copyto(target, value.to_numpy(), casting="unsafe")
        else:
            build(ASSIGN, [value], {"dtype": target.dtype}, out=target)
    return out


def _check_target(op_def, target, spec) -> None:
    if isinstance(target, np.ndarray):
        if not target.flags.writeable:
            raise ValueError("output array is read-only")
    elif not isinstance(target, NArray):
        raise TypeError(f"{op_def.name}: out= must be an NArray or a NumPy array, got "
                        f"{type(target).__name__}")
    elif target._readonly:
        raise ValueError("assignment destination is read-only")
    if target.shape != spec.shape and not (
            op_def.elementwise and _broadcasts(spec.shape, target.shape)):
        raise ShapeError(f"{op_def.name}: out= has shape {target.shape}, the result has "
                         f"shape {spec.shape}")
    if target.dtype != spec.dtype and not np.can_cast(spec.dtype, target.dtype,
                                                        "same_kind"):
        raise DTypeError(f"Cannot cast {op_def.name} output from {spec.dtype!r} to "
                           f"{target.dtype!r} with casting rule 'same_kind'")


def _broadcasts(shape: tuple, target: tuple) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def _unaliased(op_def, inputs, outs) -> list:
    """``inputs``, with copies of those that read a written buffer through another view
    (``a[1:] += a[:-1]`` reads the old values, as in NumPy). An element-wise op reading
    exactly what it writes needs no copy."""
    written = {id(t._storage): t._view for t in outs}
    result = list(inputs)
    for i, x in enumerate(inputs):
        view = written.get(id(x._storage), False)
        if view is False or (op_def.elementwise and view == x._view):
            continue
        result[i] = build(COPY, [x])
    return result


def same_buffer(a: NArray, b: NArray) -> bool:
    """Whether two handles see the same elements of one storage (writing one into the
    other changes nothing)."""
    return a._storage is b._storage and a._view == b._view and a.dtype == b.dtype


# ---- array-likes --------------------------------------------------------------------------

def check_open(x: NArray) -> None:
    """MinervaError when ``x`` belongs to a runtime that was shut down (saying whether its
    value was computed)."""
    x._storage.engine.check_open(x._storage.current)


def to_narray(value, what: str = "operand", dtype=None) -> NArray:
    """``value`` as an NArray: NArrays pass (cast when ``dtype`` differs); NumPy arrays,
    lists and scalars are copied onto the current device; anything else is a TypeError.
    MinervaError for an NArray of a runtime that was shut down, DTypeError for a dtype
    minerva does not hold."""
    if dtype is not None:
        dtype = supported_dtype(dtype)
    if isinstance(value, NArray):
        if value._storage.engine.closed:  # its runtime was shut down: say why it is refused
            value._storage.engine.check_open(value._storage.current)
        if dtype is None or value.dtype == dtype:
            return value
        return build(registry.get("astype"), [value], {"dtype": dtype})
    return upload(host_array(value, what, dtype))


def host_array(value, what: str = "operand", dtype=None) -> np.ndarray:
    """``value`` (a list, tuple, scalar or NumPy array) as a NumPy array of a dtype minerva
    holds; TypeError for other objects, ShapeError for values NumPy refuses."""
    if isinstance(value, (dict, set)) or value is None and dtype is None:
        raise TypeError(f"{what}: expected an array, a list or a number, got "
                        f"{type(value).__name__}")
    if dtype is not None:
        dtype = supported_dtype(dtype)
    try:
        data = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ShapeError(f"{what}: cannot convert {type(value).__name__} to an array: "
                         f"{exc}") from None
    if not holds(data.dtype):
        raise DTypeError(f"{what}: unsupported dtype {data.dtype}: minerva arrays hold "
                         "numbers, bools, datetimes, timedeltas, fixed-width strings and "
                         "records of them, not Python objects")
    return data


UPLOADED_NOW = NUMERIC_KINDS + "SU"
"""The dtype kinds ``upload`` copies at once on ``run_new`` (a device that cannot hold
bytes or strings has no inline limit: the op's way raises its error)."""


def upload(data: np.ndarray) -> NArray:
    """A copy of host array ``data`` on the current device (the copy is taken now: into
    the new value's buffer at once on the engine's ``run_new`` where nothing records at
    the seam and the data are numbers, bytes or strings, else into the op's attribute)."""
    if not SEAM.hooks and data.dtype.kind in UPLOADED_NOW:
        system = Runtime.system or get_system()
        spec = ArraySpec(data.shape, data.dtype)
        storage = system.engine.run_new(FROM_HOST, {"data": data}, (), spec,
                                        system.current_device())
        if storage is not None:
            return NArray(storage, None, spec)
    return build(FROM_HOST, [], {"data": np.array(data, order="C", copy=True)})


def to_device(x: NArray, device_id) -> NArray:
    """``x`` on device ``device_id``: ``x`` itself when it lives there, else a new array
    holding its cached copy (a value moves at most once per device while it lives)."""
    system = running() or get_system()
    system.devices.get(device_id)
    if x.device == device_id:
        return x
    if x.dtype.kind not in NUMERIC_KINDS:
        check_device(x.dtype, system.devices.get(device_id))
    storage = system.engine.copy_to(x._storage, device_id, user_callsite())
    result = NArray(storage, x._view, x._spec)
    if SEAM.hooks:  # a copy, as the recorders see it (its gradient is the identity)
        SEAM.notify(COPY, EMPTY, (x,), result)
    return result


@contextlib.contextmanager
def device(device_id: int):
    """Run this thread's ops of a ``with`` block on ``device_id`` (``mv.device``); the
    thread's previous choice is restored on exit (other threads are not affected)."""
    system = running() or get_system()
    previous = system.chosen_device()
    system.set_device(device_id)
    try:
        yield device_id
    finally:
        system.set_device(previous)


@contextlib.contextmanager
def on_device(device_id):
    """Build this thread's ops of a ``with`` block on ``device_id`` (an id; ``None`` or
    NumPy's ``"cpu"``: the current device)."""
    if device_id is None or device_id == "cpu":
        yield
        return
    with device(device_id):
        yield


def placed(function):
    """``function`` taking a ``device=`` keyword (the array API's and NumPy 2's): its
    result is made on that device. Its signature shows the keyword, keyword-only and
    first of those, as NumPy's."""
    @functools.wraps(function)
    def wrapper(*args, device=None, **kwargs):
        if device is None:
            return function(*args, **kwargs)
        with on_device(device):
            return function(*args, **kwargs)
    wrapper.__signature__ = _with_device_keyword(inspect.signature(function))
    return wrapper


def _with_device_keyword(signature: inspect.Signature) -> inspect.Signature:
    """``signature`` with a keyword-only ``device=None`` before its other keyword-only
    parameters (and ``**kwargs``)."""
    params = list(signature.parameters.values())
    if "device" in signature.parameters:
        return signature
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)
    at = next((i for i, p in enumerate(params) if p.kind in kinds), len(params))
    params.insert(at, inspect.Parameter("device", inspect.Parameter.KEYWORD_ONLY,
                                        default=None))
    return signature.replace(parameters=params)


# ---- the runtime, as the face sees it ------------------------------------------------------

def current_device() -> int:
    """The id of the device this thread's new ops run on."""
    return (running() or get_system()).current_device()


def device_ids() -> list:
    """The ids of the devices created so far (device 0 is created if none is)."""
    system = running() or get_system()
    system.current_device()
    return [device.device_id for device in system.devices.all()]


def device_holds(dtype: np.dtype) -> bool:
    """Whether the current device holds arrays of ``dtype`` (a GPU device: numbers and
    bools only)."""
    if dtype.kind in NUMERIC_KINDS:
        return True
    system = running() or get_system()
    return dtype.kind in system.devices.table[system.current_device()].held_kinds


def default_dtype() -> np.dtype:
    """The dtype of new floating arrays when none is given (``float64``, as NumPy's, unless
    ``MINERVA_DEFAULT_DTYPE`` says otherwise)."""
    return get_system().config.default_dtype
