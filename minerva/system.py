"""Wiring: one System holds the DAG, the engine, the devices and the hooks of a runtime.

The first use of the public API starts a System from ``MINERVA_*`` environment variables
(or from ``minerva.init(**options)``); ``minerva.shutdown()`` stops it and a later use starts
a fresh one. ``minerva.current`` holds the process's runtime (``Runtime``, ``get_system``,
``running``: this module re-exports them) and starts it through ``start``. A child made by
``fork`` starts with no runtime: what it inherited belongs to the parent
(``os.register_at_fork``).
"""
from __future__ import annotations

import atexit
import os
import threading

from minerva.common.config import Config
from minerva.common.errors import DeviceError, MinervaError
from minerva.common.hooks import HookBus
from minerva.common.logging import configure_logging, get_logger
from minerva.current import Runtime, get_system, running  # noqa: F401  (the process's runtime)
from minerva.dag.physical_dag import PhysicalDag
from minerva.device.cpu import blas
from minerva.device.manager import DeviceManager
from minerva.ops.copy import COPY
from minerva.scheduler.dag_scheduler import DagScheduler
from minerva.scheduler.naive import NaiveEngine
from minerva.tracing import check_trace_path, start_system_trace

log = get_logger("minerva.system")
SHUTDOWN_TIMEOUT = 120.0


class _ThreadDevice(threading.local):
    """The current device of each thread (None: the default device)."""

    device: int | None = None


class System:
    """A running minerva runtime.

    ``_lock`` guards the implicit creation of the first CPU device. The current device is
    per thread (``_local``): a thread that never chose one uses the default device, 0.
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
        self._local = _ThreadDevice()
        self._chosen = [False]   # whether any thread ever chose a device (read by C)
        self._lock = threading.Lock()
        self.tracer = None
        log.info("runtime_started", engine=config.engine, dispatchers=config.dispatchers)

    def _make_engine(self, config):
        if config.engine == "naive":
            return NaiveEngine(self.dag, self.devices, self.hooks, config.max_pending, COPY)
        return DagScheduler(self.dag, self.devices, self.hooks, config.max_pending, COPY,
                            config.dispatchers, config.dispatch)

    # ---- devices ----------------------------------------------------------------------

    def current_device(self) -> int:
        """The device this thread's new ops run on; creates CPU device 0 when none exists."""
        device = self._local.device
        if device is None:
            if not self.devices.table:
                with self._lock:
                    if not self.devices.table:
                        self.devices.create_cpu_device()
            device = 0
        return device

    def set_device(self, device_id) -> None:
        """Run this thread's later ops on ``device_id`` (DeviceError for no such device);
        None goes back to the default device."""
        if device_id is not None:
            self.devices.get(_as_device_id(device_id))
            self._chosen[0] = True
        self._local.device = device_id

    def chosen_device(self):
        """This thread's choice of device (None: the default), to restore later."""
        return self._local.device

    # ---- tracing ----------------------------------------------------------------------

    def start_trace(self, path: str, *options):
        """Record this runtime into the Chrome trace ``path`` (checked now)."""
        return start_system_trace(self, path, *options)

    def stop_trace(self) -> str | None:
        """Stop the current trace and write its file; its path (None when none was on)."""
        tracer = self.tracer
        return tracer.stop() if tracer is not None else None

    # ---- lifecycle --------------------------------------------------------------------

    def shutdown(self, timeout: float | None = SHUTDOWN_TIMEOUT) -> None:
        """Finish pending work (cancel what has not started after ``timeout``), write the
        trace, and stop every thread — whatever writing the trace does."""
        try:
            try:
                self.engine.shutdown(timeout)
            finally:  # after the engine: the trace sees the last ops end
                self.stop_trace()
        finally:
            self.devices.shutdown()
            log.info("runtime_stopped")


def _as_device_id(device_id) -> int:
    if isinstance(device_id, bool) or not isinstance(device_id, int):
        raise DeviceError(f"a device id is an int, got {device_id!r}")
    return device_id


def start(**options) -> System:
    """Start the runtime with ``MINERVA_*`` settings overridden by ``options``; an error
    if one is already running with other options."""
    with Runtime.lock:
        if Runtime.system is not None:
            if options:
                raise MinervaError("minerva is already running; call mv.shutdown() before "
                                   "mv.init(...) with new options")
            return Runtime.system
        config = Config.from_env(**options)
        if config.trace:
            _check_setting_path(config.trace)
        system = System(config)
        if config.trace:
            system.start_trace(config.trace)
        Runtime.system = system
        return system


def _check_setting_path(path: str) -> None:
    try:
        check_trace_path(path)
    except ValueError as exc:
        raise ValueError(f"bad value for MINERVA_TRACE={path!r}: {exc}") from None


def share_cores(n_processes: int) -> None:
    """``n_processes`` processes of this program share this host's cores (the ranks of
    ``minerva.distributed``): CPU devices get this process's part, the running runtime's
    devices re-balanced."""
    blas.share_cores(n_processes)
    system = Runtime.system
    if system is not None:
        system.devices.rebalance()


STOP_HOOKS: list = []
"""Called after every runtime stop (the communication thread of ``minerva.distributed``
stops there)."""


def add_stop_hook(hook) -> None:
    """Call ``hook()`` after every later runtime stop (once per hook)."""
    if hook not in STOP_HOOKS:
        STOP_HOOKS.append(hook)


def stop(timeout: float | None = SHUTDOWN_TIMEOUT) -> None:
    """Shut the running System down (no-op when none runs), then run the stop hooks.
    Ctrl-C while it waits for pending work cancels that work, lets running kernels finish,
    stops every thread and then raises the KeyboardInterrupt (see ``Engine.shutdown``)."""
    with Runtime.lock:
        system, Runtime.system = Runtime.system, None
    try:
        if system is not None:
            system.shutdown(timeout)
    finally:
        for hook in list(STOP_HOOKS):
            try:
                hook()
            except Exception:  # a hook must not keep the others (or shutdown) from running
                log.exception("stop_hook_failed", hook=repr(hook))


def _forget_parent_runtime() -> None:
    """In a forked child: the parent's runtime has no threads here; start afresh."""
    system = Runtime.system
    Runtime.system = None
    Runtime.lock = threading.Lock()
    if system is not None:
        system.engine.forget()


Runtime.start = start  # get_system() starts the process's runtime through this
os.register_at_fork(after_in_child=_forget_parent_runtime)
atexit.register(stop)
