"""Running a collective whose arrays are on a GPU: over NCCL when every rank's data is on
a GPU and NCCL can carry it, else staged through pinned host memory over the transport.

Everything runs on the communication thread, on one *communication stream* per GPU that
first waits for the compute stream's work queued before the collective started (the
job's ``ready`` event). The GPU is reached through the device's CUDA layer only, so the
GPU test double (``tests/support/fake_cuda.py``) drives the same code. Waiting for the GPU is
bounded: an :class:`EventWaiter` thread blocks on the event while the communication
thread waits for it until the deadline; past it, the NCCL communicator is aborted.
Creating a communicator is bounded by the same deadline (``nccl_init``).

NCCL is used only when the gathered headers say every rank can, each on a GPU of its
own; ranks that share a GPU (NCCL refuses them in one communicator) stage through the
host, every rank alike.
"""
from __future__ import annotations

import queue
import threading
import time

import numpy as np

from minerva.common.logging import get_logger
from minerva.distributed import header as headers
from minerva.distributed.errors import CommunicationLost
from minerva.distributed.host_ops import offsets
from minerva.distributed.nccl import UNIQUE_ID_BYTES
from minerva.distributed.nccl_init import create_within

log = get_logger("minerva.distributed")
WAIT_SLICE_S = 0.05


class EventWaiter:
    """A thread that blocks on GPU events so the communication thread need not: it can
    give up at a deadline. ``_queue`` carries ``(layer, event, box)``; no lock."""

    def __init__(self):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name="minerva-dist-gpu-waiter")
        self._thread.start()

    def wait(self, layer, event, deadline: float, transport, timeout: float) -> None:
        """Return once ``event`` completed; raise its GPU error; CommunicationLost past
        ``deadline`` or once the transport is interrupted."""
        box = {"done": threading.Event(), "error": None}
        self._queue.put((layer, event, box))
        while not box["done"].wait(WAIT_SLICE_S):
            if transport.interrupted is not None:
                raise CommunicationLost(f"waiting for the GPU transfer: "
                                        f"{transport.interrupted}")
            if time.monotonic() > deadline:
                raise CommunicationLost(f"the GPU transfer did not finish within "
                                        f"{timeout:g} s (MINERVA_DIST_TIMEOUT): a rank "
                                        "may have stopped answering")
        if box["error"] is not None:
            raise box["error"]

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread after the events queued (it may stay blocked on an event that
        never completes; it is a daemon)."""
        self._queue.put(None)
        self._thread.join(timeout)

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            layer, event, box = item
            try:
                layer.synchronize(event)
            except Exception as err:  # handed to the waiting collective
                box["error"] = err
            box["done"].set()


class Link:
    """What the communication thread keeps per GPU: its stream and staging buffers."""

    def __init__(self, layer, ordinal: int):
        self.layer, self.ordinal = layer, ordinal
        self.stream = layer.new_stream(ordinal)
        self._device: dict = {}
        self._pinned = None

    def device_buffer(self, dtype, n: int):
        """A flat device buffer of ``n`` elements (one per dtype, grown as needed)."""
        dtype = np.dtype(dtype)
        buffer = self._device.get(dtype.str)
        if buffer is None or buffer.size < n:
            nbytes = max(n * dtype.itemsize, 1)
            chunk = self.layer.malloc(self.ordinal, nbytes)
            buffer = self.layer.view(chunk, 0, nbytes, (max(n, 1),), dtype)
            self._device[dtype.str] = buffer
        return buffer[:n]

    def pinned(self, nbytes: int) -> np.ndarray:
        """Pinned host bytes (grown as needed)."""
        if self._pinned is None or self._pinned.size < nbytes:
            self._pinned = self.layer.pinned(max(nbytes, 1))
        return self._pinned[:nbytes]


class GpuRunner:
    """The GPU side of the communication thread: links, NCCL communicators, the waiter."""

    def __init__(self, transport, timeout: float, load_library):
        self.transport, self.timeout = transport, timeout
        self._load_library = load_library
        self._library = None
        self._loaded = False
        self._links: dict = {}
        self._comms: dict = {}
        self._identities: dict = {}
        self._noted_shared: set = set()
        self._waiter: EventWaiter | None = None

    def library(self):
        """The NCCL library (loaded on first use), or None."""
        if not self._loaded:
            self._library, self._loaded = self._load_library(), True
        return self._library

    def nccl_ok(self, kind: str, op, dtype, ordinal: int) -> bool:
        """Whether this rank could run the collective over NCCL on GPU ``ordinal``."""
        library = self.library()
        return (library is not None and kind in ("allreduce", "broadcast", "allgather")
                and library.supports(dtype, op if kind == "allreduce" else None)
                and self.identity(ordinal) != 0)

    def identity(self, ordinal: int) -> int:
        """The identity of GPU ``ordinal`` for the header (``nccl.gpu_identity``; 0 when
        there is no NCCL or it cannot be told, and then NCCL is not used)."""
        known = self._identities.get(ordinal)
        if known is None:
            known = 0
            try:
                if self.library() is not None:
                    known = self.library().device_identity(ordinal)
            except Exception as err:  # staged through the host instead
                log.warning("dist_gpu_identity_unknown", ordinal=ordinal, error=repr(err))
            self._identities[ordinal] = known
        return known

    def run(self, job, table: np.ndarray, deadline: float) -> None:
        """Run ``job`` (GPU arrays) as the gathered headers ``table`` decided."""
        place = job.collective.place
        link = self._link(place)
        link.layer.wait(link.stream, job.ready)
        if headers.use_nccl(table):
            comm = self._communicator(headers.gpu_key(table), place, deadline)
            _nccl_collective(comm, job, link, self.transport.rank)
            self._settle(link, deadline, comm.abort)
        else:
            self._note_shared(table)
            self._staged(job, link, deadline)

    def park(self) -> None:
        """Stop the waiter thread (it starts again with the next GPU collective)."""
        if self._waiter is not None:
            self._waiter.stop()
            self._waiter = None

    def close(self, healthy: bool) -> None:
        """Free the NCCL communicators (abort them when something broke); stop the
        waiter."""
        for comm in self._comms.values():
            try:
                comm.destroy() if healthy else comm.abort()
            except Exception as err:  # at exit: report, never raise
                log.warning("dist_nccl_close_failed", error=repr(err))
        self._comms.clear()
        self.park()

    # ---- pieces ------------------------------------------------------------------------

    def _link(self, place) -> Link:
        link = self._links.get(place.ordinal)
        if link is None or link.layer is not place.layer:
            link = self._links[place.ordinal] = Link(place.layer, place.ordinal)
        return link

    def _communicator(self, key: tuple, place, deadline: float):
        """The NCCL communicator of the GPUs ``key`` (made collectively on first use:
        rank 0's unique id goes to every rank over the transport; the creation is bounded
        by ``deadline``)."""
        comm = self._comms.get(key)
        if comm is None:
            library, transport = self.library(), self.transport
            uid = (library.unique_id() if transport.rank == 0
                   else np.zeros(UNIQUE_ID_BYTES, np.uint8))
            uid = np.ascontiguousarray(uid, np.uint8)
            transport.broadcast(uid, 0, deadline)
            comm = create_within(lambda: library.communicator(
                transport.size, uid, transport.rank, place.ordinal),
                deadline, transport, self.timeout)
            self._comms[key] = comm
            log.info("dist_nccl_communicator", rank=transport.rank, gpus=key)
        return comm

    def _note_shared(self, table: np.ndarray) -> None:
        """Log, once per set of GPUs, that NCCL was possible but for a shared GPU."""
        key = headers.gpu_key(table)
        if (headers.shares_gpu(table) and np.all(table[:, headers.NCCL] == 1)
                and key not in self._noted_shared):
            self._noted_shared.add(key)
            log.info("dist_nccl_shared_gpu_staged", rank=self.transport.rank, gpus=key)

    def _settle(self, link: Link, deadline: float, on_timeout=None) -> None:
        """Wait (bounded) for the work queued so far on the link's stream."""
        layer = link.layer
        event = layer.new_event(link.ordinal)
        layer.record(event, link.stream)
        if self._waiter is None:
            self._waiter = EventWaiter()
        try:
            self._waiter.wait(layer, event, deadline, self.transport, self.timeout)
        except CommunicationLost:
            if on_timeout is not None:
                on_timeout()
            raise

    def _staged(self, job, link: Link, deadline: float) -> None:
        """Device to pinned host memory, the host collective, back to the device."""
        layer, stream, kind = link.layer, link.stream, job.collective.kind
        inputs, outputs = job.inputs, job.outputs
        n_in = sum(a.nbytes for a in inputs)
        n_out = sum(a.nbytes for a in outputs)
        pinned = link.pinned(n_in + (n_out if kind == "allgather" else 0))
        _copy_out(layer, inputs, pinned[:n_in], stream)
        self._settle(link, deadline)
        dtype = outputs[0].dtype
        host_in = pinned[:n_in].view(dtype)
        host_out = pinned[n_in:].view(dtype) if kind == "allgather" else host_in
        _host_collective(self.transport, job.collective, host_in, host_out, deadline)
        _copy_in(layer, host_out.view(np.uint8), outputs, stream)
        self._settle(link, deadline)


def _copy_out(layer, arrays, pinned: np.ndarray, stream) -> None:
    start = 0
    for a in arrays:
        layer.copy_d2h(pinned[start:start + a.nbytes], a, a.nbytes, stream)
        start += a.nbytes


def _copy_in(layer, pinned: np.ndarray, arrays, stream) -> None:
    start = 0
    for a in arrays:
        layer.copy_h2d(a, pinned[start:start + a.nbytes], a.nbytes, stream)
        start += a.nbytes


def _host_collective(transport, collective, host_in, host_out, deadline) -> None:
    kind, op = collective.kind, collective.op
    if kind == "allreduce":
        transport.allreduce(host_in, host_in, "sum" if op == "mean" else op, deadline)
        if op == "mean":
            np.divide(host_in, transport.size, out=host_in, casting="unsafe")
    elif kind == "broadcast":
        transport.broadcast(host_in, collective.root, deadline)
    else:
        transport.allgather(host_in, host_out, deadline)


def _nccl_collective(comm, job, link: Link, rank: int) -> None:
    """Queue the collective on the link's stream (a bucket packed into one buffer)."""
    collective, inputs, outputs = job.collective, job.inputs, job.outputs
    layer, stream = link.layer, link.stream
    if collective.kind == "allgather":
        comm.allgather(inputs[0], outputs[0], stream)
        return
    if len(inputs) == 1:
        send, recv = inputs[0], outputs[0]
    else:
        send = recv = link.device_buffer(outputs[0].dtype, sum(a.size for a in inputs))
        if collective.kind == "allreduce" or rank == collective.root:
            for a, (start, stop) in zip(inputs, offsets(inputs)):
                layer.copy_d2d(send[start:stop], a, a.nbytes, stream)
    if collective.kind == "allreduce":
        comm.allreduce(send, recv, collective.op, stream)
    else:
        comm.broadcast(send, recv, collective.root, stream)
    if len(inputs) > 1:
        for a, (start, stop) in zip(outputs, offsets(outputs)):
            layer.copy_d2d(a, recv[start:stop], a.nbytes, stream)
