"""The device interface. A device runs ops on its own worker(s) or stream(s), owns a
DataStore, and reports every finished op to one listener callback. Devices know ops
through a few node fields only (``op``, ``attrs``, ``inputs[i].array``,
``outputs[i].spec``), never the scheduler or the DAG.
"""
from __future__ import annotations

import abc
import time
import traceback
from typing import Any, Callable

import numpy as np

from minerva.ops.copy import COPY

Listener = Callable[[Any, "BaseException | None"], None]


def detach_traceback(exc: BaseException) -> BaseException:
    """Keep the kernel's traceback as text and drop the frames: a stored error must not
    hold the caller's stack (and the arrays in it) alive."""
    tb = exc.__traceback__
    if tb is not None:
        exc.add_note("kernel traceback (most recent call last):\n"
                     + "".join(traceback.format_tb(tb)).rstrip())
        exc.__traceback__ = None
    return exc


class Device(abc.ABC):
    """One compute device: an id, an array module ``xp``, a store, and a way to run ops."""

    kind = "abstract"
    xp: Any = None
    output_stream: Any = None
    """The stream key kernels write their outputs on (None: a CPU device's one queue)."""

    def __init__(self, device_id: int, store, hooks, listener: Listener | None = None):
        self.device_id = device_id
        self.store = store
        self.hooks = hooks
        self.listener = listener
        self.track = f"{self.kind}{device_id}"
        # the device table's ``get``, set by the DeviceManager: finds a copy's source device
        self.lookup: Callable[[int], "Device"] | None = None

    @abc.abstractmethod
    def submit(self, op) -> None:
        """Run ``op`` asynchronously; call ``listener(op, exc)`` when it has finished."""

    @abc.abstractmethod
    def info(self) -> dict:
        """``kind``, ``ordinal``, ``name`` and memory figures of this device."""

    def run_inline(self, op) -> BaseException | None:
        """Run ``op`` now on the calling thread; the exception it raised, or None."""
        hooks = self.hooks
        hooks.op_started(op, self.device_id, self.track, time.perf_counter_ns())
        try:
            self.execute(op)
            exc = None
        except Exception as err:  # stored on the op's outputs by the engine
            exc = detach_traceback(err)
        hooks.op_finished(op, self.device_id, self.track, time.perf_counter_ns(), exc)
        return exc

    def execute(self, op) -> None:
        """Allocate the op's outputs from this device's store (for ``output_stream``) and
        run its kernel."""
        outputs = op.outputs
        for data in outputs:
            self.allocate(data, self.output_stream)
        arrays = [data.array for data in op.inputs]
        out = outputs[0].array if len(outputs) == 1 else tuple(d.array for d in outputs)
        if op.op is COPY and self._copy_in(op.inputs[0], out):
            return
        op.op.impl(self.xp, *arrays, out=out, **op.attrs)

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

    def to_host(self, array) -> np.ndarray:
        """A NumPy copy of an array of this device."""
        return np.array(array, copy=True)

    def memory_stats(self) -> dict:
        """This device's store statistics."""
        return self.store.stats()

    def release_all(self) -> int:
        """Return the store's cached blocks to the system."""
        return self.store.release_all()

    def shutdown(self, timeout: float | None = None) -> None:
        """Stop this device's threads (pending work is the engine's business)."""
