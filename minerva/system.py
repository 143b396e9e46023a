"""Wiring: one System holds the DAG, the engine, the devices and the hooks of a runtime.

The first use of the public API starts a System from ``MINERVA_*`` environment variables
(or from ``minerva.init(**options)``); ``minerva.shutdown()`` stops it and a later use starts
a fresh one.
"""
from __future__ import annotations

import atexit
import threading

from minerva.common.callsite import user_callsite
from minerva.common.config import Config
from minerva.common.errors import DeviceError, MinervaError
from minerva.common.hooks import HookBus
from minerva.common.logging import configure_logging, get_logger
from minerva.dag.physical_dag import PhysicalDag
from minerva.device.manager import DeviceManager
from minerva.ops.copy import COPY
from minerva.scheduler.dag_scheduler import DagScheduler
from minerva.scheduler.naive import NaiveEngine

log = get_logger("minerva.system")
SHUTDOWN_TIMEOUT = 120.0


class System:
    """A running minerva runtime.

    ``_lock`` guards the choice of the current device (and the implicit creation of the
    first CPU device).
    """

    def __init__(self, config: Config):
        configure_logging(config.log)
        self.config = config
        self.hooks = HookBus()
        self.dag = PhysicalDag()
        self.devices = DeviceManager(config, self.hooks)
        self.engine = self._make_engine(config)
        self.devices.listener = self.engine.on_device_complete
        self.devices.reclaimer = self.engine.reclaim
        self._current: int | None = None
        self._lock = threading.Lock()
        self.tracer = None
        log.info("runtime_started", engine=config.engine, dispatchers=config.dispatchers)

    def _make_engine(self, config):
        if config.engine == "naive":
            return NaiveEngine(self.dag, self.devices, self.hooks, config.max_pending)
        return DagScheduler(self.dag, self.devices, self.hooks, config.max_pending,
                            config.dispatchers, config.dispatch)

    # ---- devices ----------------------------------------------------------------------

    def current_device(self) -> int:
        """The device new ops run on; creates CPU device 0 when there is none."""
        current = self._current
        if current is None:
            with self._lock:
                if self._current is None:
                    if not len(self.devices):
                        self.devices.create_cpu_device()
                    self._current = 0
                current = self._current
        return current

    def set_device(self, device_id: int) -> None:
        """Run later ops on ``device_id`` (DeviceError when there is no such device)."""
        self.devices.get(_as_device_id(device_id))
        self._current = device_id

    # ---- ops --------------------------------------------------------------------------

    def run_op(self, op_def, inputs: list, attrs: dict, out_specs) -> list:
        """Register ``op_def`` over data nodes ``inputs`` on the current device, copying
        inputs that live elsewhere; the output data nodes (one handle each)."""
        device_id = self._current
        if device_id is None:
            device_id = self.current_device()
        created_at = user_callsite()
        for data in inputs:
            if data.device_id != device_id:
                inputs = [d if d.device_id == device_id else
                          self.copy_to(d, device_id, created_at) for d in inputs]
                break
        return self.engine.submit(op_def, attrs, inputs, out_specs, device_id, created_at)

    def copy_to(self, data, device_id: int, created_at=None):
        """``data``'s copy on ``device_id``, made at most once while ``data`` lives."""
        copies = data.copies
        cached = copies.get(device_id) if copies else None
        if cached is not None:
            return cached
        self.devices.get(device_id)
        created_at = created_at or user_callsite()
        (copy,) = self.engine.submit(COPY, {}, [data], [data.spec], device_id, created_at)
        copy.copy_of = data
        if data.copies is None:
            data.copies = {}
        data.copies[device_id] = copy
        return copy

    # ---- lifecycle --------------------------------------------------------------------

    def shutdown(self, timeout: float | None = SHUTDOWN_TIMEOUT) -> None:
        """Finish pending work, stop tracing, and stop every thread."""
        self.engine.shutdown(timeout)
        if self.tracer is not None:  # after the engine: the trace sees the last ops end
            self.tracer.stop()
        self.devices.shutdown(timeout)
        log.info("runtime_stopped")


def _as_device_id(device_id) -> int:
    if isinstance(device_id, bool) or not isinstance(device_id, int):
        raise DeviceError(f"a device id is an int, got {device_id!r}")
    return device_id


_SYSTEM: System | None = None
_START_LOCK = threading.Lock()


def get_system() -> System:
    """The running System, started from the environment on first use."""
    system = _SYSTEM
    if system is None:
        system = start()
    return system


def start(**options) -> System:
    """Start the runtime with ``MINERVA_*`` settings overridden by ``options``; an error
    if one is already running."""
    global _SYSTEM
    with _START_LOCK:
        if _SYSTEM is not None:
            if options:
                raise MinervaError("minerva is already running; call mv.shutdown() before "
                                   "mv.init(...) with new options")
            return _SYSTEM
        _SYSTEM = System(Config.from_env(**options))
        if _SYSTEM.config.trace:
            from minerva.trace import start_system_trace
            start_system_trace(_SYSTEM, _SYSTEM.config.trace)
        return _SYSTEM


def running() -> System | None:
    """The running System, or None."""
    return _SYSTEM


def stop(timeout: float | None = SHUTDOWN_TIMEOUT) -> None:
    """Shut the running System down (no-op when none runs)."""
    global _SYSTEM
    with _START_LOCK:
        system, _SYSTEM = _SYSTEM, None
    if system is not None:
        system.shutdown(timeout)


atexit.register(stop)
