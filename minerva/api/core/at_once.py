"""Index ops run at once by a twin (``OpDef.twin``) of ``take_index`` or ``put_index``
whose kernel takes the index as it is (the plans of ``minerva.api.core.masks`` and
``.picks``): on the C
lean path (``_lean.run_op``, ``run_write``) or else Python's ``Engine.run_lean``, on a CPU
device, while nothing records at the seam or in a trace (a trace shows the index's upload,
as the general way makes it). Each returns what was done, or None/False where the
general way of ``minerva.api.core.indexing`` must do it (nothing done then)."""
from __future__ import annotations

import numpy as np

from minerva.builder import ACCELERATOR, SEAM
from minerva.current import Runtime, get_system
from minerva.narray import NArray


def gather_now(plan):
    """A plan ``(twin, attrs, inputs, spec)`` run at once: ``twin`` over NArrays
    ``inputs`` into a new NArray of ``spec``; or None (also for no plan)."""
    if plan is None:
        return None
    twin, attrs, inputs, spec = plan
    system = Runtime.system or get_system()
    engine = system.engine
    if SEAM.hooks or engine.hooks.active:
        return None
    result = ACCELERATOR.run_op(twin, attrs, inputs, spec)
    if result is not None:
        return result
    storage = _on_host(engine, twin, attrs, inputs, spec, system.current_device())
    return None if storage is None else NArray(storage, None, spec)


def scatter_now(x: NArray, plan) -> bool:
    """A plan ``(twin, attrs, operands)`` run at once: ``twin`` over NArrays
    ``operands`` written into ``x``; whether it was (False also for no plan)."""
    if plan is None:
        return False
    twin, attrs, operands = plan
    engine = (Runtime.system or get_system()).engine
    if SEAM.hooks or engine.hooks.active:
        return False
    if ACCELERATOR.run_write(twin, attrs, operands, x) is not None:
        return True
    current = x._storage.current
    return _on_host(engine, twin, attrs, operands, current.spec, current.device_id,
                    x._storage, x._view) is not None


def _on_host(engine, twin, attrs, inputs, spec, device_id: int, storage=None,
             out_view=None):
    """``Engine.run_lean`` of ``twin`` over NArrays ``inputs`` on CPU device
    ``device_id`` (NumPy's arrays: the kernel reads host index arrays as they are), into
    a fresh output or ``storage``; the output's storage, or None (nothing done)."""
    if engine.devices.table[device_id].xp is not np:
        return None
    views = None
    if any(x._view is not None for x in inputs):
        views = [x._view for x in inputs]
    return engine.run_lean(twin, attrs, [x._storage for x in inputs], spec, device_id,
                           views, None, storage, out_view)
