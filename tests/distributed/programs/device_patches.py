"""The device edits proposed with minerva.distributed, applied here until they land (see
doc/distributed.md, "Device support"); each is skipped when the device has it already.

- ``CpuDevice.submit``: a deferred op (a collective) starts at once on the thread that
  hands it over — its kernel only posts a job — instead of waiting in the worker's queue
  behind older compute (served oldest first, it would keep gradient reductions from
  overlapping the backward pass).
- ``GpuDevice``: only for a GPU device that runs no deferred op at all (the launcher now
  starts them itself, after ordering the compute stream after their inputs).
"""
from __future__ import annotations

import inspect

from minerva.device.base import Device
from minerva.device.cpu.device import CpuDevice
from minerva.device.gpu.device import GpuDevice


def _starts_deferred(cls) -> bool:
    return "deferred" in inspect.getsource(cls.submit)


def _submit_starting_deferred(original):
    def submit(self, op):
        if op.op_def.deferred and self.cancelled is None:
            self._start_deferred(op)
            return
        original(self, op)
    submit.patched = True
    return submit


def _run_inline_waiting_deferred(original):
    def run_inline(self, op):
        if op.op_def.deferred:
            return Device.run_inline(self, op)
        return original(self, op)
    run_inline.patched = True
    return run_inline


def apply(cpu: bool = True) -> list[str]:
    """Apply the edits the devices lack (the CPU one only when ``cpu``); their names."""
    applied = []
    if "deferred" not in inspect.getsource(GpuDevice):  # the GPU device runs none yet
        if not hasattr(GpuDevice.submit, "patched"):
            GpuDevice.submit = _submit_starting_deferred(GpuDevice.submit)
            GpuDevice.run_inline = _run_inline_waiting_deferred(GpuDevice.run_inline)
        applied += ["GpuDevice.submit", "GpuDevice.run_inline"]
    if cpu and not _starts_deferred(CpuDevice) and not hasattr(CpuDevice.submit, "patched"):
        CpuDevice.submit = _submit_starting_deferred(CpuDevice.submit)
        applied.append("CpuDevice.submit")
    return applied
