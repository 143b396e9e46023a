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

Before reading another device's value the copy stream waits on the event of the op that
wrote it. (The scheduler only starts a copy after its source completed, so the wait is a
formality today; it keeps the copy correct on its own.) Staging buffers are kept until the
copy's event completed.
"""
from __future__ import annotations

import threading

import numpy as np

COPY_STREAM = "copy"
ROUTES = ("h2d", "d2h", "d2d", "peer", "staged")


def host_bytes(array: np.ndarray) -> np.ndarray:
    """The bytes of a host array as a flat ``uint8`` view (a contiguous copy if needed)."""
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


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

    def run(self, op):
        """Allocate the output of ``op`` (a ``copy`` or ``from_host``) on the copy stream and
        queue its transfer; what must stay alive until the op's event completes."""
        (data,) = op.outputs
        self.device.allocate(data, COPY_STREAM)
        if op.op_def.name == "from_host":
            return self.to_device(op.attrs["data"], data.array)
        return self.copy_from(op.inputs[0], data.array)

    def copy_from(self, source, dst):
        """Queue the copy of data node ``source`` (on any device) into ``dst``."""
        src_device = self._source_device(source)
        route = self.route(src_device)
        if route == "h2d":
            return self.to_device(source.array, dst)
        self._count(route)
        stream = self.device.streams[COPY_STREAM]
        nbytes = dst.nbytes
        if route == "staged":
            return self._staged(src_device, source, dst, nbytes)
        self._wait_for(src_device, source, stream)
        if nbytes == 0:
            return None
        if route == "d2d":
            self.layer.copy_d2d(dst, source.array, nbytes, stream)
        else:
            self.layer.copy_peer(dst, self.device.physical, source.array,
                                 src_device.physical, nbytes, stream)
        return None

    def route(self, src_device) -> str:
        """The path a copy from ``src_device`` (None or a CPU device: the host) takes."""
        if src_device is None or src_device.kind != "gpu":
            return "h2d"
        if src_device.physical == self.device.physical:
            return "d2d"
        return "peer" if self._peer_ok(src_device.physical) else "staged"

    def to_device(self, host_array, dst):
        """Queue host array ``host_array`` into device array ``dst`` through a pinned
        buffer; the buffer (to keep until the copy completed)."""
        self._count("h2d")
        src = host_bytes(host_array)
        nbytes = src.nbytes
        if nbytes == 0:
            return None
        staging = self.layer.pinned(nbytes)
        staging[:] = src
        self.layer.copy_h2d(dst, staging, nbytes, self.device.streams[COPY_STREAM])
        return staging

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
        layer, physical = self.layer, self.device.physical
        stream = self.device.streams[COPY_STREAM]
        staging = layer.pinned(nbytes)
        if event is not None:
            layer.wait(stream, event)
        layer.copy_d2h(staging, src, nbytes, stream)
        done = layer.new_event(physical)
        layer.record(done, stream)
        layer.synchronize(done)
        host.reshape(-1).view(np.uint8)[:] = staging
        return host

    # ---- helpers ---------------------------------------------------------------------------

    def _staged(self, src_device, source, dst, nbytes):
        """Device to pinned host buffer on the source's copy stream, then host to device
        here once the first half is done; the buffer and the hop event (to keep)."""
        if nbytes == 0:
            return None
        layer = self.layer
        src_stream = src_device.streams[COPY_STREAM]
        self._wait_for(src_device, source, src_stream)
        staging = layer.pinned(nbytes)
        layer.copy_d2h(staging, source.array, nbytes, src_stream)
        hop = layer.new_event(src_device.physical)
        layer.record(hop, src_stream)
        stream = self.device.streams[COPY_STREAM]
        layer.wait(stream, hop)
        layer.copy_h2d(dst, staging, nbytes, stream)
        return staging, hop

    def _wait_for(self, src_device, source, stream) -> None:
        event = src_device.event_of(source.block)
        if event is not None:
            self.layer.wait(stream, event)

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
