"""The optional C accelerator of the lean path (``minerva._lean``), configured here.

An NArray operator (``x + 1.0``, ``x * y``, ``1.0 - x``, ``x < 2``, ``x += y``), a
matrix product (``x @ y``, ``np.dot``: ``product``), a reduction (``x.sum(axis=0)``:
``reduction``) and a basic-index write (``x[i] = v``: ``setitem``) run in C from the
call to the result when the operands are computed values (whole, or plain views) on a
CPU device and the op is small enough for the calling thread, while nothing listens at
the op-building seam: the same steps as ``builder.build`` → ``DirectPath.run_lean``, with
the shape rule's results cached per (op, input specs, scalar type or attributes). While a
trace records (the Recorder alone, ``HookBus.lean_trace``), the op appends its own
record, the tuple's fields the Recorder's ``op_finished`` makes, in a ``Record`` the
garbage collector does not count. Anything else — a pending input, a temporary to elide,
another listener, autograd, jit — goes to the Python function the C one stands in front
of, before anything has changed. In front of their Python twins too: ``Storage.__del__``
(a ``Finalizer``), ``PooledDataStore.free`` and ``alloc_array`` (``StoreMethod``: the
recent-block stack's O(1) paths, with their memory records), ``NArray.__getitem__``
(``Element``: ``x[i]``, ``x[i, j]`` of a whole computed value read at once, and views by
basic indices such as ``x[2]``, ``x[1:3, ::2]``), the ``T`` getter (``Transposed``), the
conversions ``float(s)``, ``int(s)``, ``bool(s)``, ``operator.index(s)`` (``ToFloat`` and
its siblings) and
``NArray.__array_ufunc__`` (``ArrayUfunc``: ``np.float64(h) * x``). The results, errors,
floating-point reports, memory figures and trace records are the Python path's; the test
suite runs on both (``MINERVA_ACCEL=0`` turns the accelerator off; without a C compiler
at install time there is none, and minerva runs the Python path).
"""
from __future__ import annotations

import importlib
import os
import threading

import numpy as np

from minerva.builder import ACCELERATOR, FROM_HOST, SCALAR_RESULT_OPS, SEAM
from minerva.common import callsite, fp_errors
from minerva.common.callsite import user_callsite
from minerva.common.hooks import HookBus
from minerva.current import Runtime
from minerva.dag.nodes import COMPLETED, DataNode, Storage, new_node_id
from minerva.dag.physical_dag import PhysicalDag
from minerva.device.base import Device, detach_traceback
from minerva.device.cpu.blas import BLAS
from minerva.narray import COPIED_SCALARS, HOST_READS, BaseLink, NArray
from minerva.ops import reductions, registry
from minerva.ops.dtypes import NUMERIC_KINDS
from minerva.ops.registry import ArraySpec, OpDef
from minerva.scheduler import state
from minerva.scheduler.direct import AHEAD_BYTES, DirectPath, direct_error
from minerva.scheduler.fields import EngineFields
from minerva.scheduler.releases import Releasing
from minerva.storage.base import Block
from minerva.storage.host import HostAllocator
from minerva.storage.pooled import PooledDataStore
from minerva.storage.strategies import GRANULE, round_granule
from minerva.tracing.recorder import ALLOC, FINISHED, FREE

try:
    _lean = importlib.import_module("minerva._lean")   # a compiled module, no imports
except ImportError:   # not compiled: the Python path alone
    _lean = None

ACTIVE = _lean is not None and fp_errors.EXTOBJ is not None \
    and os.environ.get("MINERVA_ACCEL", "1") != "0"
"""Whether operators take the C lean path."""


PRODUCT_MATMUL, PRODUCT_DOT = 1, 2
"""The C operator's kinds of matrix product (its ``product`` flag)."""

FLOAT_SCALARS = (np.float16, np.float32, np.float64, np.longdouble, np.complex64,
                 np.complex128, np.clongdouble)
"""NumPy scalar types an operator takes in C as it takes a Python float: ``binary_op``
builds them as scalars, and a shape rule reads their type alone."""
INT_SCALARS = tuple({np.dtype(code).type for code in "bBhHiIlLqQ"})
"""NumPy's integer scalar types: an index of them is read in C as the Python int NumPy
reads it as (``x[ix]``, ``x[ix] = v`` with ``ix`` from NumPy)."""


def failed(engine, op_def, spec, device, block, target, exc):
    """The output value of a lean op whose kernel raised ``exc`` (called from C, under
    the engine lock), as ``DirectPath.run_lean`` makes it: failed, its error naming the
    user's line."""
    out = state.settled_value(engine.dag, spec, device.device_id, True)
    block.label, out.block, out.array = out, block, target
    out.error = direct_error(op_def, detach_traceback(exc), out.node_id, device)
    engine._failures.append(out.error)
    return out


def failed_write(engine, op_def, written, device, exc):
    """The next version of storage ``written`` after a lean write whose kernel raised
    ``exc`` (called from C, under the engine lock), as ``DirectPath.run_lean`` makes it:
    failed, its error naming the user's line."""
    out = written.current = state.settled_write(engine.dag, written.current, True,
                                                user_callsite())
    out.error = direct_error(op_def, detach_traceback(exc), out.node_id, device)
    engine._failures.append(out.error)
    return out


def reported(errstate, op_def) -> None:
    """Report the floating-point errors a lean op's kernel met, at the user's line (called
    from C, after the engine lock)."""
    fp_errors.report(errstate, fp_errors.take_direct_records(), op_def.name,
                     user_callsite())


def _shared_ufunc(op_def, scalar_op):
    """NumPy's ufunc that both ops call (their ``impl.kernel_name``), where the
    accelerator is active; else None."""
    name = getattr(op_def.impl, "kernel_name", None)
    if not ACTIVE or name is None or getattr(scalar_op.impl, "kernel_name", None) != name:
        return None
    return getattr(np, name)


def operator(python, op_def, scalar_op, elides: bool, reverse: bool = False,
             swaps: bool = False):
    """NArray's operator ``python`` (over ``op_def``, or ``scalar_op`` with a Python
    scalar; with ``reverse`` a reflected one, ``1.0 - x``, whose scalar is on the left;
    with ``swaps`` a function ``f(x1, x2)`` that takes a scalar first and an array second
    as the reflected op, ``np.multiply(2.0, x)``), with its lean path in C where the
    accelerator is active and both ops call the same NumPy function; else ``python``
    itself."""
    ufunc = _shared_ufunc(op_def, scalar_op)
    if ufunc is None:
        return python
    return _lean.Operator(python, op_def, scalar_op, ufunc, elides, reverse, swaps=swaps)


def comparison(python, op_def, scalar_op):
    """NArray's comparison operator ``python`` (``x < y``, ``x == 0.5``) with its lean path
    in C where the accelerator is active and both ops call the same NumPy function: for
    numeric operands, and a Python int only against a float or complex array (``python``
    checks an int against an integer dtype's range); else ``python`` itself."""
    ufunc = _shared_ufunc(op_def, scalar_op)
    if ufunc is None:
        return python
    return _lean.Operator(python, op_def, scalar_op, ufunc, False, compares=True)


def in_place(python, name):
    """NArray's in-place operator ``python`` (``x += y``) of ufunc ``name``, with its lean
    path in C where the accelerator is active and both ops call the same NumPy function
    (a write into ``x``'s own buffer when its value is computed and held by ``x`` alone);
    else, or for ``name`` None, ``python`` itself."""
    if name is None:
        return python
    op_def, scalar_op = registry.get(name), registry.get(name + "_scalar")
    ufunc = _shared_ufunc(op_def, scalar_op)
    if ufunc is None:
        return python
    return _lean.Operator(python, op_def, scalar_op, ufunc, False, in_place=True)


def unary(python, op_def):
    """A one-operand function or operator ``python`` over ``op_def`` (``np.exp(x)``,
    ``-x``), with its lean path in C where the accelerator is active and the op's kernel
    is NumPy's ufunc of its ``kernel_name``; else ``python`` itself."""
    name = getattr(op_def.impl, "kernel_name", None)
    ufunc = getattr(np, name, None) if ACTIVE and name else None
    if not isinstance(ufunc, np.ufunc):
        return python
    return _lean.Operator(python, op_def, op_def, ufunc, False, unary=True)


def product(python, op_def, dot: bool = False):
    """A matrix product ``python`` over ``op_def`` (``matmul``: ``x @ y``,
    ``np.matmul(x, y)``; with ``dot``, ``x.dot(y)`` and ``np.dot(x, y)``, which are matmul
    where ``y`` has at most two axes), with its lean path in C where the accelerator is
    active: two arrays, the kernel NumPy's ``matmul`` under the device's BLAS thread
    count, held only when that needs no wait (``Device.try_hold_blas``); else ``python``
    itself."""
    if not ACTIVE:
        return python
    return _lean.Operator(python, op_def, op_def, np.matmul, False,
                          product=PRODUCT_DOT if dot else PRODUCT_MATMUL)


def reduction(python, name: str):
    """Reduction ``python`` (``sum``, ``mean`` ...; ``x.sum()``, ``np.mean(x, axis=0)``,
    ``x.max(1, keepdims=True)``: an NArray, an int axis or None, ``keepdims`` a bool, no
    other argument) with its lean path in C where the accelerator is active; else
    ``python`` itself."""
    if not ACTIVE:
        return python
    return _lean.Reduction(python, registry.get(name), reductions.numpy_kernel(name))


def setitem(python):
    """NArray's ``__setitem__`` ``python`` with its basic-index writes in C (``x[i] = 2.0``,
    ``x[1:-1, j] = y``: ints and slices into a computed value this storage alone holds, a
    float into a float array or an NArray broadcast into any numeric one, as ``fill`` and
    ``assign`` write them) where the accelerator is active; else ``python`` itself."""
    if not ACTIVE:
        return python
    return _lean.SetItem(python, registry.get("fill"), registry.get("assign"), np.ndarray.fill,
                         np.copyto)


def array_ufunc(python, calls: dict, scalars: frozenset):
    """NArray's ``__array_ufunc__`` ``python`` with its common call in C where the
    accelerator is active: ``np.float64(h) * x`` (a NumPy scalar of ``scalars`` first, an
    NArray second, no keywords) calls ``calls[ufunc]`` (minerva's call of that ufunc) with
    the two, as ``python``'s first branch does; else ``python`` itself."""
    if not ACTIVE:
        return python
    return _lean.ArrayUfunc(python, calls, scalars)


def element(python):
    """NArray's ``__getitem__`` ``python`` with its read of one element at once in C
    (``x[i]``, ``x[i, j]``: ints alone, one per axis, of a whole computed value) and its
    basic-index views (exact ints and slices, at most one per axis, while nothing records
    at the seam) where the accelerator is active; else ``python`` itself."""
    return _lean.Element(python) if ACTIVE else python


CONVERSIONS = {"float": "ToFloat", "int": "ToInt", "bool": "ToBool", "index": "ToIndex"}


def conversion(python, to: str):
    """NArray's ``__float__``, ``__int__``, ``__bool__`` or ``__index__`` (``python``,
    converting ``to`` that) with the one element of a whole computed CPU value read and
    converted in C where the accelerator is active; else ``python``."""
    return getattr(_lean, CONVERSIONS[to])(python) if ACTIVE else python


def filled(python, op_def, value):
    """``zeros``, ``ones`` or ``empty`` (``python``: ``op_def`` creation's fill op with
    ``value``, or its empty op with None) with a plain shape and numeric dtype made in C
    where the accelerator is active; else ``python``."""
    return _lean.Filled(python, op_def, value) if ACTIVE else python


def new_array(python):
    """``array`` (``python``) with ``array([a, b, c])`` of plain numbers made in C (NumPy's
    ``asarray`` of them copied into a new value on the lean path) where the accelerator
    is active; else ``python``."""
    return _lean.NewArray(python) if ACTIVE else python


def transposed(python):
    """NArray's ``T`` getter ``python`` with the view made in C (the axes reversed, while
    nothing records at the seam) where the accelerator is active; else ``python``."""
    return _lean.Transposed(python) if ACTIVE else python


def configure(elide_bytes: int) -> None:
    """Hand the runtime's classes and constants to the accelerator, where it is active
    (``elide_bytes``: from this size a Python operator may elide a temporary operand, so
    the C one leaves such operands to it)."""
    if not ACTIVE:
        return
    _lean.configure(
        NArray=NArray, Storage=Storage, DataNode=DataNode, ArraySpec=ArraySpec,
        Block=Block, OpDef=OpDef, BaseLink=BaseLink, Runtime=Runtime, SEAM=SEAM, new_node_id=new_node_id,
        extobj=fp_errors.EXTOBJ, decoded=fp_errors.DECODED,
        caller_state=fp_errors.caller_state,
        direct_records=fp_errors.DIRECT_RECORDS, numpy=np, failed=failed,
        reported=reported, failed_write=failed_write, numeric_kinds=NUMERIC_KINDS,
        float_scalars=FLOAT_SCALARS, int_scalars=INT_SCALARS, dtype=np.dtype,
        ndarray=np.ndarray,
        COMPLETED=COMPLETED,
        ahead_bytes=AHEAD_BYTES, elide_bytes=elide_bytes, release=Releasing.release,
        package_dir=callsite.PACKAGE_DIR, finished=FINISHED, alloc_tag=ALLOC, free_tag=FREE,
        PooledDataStore=PooledDataStore, HostAllocator=HostAllocator, Engine=EngineFields,
        PhysicalDag=PhysicalDag, HookBus=HookBus, Device=Device,
        round_granule=round_granule, granule=GRANULE,
        device_free=Device.free, element_now=DirectPath.element_now, host_reads=HOST_READS,
        copied_scalars=COPIED_SCALARS, blas=BLAS, scalar_result_ops=SCALAR_RESULT_OPS,
        from_host=FROM_HOST.twin(_lean.copy_into), asarray=np.asarray, lock=threading.Lock, **BLAS.guards())
    ACCELERATOR.run_op, ACCELERATOR.run_write = _lean.run_op, _lean.run_write
    ACCELERATOR.build_op = _lean.build_op
    if not isinstance(Storage.__dict__["__del__"], _lean.Finalizer):
        Storage.__del__ = _lean.Finalizer(Storage.__del__)
    for name in ("free", "alloc_array"):   # their O(1) paths in C
        python = PooledDataStore.__dict__[name]
        if not isinstance(python, _lean.StoreMethod):
            setattr(PooledDataStore, name, _lean.StoreMethod(python, name))
