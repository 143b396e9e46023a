"""The DeviceManager creates and owns every device of a runtime, each with its store."""
from __future__ import annotations

import threading

from minerva.common.errors import DeviceError
from minerva.common.logging import get_logger
from minerva.device import gpu  # imports cupy only when a GPU is asked for
from minerva.device.cpu.blas import BLAS, cores_for_devices
from minerva.device.cpu.device import CpuDevice
from minerva.storage import make_store
from minerva.storage.host import HostAllocator

log = get_logger("minerva.device")

INLINE_BYTES = 1 << 20
"""A CPU device's inline limit (``MINERVA_INLINE_BYTES`` unset) where it has cores beside
the caller's thread: the size from which it splits a kernel over its threads."""

CALLER_BYTES = 64 << 20
"""A CPU device's inline limit (``MINERVA_INLINE_BYTES`` unset) where the caller's thread
and the device share the cores (``auto_inline_limit``)."""

SHARED_CORES = 2
"""At most this many cores for the devices: one CPU device whose threads take them all
runs its ops on the caller up to ``CALLER_BYTES``."""


def auto_inline_limit(cores: int, threads: list) -> int:
    """The inline limit of every CPU device when ``MINERVA_INLINE_BYTES`` is unset, for
    ``cores`` cores of this process's devices and its CPU devices' thread counts
    ``threads``: ``CALLER_BYTES`` for one device whose threads take every one of at most
    ``SHARED_CORES`` cores (no core is free for the caller's thread, so handing an op to
    the device's worker overlaps nothing and costs a hand-off and a GIL switch: doc/
    benchpress.md), else ``INLINE_BYTES`` (devices side by side, or cores to spare)."""
    if len(threads) == 1 and cores <= SHARED_CORES and threads[0] >= cores:
        return CALLER_BYTES
    return INLINE_BYTES


class DeviceManager:
    """Creates CPU and GPU devices, hands them out by id, and shuts them down.

    ``_lock`` guards the device list during creation; lookups by id read a list that only
    ever grows, so they take no lock.
    """

    def __init__(self, config, hooks, listener=None):
        self.config = config
        self.hooks = hooks
        self.listener = listener
        self.table: list = []
        """Every device, indexed by id (grows only; hot paths index it directly)."""
        self._cpus: list = []
        self._lock = threading.Lock()
        self.reclaimer = None

    def create_cpu_device(self, threads: int | None = None) -> int:
        """A new CPU device with its own worker thread; its id. ``threads``: its BLAS
        threads (by default ``MINERVA_CPU_THREADS``, else the cores shared among the CPU
        devices that exist, re-balanced as devices are created)."""
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                    or threads < 1):
            raise ValueError(f"threads must be an int >= 1, got {threads!r}")
        with self._lock:
            device_id = len(self.table)
            store = self._make_store(HostAllocator(), device_id)
            device = CpuDevice(device_id, store, self.hooks, self.listener, len(self._cpus))
            device.fixed_threads = threads or self.config.cpu_threads
            self._cpus.append(device)
            self._balance()
            return self._add(device)

    def rebalance(self) -> None:
        """Share the cores again (after ``blas.share_cores`` changed how many are ours)."""
        with self._lock:
            self._balance()

    def _balance(self) -> None:
        """Share the cores among CPU devices without a fixed thread count, and set every
        CPU device's inline limit (``MINERVA_INLINE_BYTES``, else ``auto_inline_limit``)."""
        shared = [d for d in self._cpus if d.fixed_threads is None]
        fixed = sum(d.fixed_threads for d in self._cpus if d.fixed_threads is not None)
        cores = cores_for_devices()
        share = max(1, (cores - fixed) // max(1, len(shared)))
        for device in self._cpus:
            device.threads = device.fixed_threads or share
        limit = self.config.inline_bytes
        if limit is None:
            limit = auto_inline_limit(cores, [d.threads for d in self._cpus])
        for device in self._cpus:
            device.inline_limit = limit
        log.info("cpu_threads", threads=[d.threads for d in self._cpus],
                 per_thread=BLAS.per_thread, inline_limit=limit)

    def create_gpu_device(self, ordinal: int) -> int:
        """A new device on GPU ``ordinal`` (or a virtual GPU); its id."""
        with self._lock:
            device_id = len(self.table)
            device = gpu.create_gpu_device(device_id, ordinal, self.config, self.hooks,
                                           self.listener, self._make_store)
            return self._add(device)

    def gpu_count(self) -> int:
        """Number of usable GPUs (logical ones under MINERVA_VIRTUAL_GPUS); 0 without CuPy."""
        return gpu.gpu_device_count(self.config)

    def get(self, device_id):
        """The device with id ``device_id``; DeviceError for an unknown id."""
        try:
            if device_id >= 0:
                return self.table[device_id]
        except (IndexError, TypeError):
            pass
        raise DeviceError(f"no device with id {device_id!r}; created devices: "
                          f"{list(range(len(self.table)))}")

    def __len__(self) -> int:
        return len(self.table)

    def all(self) -> list:
        """Every device, in id order."""
        return list(self.table)

    def shutdown(self) -> None:
        """Stop every device's threads (each after its queued ops, which a cancelling
        shutdown has already failed) and undo a process-wide BLAS limit."""
        for device in self.table:
            device.shutdown()
        BLAS.restore()

    def _add(self, device) -> int:
        device.lookup = self.get
        self.table.append(device)
        log.info("device_created", device_id=device.device_id, kind=device.kind)
        return device.device_id

    def _make_store(self, allocator, device_id: int):
        store = make_store(allocator, self.config.mem_pool, self.config.mem_limit, device_id,
                           self.hooks)
        if self.reclaimer is not None:
            store.set_reclaimer(self.reclaimer)
        return store
