"""Test doubles for the scheduler seams: devices that run inline or hold ops at a gate,
a device table, and a hook listener that records the order of events."""
from __future__ import annotations

import threading

from minerva.common.hooks import EVENTS, HookBus
from minerva.dag.physical_dag import PhysicalDag
from minerva.device.base import Device
from minerva.ops.copy import COPY
from minerva.scheduler.dag_scheduler import DagScheduler
from minerva.storage import make_store
from minerva.storage.host import HostAllocator


class InlineDevice(Device):
    """Runs each op at once on the thread that submits it, then reports completion."""

    kind = "fake"

    def __init__(self, device_id, hooks, listener=None):
        import numpy
        self.xp = numpy
        super().__init__(device_id, make_store(HostAllocator(), hooks=hooks), hooks, listener)

    def submit(self, op):
        self.listener(op, self.run_inline(op))

    def info(self):
        return {"kind": "fake", "ordinal": self.device_id, "name": "inline"}


class GatedDevice(InlineDevice):
    """Holds every submitted op until the test opens its gate with ``finish(op)``."""

    def __init__(self, device_id, hooks, listener=None):
        super().__init__(device_id, hooks, listener)
        self.held = []
        self.arrived = threading.Condition()

    def submit(self, op):
        with self.arrived:
            self.held.append(op)
            self.arrived.notify_all()

    def wait_held(self, n, timeout=10.0):
        """Block until ``n`` ops are held (False on timeout)."""
        with self.arrived:
            return self.arrived.wait_for(lambda: len(self.held) >= n, timeout)

    def finish(self, op):
        """Run a held op and report it."""
        self.held.remove(op)
        self.listener(op, self.run_inline(op))


class DeviceTable:
    """The smallest stand-in for a DeviceManager: devices by id."""

    def __init__(self, devices):
        self.devices = devices
        self.table = devices

    def get(self, device_id):
        return self.devices[device_id]

    def all(self):
        return list(self.devices)


class EventLog:
    """A hook listener that records ``(event, node_id)`` for every event."""

    def __init__(self):
        self.events = []
        for event in EVENTS:
            setattr(self, event, self._recorder(event))

    def _recorder(self, event):
        def record(*args):
            if event == "dispatch":
                self.events.append((args[0].name, getattr(args[1], "node_id", None)))
                return
            node = args[1] if event in ("mem_alloc", "mem_free") else args[0]
            self.events.append((event, getattr(node, "node_id", node)))
        return record

    def of(self, *events):
        """The recorded events of the given kinds, in order."""
        return [e for e in self.events if e[0] in events]


def build_scheduler(device_kinds, n_dispatchers=0, max_pending=1 << 20, dispatch="queued"):
    """A DagScheduler over fake devices (``'inline'`` or ``'gated'``); with no dispatcher
    threads and queued dispatch the test pumps it with ``run_pending()``.
    Returns (scheduler, devices, log)."""
    hooks, log = HookBus(), EventLog()
    hooks.subscribe(log)
    kinds = {"inline": InlineDevice, "gated": GatedDevice}
    devices = [kinds[kind](i, hooks) for i, kind in enumerate(device_kinds)]
    scheduler = DagScheduler(PhysicalDag(), DeviceTable(devices), hooks, max_pending, COPY,
                             n_dispatchers, dispatch)
    for device in devices:
        device.listener = scheduler.on_device_complete
        device.store.set_reclaimer(scheduler.reclaim)
    scheduler.held = {}
    return scheduler, devices, log


def submit(scheduler, op_def, attrs, inputs, out_specs, device, created_at):
    """Register an op over data nodes ``inputs`` (made by earlier ``submit`` calls) on a
    scheduler from ``build_scheduler``; its output data nodes, each held by a storage (as
    a user's handle would hold it) until the test drops ``scheduler.held``."""
    storages = [scheduler.held[data.node_id] for data in inputs]
    outs = scheduler.submit(op_def, attrs, storages, out_specs, device, created_at)
    for storage in outs:
        scheduler.held[storage.current.node_id] = storage
    return [storage.current for storage in outs]
