"""How a GPU device moves bytes: host to device, device to host, and between GPUs.

Every transfer a GPU device makes runs on its **copy stream**, so it overlaps the kernels of
its compute stream. The path depends on where the source lives:

=========  ===================================================================================
``h2d``    host (a CPU device's array, or ``mv.array`` data): copied into a pinned staging
           buffer, then an asynchronous host-to-device copy.
``d2h``    to the host (``to_numpy``, or a CPU device's copy op): an asynchronous
           device-to-host copy into a pinned buffer, waited for, then copied into the host
           array.
``d2d``    another device on the same physical GPU (virtual GPUs) or this one: a plain
           device-to-device copy.
``peer``   another physical GPU that this one can reach over peer access (NVLink or PCIe
           P2P, enabled on first use): one direct peer copy.
``staged`` another physical GPU without peer access: device-to-host on the *source's* copy
           stream into a pinned buffer, an event there that this copy stream waits for, then
           host-to-device here.
=========  ===================================================================================

Ordering: a copy of a value of this device that is only launched waits (on the GPU) for the
op that writes it (``GpuDevice.order_after``); a copy from another device waits on the event
of the op that wrote the source (which has completed: the scheduler starts cross-device
copies only then, so that wait is a formality that keeps the copy correct on its own).

Staging buffers: CuPy's pinned pool hands a buffer out again as soon as it is dropped, so a
buffer is put in its op's record (``Launched.keep``) *before* the copy using it is queued, and
kept until the op's event (and, for a staged copy, the hop on the source's stream) has
completed — also when queuing fails half-way. Sizes are rounded up (powers of two below
64 MiB) so the pinned pool serves later transfers of nearby sizes without new pinned
allocations, which synchronize the device.
"""
from __future__ import annotations

import threading

import numpy as np

COPY_STREAM = "copy"
ROUTES = ("h2d", "d2h", "d2d", "peer", "staged")
PINNED_MIN = 4096
PINNED_POW2_MAX = 64 << 20
PINNED_STEP = 8 << 20


def host_bytes(array: np.ndarray) -> np.ndarray:
    """The bytes of a host array as a flat ``uint8`` view (a contiguous copy if needed)."""
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def pinned_size(nbytes: int) -> int:
    """The size of the pinned buffer that serves a transfer of ``nbytes`` bytes."""
    if nbytes <= PINNED_MIN:
        return PINNED_MIN
    if nbytes <= PINNED_POW2_MAX:
        return 1 << (nbytes - 1).bit_length()
    return (nbytes + PINNED_STEP - 1) // PINNED_STEP * PINNED_STEP


class CopyPaths:
    """The copy paths of one GPU device (see the module docstring).

    ``_lock`` guards ``counts`` (transfers made, by route), which copy ops on the launcher
    and read-backs on other threads both update.
    """

    def __init__(self, device):
        self.device = device
        self.layer = device.layer
        self.counts = dict.fromkeys(ROUTES, 0)
        self._lock = threading.Lock()
        self._peers: dict[int, bool] = {}

    # ---- copy-stream ops -------------------------------------------------------------------

    def run(self, op, record) -> None:
        """Allocate the output of ``op`` (a ``copy`` or ``from_host``) on the copy stream and
        queue its transfer; host buffers it uses go to ``record.keep``."""
        (data,) = op.outputs
        self.device.allocate(data, COPY_STREAM)
        if op.op_def.name == "from_host":
            self.to_device(op.attrs["data"], data.array, record)
        else:
            self.copy_from(op.inputs[0], data.array, record)

    def copy_from(self, source, dst, record) -> None:
        """Queue the copy of data node ``source`` (on any device) into ``dst``."""
        src_device = self._source_device(source)
        route = self.route(src_device)
        if route == "h2d":
            self.to_device(source.array, dst, record)
            return
        self._count(route)
        nbytes = dst.nbytes
        if route == "staged":
            self._staged(src_device, source, dst, nbytes, record)
            return
        stream = self.device.streams[COPY_STREAM]
        self._order(src_device, source, COPY_STREAM, record)
        if nbytes == 0:
            return
        if route == "d2d":
            self.layer.copy_d2d(dst, source.array, nbytes, stream)
        else:
            self.layer.copy_peer(dst, self.device.physical, source.array,
                                 src_device.physical, nbytes, stream)

    def route(self, src_device) -> str:
        """The path a copy from ``src_device`` (None or a CPU device: the host) takes."""
        if src_device is None or src_device.kind != "gpu":
            return "h2d"
        if src_device.physical == self.device.physical:
            return "d2d"
        return "peer" if self._peer_ok(src_device.physical) else "staged"

    def to_device(self, host_array, dst, record) -> None:
        """Queue host array ``host_array`` into device array ``dst`` through a pinned
        buffer (kept in ``record``)."""
        self._count("h2d")
        src = host_bytes(host_array)
        nbytes = src.nbytes
        if nbytes == 0:
            return
        staging = self.staging(nbytes)
        record.keep.append(staging)
        staging[:] = src
        self.layer.copy_h2d(dst, staging, nbytes, self.device.streams[COPY_STREAM])

    def staging(self, nbytes: int) -> np.ndarray:
        """A pinned buffer of ``nbytes`` bytes (a view of a rounded-up one)."""
        return self.layer.pinned(pinned_size(nbytes))[:nbytes]

    def stage_flag(self, check, stream) -> tuple:
        """Queue the read-back of a device-side check ``(flag, error)`` on ``stream``:
        ``(host_bytes, error, flag)``, read once the op's event completed."""
        flag, error = check
        host = self.staging(max(flag.nbytes, 1))
        host[:] = 0
        self.layer.copy_d2h(host, flag, flag.nbytes, stream)
        return host, error, flag

    # ---- reading back to the host ----------------------------------------------------------

    def read_back(self, src, out: np.ndarray | None = None, event=None) -> np.ndarray:
        """Copy device array ``src`` to the host through a pinned buffer and wait for it;
        into ``out`` (contiguous, same bytes) or a new array. ``event``: the event of the
        op that wrote ``src``, waited for first."""
        self._count("d2h")
        host = np.empty(src.shape, src.dtype) if out is None else out
        nbytes = host.nbytes
        if nbytes == 0:
            return host
        layer = self.layer
        stream = self.device.streams[COPY_STREAM]
        staging = self.staging(nbytes)
        try:
            if event is not None:
                layer.wait(stream, event)
            layer.copy_d2h(staging, src, nbytes, stream)
            done = layer.new_event(self.device.physical)
            layer.record(done, stream)
            layer.synchronize(done)
        except Exception as err:
            self.device.hold([staging], (COPY_STREAM,))  # the copy may still run
            raise self.device.read_back_error(err, nbytes) from err
        except BaseException:  # interrupted while waiting
            self.device.hold([staging], (COPY_STREAM,))
            raise
        host.reshape(-1).view(np.uint8)[:] = staging
        return host

    # ---- helpers ---------------------------------------------------------------------------

    def _staged(self, src_device, source, dst, nbytes, record) -> None:
        """Device to pinned host buffer on the source's copy stream, then host to device
        here once the first half is done (the hop event is a fence of the buffer)."""
        if nbytes == 0:
            return
        layer = self.layer
        src_stream = src_device.streams[COPY_STREAM]
        staging = self.staging(nbytes)
        record.keep.append(staging)
        self._order(src_device, source, None, record, src_stream)
        record.fences.append(None)  # the end of the first half is not marked yet
        layer.copy_d2h(staging, source.array, nbytes, src_stream)
        hop = layer.new_event(src_device.physical)
        layer.record(hop, src_stream)
        record.fences[-1] = hop
        stream = self.device.streams[COPY_STREAM]
        layer.wait(stream, hop)
        layer.copy_h2d(dst, staging, nbytes, stream)

    def _order(self, src_device, source, stream_name, record, stream=None) -> None:
        """Order the transfer after the op that writes ``source``: on this device through
        the device's bookkeeping, from another device by waiting on its event."""
        if src_device is self.device and stream is None:
            self.device.order_after(source, stream_name, record)
            return
        event = src_device.event_of(source.block)
        if event is not None:
            self.layer.wait(stream or self.device.streams[stream_name], event)

    def _source_device(self, source):
        """The device holding ``source``; None for a host array outside any device table."""
        if source.device_id == self.device.device_id:
            return self.device
        lookup = self.device.lookup
        if lookup is not None:
            return lookup(source.device_id)
        if isinstance(source.array, np.ndarray):
            return None
        raise RuntimeError("a GPU copy from another device needs the device table "
                           "(device.lookup), which the DeviceManager sets")

    def _peer_ok(self, peer: int) -> bool:
        ok = self._peers.get(peer)
        if ok is None:
            ok = self._peers[peer] = bool(
                self.layer.enable_peer_access(self.device.physical, peer))
        return ok

    def _count(self, route: str) -> None:
        with self._lock:
            self.counts[route] += 1

    def snapshot(self) -> dict:
        """Transfers made so far, by route."""
        with self._lock:
            return dict(self.counts)
