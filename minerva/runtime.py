"""Runtime functions of the public API: devices (``device``, the scoped switch, is the
seam's: ``minerva.builder.device``), synchronisation, statistics, shutdown."""
from __future__ import annotations

from minerva import system as _system
from minerva.builder import device
from minerva.common.errors import DeviceError
from minerva.dag.printer import dump
from minerva.narray import check_timeout


def init(**options) -> None:
    """Start the runtime now with options overriding ``MINERVA_*`` settings (``engine``,
    ``dispatchers``, ``mem_pool``, ``mem_limit``, ``max_pending``, ``virtual_gpus``,
    ``trace``, ``log``). Raises MinervaError if it is already running with other options."""
    _system.start(**options)


def create_cpu_device(threads: int | None = None) -> int:
    """A new CPU device with its own worker thread; returns its id. ``threads``: the
    threads its kernels use — BLAS threads, and row ranges of its big kernels run side by
    side (default: the cores shared among the CPU devices)."""
    return _system.get_system().devices.create_cpu_device(threads)


def create_gpu_device(ordinal: int = 0) -> int:
    """A new device on GPU ``ordinal``; returns its id. DeviceError without such a GPU."""
    return _system.get_system().devices.create_gpu_device(ordinal)


def get_gpu_device_count() -> int:
    """Number of GPUs minerva can use; 0 when CuPy or a driver is missing. Never raises."""
    try:
        return _system.get_system().devices.gpu_count()
    except Exception:  # documented: never raises
        return 0


def set_device(device_id: int) -> None:
    """Run this thread's later ops on ``device_id`` (each thread has its own current
    device; a thread that never chose one uses device 0)."""
    _system.get_system().set_device(device_id)


def current_device() -> int:
    """The id of the device this thread's new ops run on."""
    return _system.get_system().current_device()


def device_info(device_id: int) -> dict:
    """``kind`` ('cpu' or 'gpu'), ``ordinal``, ``name`` and memory figures of a device."""
    return _system.get_system().devices.get(device_id).info()


def wait_for_all(timeout: float | None = None) -> None:
    """Block until every issued op has finished; raise the first unreported failure."""
    check_timeout(timeout)
    system = _system.running()
    if system is not None:
        system.engine.wait_for_all(timeout)


def dag_stats() -> dict:
    """``n_op_nodes``, ``n_data_nodes``, ``n_pending``, ``n_completed_total`` of the DAG."""
    return _system.get_system().engine.stats()


_STAT_KEYS = ("in_use_bytes", "peak_bytes", "cached_bytes", "n_allocs", "n_frees",
              "n_pool_hits")


def memory_stats(dev: int | None = None) -> dict:
    """Memory figures of device ``dev``, or summed over every device when None."""
    system = _system.get_system()
    system.engine.flush_releases()
    if dev is not None:
        return system.devices.get(dev).memory_stats()
    per_device = [d.memory_stats() for d in system.devices.all()]
    total = {key: sum(s[key] for s in per_device) for key in _STAT_KEYS}
    limits = [s["limit_bytes"] for s in per_device]
    total["limit_bytes"] = None if not limits or None in limits else sum(limits)
    return total


def release_all(dev: int | None = None) -> int:
    """Return cached memory blocks of ``dev`` (every device when None) to the system."""
    system = _system.get_system()
    devices = system.devices.all() if dev is None else [system.devices.get(dev)]
    return sum(d.release_all() for d in devices)


def dump_dag(path_or_file, format: str = "dot", **options) -> None:
    """Write the live DAG now as ``dot``, ``text`` or ``json`` to a path or open file."""
    dump(_system.get_system(), path_or_file, format, **options)


def shutdown(timeout: float | None = _system.SHUTDOWN_TIMEOUT) -> None:
    """Finish pending work (cancel what is left after ``timeout``), stop every thread.
    The next use of minerva starts a fresh runtime."""
    _system.stop(timeout)


__all__ = ["init", "create_cpu_device", "create_gpu_device", "get_gpu_device_count",
           "set_device", "current_device", "device", "device_info", "wait_for_all",
           "dag_stats", "memory_stats", "release_all", "dump_dag", "shutdown",
           "DeviceError"]
