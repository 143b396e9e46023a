"""The device interface. A device runs ops on its own worker(s) or stream(s), owns a
DataStore, and reports every finished op to one listener callback. Devices know ops
through a few node fields only (``op_def``, ``attrs``, ``inputs[i].array``, ``views``,
``outputs[i].spec`` and ``.base``), never the scheduler or the DAG.
"""
from __future__ import annotations

import abc
import functools
import threading
import time
from typing import Any, Callable

import numpy as np

from minerva.common import fp_errors
from minerva.device.reports import LAUNCHED_REPORT, detach_traceback  # noqa: F401
from minerva.ops.copy import COPY

Listener = Callable[[Any, "BaseException | None"], Any]


class Device(abc.ABC):
    """One compute device: an id, an array module ``xp``, a store, and a way to run ops.

    Per instance (slots, which the C lean path reads by offset): ``device_id``, ``store``,
    ``hooks``, ``listener``, ``track`` and ``caller_track`` (the trace's tracks),
    ``lookup``; ``cancelled`` — set by ``cancel``: the error ops handed to this device
    from then on fail with (None until then); ``inline_limit`` — ops touching at most
    this many bytes whose inputs are computed run at once on the thread that issues them
    (``run_direct``: the engine's direct path); 0 (the default): never."""

    __slots__ = ("device_id", "store", "hooks", "listener", "track", "caller_track",
                 "lookup", "cancelled", "inline_limit")

    kind = "abstract"
    xp: Any = None
    held_kinds = "biufc"
    """The dtype kinds its arrays may have (``ops.dtypes``): numbers and bools (CuPy's)."""
    whole_limit = 0
    """Up to ``inline_limit``: an op the device cuts into row ranges by its own rule
    (``OpDef.row_split``, whose numbers may depend on the cut) runs on the issuing thread,
    whole, only when it touches at most this many bytes (where the device never cuts it),
    so its numbers are those of the device's thread."""
    output_stream: Any = None
    """The stream key kernels write their outputs on (None: a CPU device's one queue)."""
    checks_fp_errors = False
    """Whether kernels run under the floating-point error state their op was issued with
    (``common.fp_errors``): NumPy reports such errors; CuPy's kernels do not."""
    launches_ahead = False
    """Whether this device orders its own work (a GPU's streams) and reports ops launched
    (``LAUNCHED_REPORT``) before they are done; then the engine urges it while a thread
    waits (``urge``), and expedites it when a value it launched is needed elsewhere."""

    def __init__(self, device_id: int, store, hooks, listener: Listener | None = None):
        self.device_id = device_id
        self.store = store
        self.hooks = hooks
        self.listener = listener
        self.cancelled: BaseException | None = None
        self.inline_limit = 0
        self.track = f"{self.kind}{device_id}"
        self.caller_track = self.track + ":caller"   # tiny ops run on the caller's thread
        # the device table's ``get``, set by the DeviceManager: finds a copy's source device
        self.lookup: Callable[[int], "Device"] | None = None

    @abc.abstractmethod
    def submit(self, op) -> None:
        """Run ``op`` asynchronously; call ``listener(op, exc)`` when it has finished."""

    @abc.abstractmethod
    def info(self) -> dict:
        """``kind``, ``ordinal``, ``name`` and memory figures of this device."""

    def run_inline(self, op, track: str | None = None) -> BaseException | None:
        """Run ``op`` now on the calling thread; the exception it raised, or None (a
        deferred op is waited for). The trace shows it on ``track`` (the device's own by
        default)."""
        hooks = self.hooks
        if hooks.active:
            hooks.op_started(op, self.device_id, track or self.track, time.perf_counter_ns())
        try:
            if op.op_def.deferred:
                exc = self._wait_deferred(op)
            elif self.checks_fp_errors and op.errstate is not None:
                self._execute_checked(op)
                exc = None
            else:
                self.execute(op)
                exc = None
        except Exception as err:  # stored on the op's outputs by the engine
            exc = detach_traceback(err)
        if hooks.active:
            hooks.op_finished(op, self.device_id, track or self.track,
                              time.perf_counter_ns(), exc)
        return exc

    def _execute_checked(self, op) -> None:
        """``execute`` under the op's floating-point error state, reporting what it met."""
        fp_errors.run_under(op.errstate, self.execute, (op,), op.op_def.name, op.created_at)

    def _start_deferred(self, op) -> None:
        """Start a deferred op (``OpDef.deferred``): its kernel hands the work to another
        thread and returns; that thread reports the op finished through ``done``."""
        hooks = self.hooks
        if hooks.active:
            hooks.op_started(op, self.device_id, self.track, time.perf_counter_ns())

        def done(exc=None):
            if hooks.active:
                hooks.op_finished(op, self.device_id, self.track, time.perf_counter_ns(),
                                  exc)
            self.listener(op, exc)
        try:
            self.execute(op, done)
        except Exception as err:  # it never started: report it failed at once
            done(detach_traceback(err))

    def _wait_deferred(self, op):
        finished, outcome = threading.Event(), []

        def done(exc=None):
            outcome.append(exc)
            finished.set()
        self.execute(op, done)
        finished.wait()
        return outcome[0]

    def run_direct(self, op_def, attrs, args, views, outs, out_view=None):
        """Run a tiny op that has no op node (``scheduler.direct``) on the calling thread
        into data nodes ``outs``: fresh buffers, or for one output the buffer of the
        version it overwrites (``out.base``), seen through ``out_view``. Returns the
        exception it raised, or None. Its kernel is called directly: a tiny op is far
        below any size a CPU device splits."""
        if self.cancelled is not None:
            return self.cancelled
        try:
            target = self._direct_target(outs[0], out_view) if len(outs) == 1 else \
                tuple(self._direct_target(out, None) for out in outs)
            arrays = [data.array for data in args]
            if views is not None:
                arrays = [a if v is None else self.view(a, v) for a, v in zip(arrays, views)]
            if not self.checks_fp_errors:
                op_def.impl(self.xp, *arrays, out=target, **attrs)   # tiny: never split
                return None
            created_at = outs[0].created_at
            if op_def.blas:
                fp_errors.run_under(fp_errors.CURRENT, self.run_tiny_kernel,
                                    (op_def, arrays, target, attrs), op_def.name,
                                    created_at)
            else:   # the kernel itself, one call less
                fp_errors.run_under(fp_errors.CURRENT, op_def.impl, (self.xp, *arrays),
                                    op_def.name, created_at, dict(attrs, out=target))
        except Exception as err:  # stored on the output by the engine
            return detach_traceback(err)
        return None

    def _direct_target(self, out, out_view):
        """The array a direct op writes: ``out``'s fresh buffer or its base's, through
        ``out_view``."""
        base = out.base
        if base is not None:
            target = base.array
        else:
            spec = out.spec
            block = self.store.alloc(spec.nbytes, self.output_stream)
            block.label = out
            out.block = block
            target = out.array = self.store.array(block, spec.shape, spec.dtype)
        return target if out_view is None else self.view(target, out_view)

    def try_hold_blas(self) -> bool:
        """Make this thread's BLAS calls use this device's thread count until
        ``release_blas()``, when that needs no wait; False otherwise (nothing held). Here:
        nothing to hold."""
        return True

    def release_blas(self) -> None:
        """End ``try_hold_blas``."""

    def run_tiny_kernel(self, op_def, arrays, out, attrs) -> None:
        """The kernel of a direct op (far below any size a CPU device splits)."""
        op_def.impl(self.xp, *arrays, out=out, **attrs)

    def urge(self, delta: int) -> None:
        """A thread starts (+1) or stops (-1) waiting for this device's work: settle
        completions promptly meanwhile (devices that launch ahead; a no-op here)."""

    def expedite(self) -> None:
        """Settle the work launched so far soon (devices that launch ahead)."""

    def flush_launched(self, timeout: float | None) -> bool:
        """Settle the work launched so far and wait for it (up to ``timeout``); True when
        there was any (devices that launch ahead; nothing here)."""
        return False

    def cancel(self, error: BaseException) -> None:
        """Report every op handed to this device from now on as failed with ``error``,
        without running it (shutdown cancels what has not started)."""
        self.cancelled = error

    def execute(self, op, done=None) -> None:
        """Give the op's outputs their buffers (a fresh block from this device's store for
        ``output_stream``, or the buffer of the version a write overwrites) and run its
        kernel on its inputs' views (a deferred op's kernel also gets ``done``)."""
        arrays, out = self._operands(op)
        op_def = op.op_def
        if op_def is COPY and self._copy_in(op.inputs[0], out):
            return
        if done is not None:
            op_def.impl(self.xp, *arrays, out=out, done=done, **op.attrs)
            return
        self.run_kernel(op_def, arrays, out, self.kernel_attrs(op))

    def kernel_attrs(self, op) -> dict:
        """The attributes ``op``'s kernel gets: its own, and for a jit replay
        (``OpDef.nested``) this device (its steps run through its interface) and, while a
        trace records, a callback timing each step."""
        if not op.op_def.nested:
            return op.attrs
        if self.hooks.active:
            return dict(op.attrs, device=self,
                        trace=functools.partial(self._inner_op, op.node_id))
        return dict(op.attrs, device=self)

    def _inner_op(self, parent_id: int, name: str, created_at, t0_ns: int, t1_ns: int):
        self.hooks.inner_op(self.device_id, parent_id, name, created_at, t0_ns, t1_ns)

    def _operands(self, op) -> tuple:
        """The kernel's input arrays (through their views) and its output array(s)."""
        inputs = op.inputs
        arrays = [data.array for data in (inputs if op.n_args == len(inputs)
                                          else inputs[:op.n_args])]
        if op.views is not None:
            view = self.view
            arrays = [a if v is None else view(a, v) for a, v in zip(arrays, op.views)]
        if len(op.outputs) != 1:
            return arrays, self._out_arrays(op)
        out = self._out_array(op.outputs[0])
        if op.out_views is not None and op.out_views[0] is not None:
            out = self.view(out, op.out_views[0])
        return arrays, out

    def run_kernel(self, op_def, arrays, out, attrs) -> None:
        """Run ``op_def``'s kernel on ``arrays`` into ``out`` (a CPU device may cut it
        into row ranges run side by side)."""
        op_def.impl(self.xp, *arrays, out=out, **attrs)

    def fusion_backend(self):
        """The compiler of this device's fused kernels for jit plans
        (``minerva.jit.fusion``: ``compile(spec)``, ``compile.exact(out_spec)``), or None:
        plans on this device fuse nothing (here)."""
        return None

    def routes_kernel(self, op_def, out_nbytes: int) -> bool:
        """Whether a jit replay's step of ``op_def`` (an output of ``out_nbytes``) must run
        through ``run_kernel`` rather than call its kernel (never, here)."""
        return False

    def _out_arrays(self, op) -> tuple:
        outs = [self._out_array(data) for data in op.outputs]
        if op.out_views is not None:
            view = self.view
            outs = [a if v is None else view(a, v) for a, v in zip(outs, op.out_views)]
        return tuple(outs)

    def _out_array(self, data):
        base = data.base
        if base is not None:
            return base.array
        spec = data.spec
        block = self.store.alloc(spec.nbytes, self.output_stream)
        block.label = data
        data.block = block
        array = data.array = self.store.array(block, spec.shape, spec.dtype)
        return array

    def view(self, array, view):
        """``view`` (shape, strides, offset in bytes) of a whole buffer ``array``, read as
        the dtype its strides carry when they do (``ops.views.ReadAs``: ``x.view(dtype)``)."""
        shape, strides, offset = view
        dtype = getattr(strides, "dtype", array.dtype)
        if 0 in shape:  # no element to see: any place will do
            return np.ndarray(shape, dtype, array, 0)
        return np.ndarray(shape, dtype, array, offset, strides)

    def _copy_in(self, source, out) -> bool:
        """Let the device holding data node ``source`` copy it into ``out`` its own way (a
        GPU reads back through pinned memory on its copy stream); False: use the copy op."""
        lookup = self.lookup
        if lookup is None or source.device_id == self.device_id:
            return False
        return lookup(source.device_id).copy_out(source, out)

    def copy_out(self, data, out) -> bool:
        """Copy data node ``data`` of this device into ``out``, an array of another device,
        now; False when this device has no special way (the copy op's kernel does it)."""
        return False

    def allocate(self, data, stream=None) -> None:
        """Give ``data`` a block of this device's store and an array view of it."""
        spec = data.spec
        block = self.store.alloc(spec.nbytes, stream)
        block.label = data
        data.block = block
        data.array = self.store.array(block, spec.shape, spec.dtype)

    def free(self, block) -> None:
        """Return a dead value's block to the store."""
        block.label = ""
        self.store.free(block)

    def to_host(self, array, view=None) -> np.ndarray:
        """A NumPy copy of a whole buffer ``array`` of this device, or of its ``view``."""
        if view is not None:
            array = self.view(array, view)
        return np.array(array, copy=True)

    def memory_stats(self) -> dict:
        """This device's store statistics."""
        return self.store.stats()

    def release_all(self) -> int:
        """Return the store's cached blocks to the system."""
        return self.store.release_all()

    def shutdown(self, timeout: float | None = None) -> None:
        """Stop this device's threads (pending work is the engine's business)."""
