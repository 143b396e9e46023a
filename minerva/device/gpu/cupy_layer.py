"""The real :class:`CudaLayer`, over CuPy: every CUDA call minerva's GPU devices make.

It receives the ``cupy`` module (``minerva.device.gpu`` imports it, lazily) and never
imports it itself.
"""
from __future__ import annotations

import contextlib
import gc
import threading

import numpy

from minerva.common.logging import get_logger
from minerva.device.gpu.layer import CUDA_ERROR_NOT_READY, STICKY_CUDA_ERRORS, CudaLayer

log = get_logger("minerva.device")
CUDA_ERROR_MEMORY_ALLOCATION = 2
CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704
SPIN_WAIT = True
"""Completion threads spin while they wait on an event (lowest latency, one busy core per
waiting thread); False makes them sleep (``cudaEventBlockingSync``)."""


class DeviceMemory:
    """One ``cudaMalloc`` (a ``cupy.cuda.Memory``), as the allocator's chunk. Arrays over it
    refer to this object, so CuPy frees the memory (``cudaFree``) once the allocator and
    every such array let go of it; it can be weakly referenced (the allocator counts real
    frees)."""

    __slots__ = ("memory", "ptr", "nbytes", "device_id", "__weakref__")

    def __init__(self, memory, nbytes: int, device_id: int):
        self.memory = memory
        self.ptr = memory.ptr
        self.nbytes = nbytes
        self.device_id = device_id


class CupyLayer(CudaLayer):
    """The CUDA layer over CuPy.

    ``_lock`` guards ``_peer``, the peer-access state of each (device, peer) pair.
    """

    def __init__(self, cupy):
        self.cupy = cupy
        self.xp = cupy
        self.runtime = cupy.cuda.runtime
        self._peer: dict[tuple[int, int], bool] = {}
        self._lock = threading.Lock()

    def elementwise_kernel(self, in_params, out_params, operation, name, preamble):
        """``cupy.ElementwiseKernel`` (compiled at its first call, cached by CuPy)."""
        return self.cupy.ElementwiseKernel(in_params, out_params, operation, name,
                                           preamble=preamble)

    # ---- devices ---------------------------------------------------------------------------

    def device_count(self) -> int:
        """Physical GPUs the driver shows."""
        return int(self.runtime.getDeviceCount())

    def device_name(self, ordinal: int) -> str:
        """The GPU's name from its properties."""
        name = self.runtime.getDeviceProperties(ordinal)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def mem_info(self, ordinal: int) -> tuple[int, int]:
        """``(free, total)`` bytes of the GPU (``cudaMemGetInfo``)."""
        with self.cupy.cuda.Device(ordinal):
            free, total = self.runtime.memGetInfo()
        return int(free), int(total)

    def context_error(self, ordinal: int):
        """``cudaStreamQuery`` of the GPU's legacy stream (it does not wait): on a lost
        context it returns the context's error, as switching to the GPU may raise it."""
        runtime = self.runtime
        try:
            with self.cupy.cuda.Device(ordinal):
                status = runtime.streamQuery(0)
        except Exception as err:  # a lost context fails setting the device too
            return err if self.is_sticky(err) else None
        return runtime.CUDARuntimeError(status) if status in STICKY_CUDA_ERRORS else None

    # ---- streams and events ----------------------------------------------------------------

    def new_stream(self, ordinal: int):
        """A non-blocking stream of the GPU."""
        with self.cupy.cuda.Device(ordinal):
            return self.cupy.cuda.Stream(non_blocking=True)

    def new_event(self, ordinal: int):
        """An event without timing data."""
        with self.cupy.cuda.Device(ordinal):
            return self.cupy.cuda.Event(block=not SPIN_WAIT, disable_timing=True)

    def record(self, event, stream) -> None:
        """``cudaEventRecord``, with the stream's GPU current (any thread may call it)."""
        with self.cupy.cuda.Device(stream.device_id):
            event.record(stream)

    def wait(self, stream, event) -> None:
        """``cudaStreamWaitEvent``, with the stream's GPU current."""
        with self.cupy.cuda.Device(stream.device_id):
            stream.wait_event(event)

    def synchronize(self, event) -> None:
        """``cudaEventSynchronize`` (CuPy releases the GIL while it waits)."""
        event.synchronize()

    def query(self, event) -> bool:
        """``cudaEventQuery``: True when done, False when not ready, else raise its status as
        a ``CUDARuntimeError`` (CuPy's ``runtime.eventQuery`` returns the status unchecked,
        and ``Event.done`` only compares it with success)."""
        status = self.runtime.eventQuery(event.ptr)
        if status == CUDA_ERROR_NOT_READY:
            return False
        self.runtime.check_status(status)  # raises unless cudaSuccess
        return True

    def launch(self, stream, kernel) -> None:
        """Call ``kernel()`` with ``stream`` current: CuPy queues the kernels it launches on
        the current stream (entering a stream of another device than the current one
        raises)."""
        with stream:
            kernel()

    @contextlib.contextmanager
    def bind(self, ordinal: int, stream, allocator):
        """Current device, current stream and CuPy's allocator hook of this thread. On a
        lost context leaving raises too: CuPy restores the previous stream and device with
        ``cudaGetDevice``/``cudaSetDevice``, which return the context's error."""
        cuda = self.cupy.cuda
        with cuda.Device(ordinal), stream, cuda.using_allocator(allocator):
            yield

    # ---- memory ----------------------------------------------------------------------------

    def malloc(self, ordinal: int, nbytes: int) -> DeviceMemory:
        """A ``cupy.cuda.Memory`` of the GPU, in a :class:`DeviceMemory`."""
        cuda = self.cupy.cuda
        try:
            with cuda.Device(ordinal):
                return DeviceMemory(cuda.Memory(nbytes), nbytes, ordinal)
        except self.runtime.CUDARuntimeError as err:
            if err.status == CUDA_ERROR_MEMORY_ALLOCATION:
                raise MemoryError(f"cudaMalloc of {nbytes} bytes on GPU {ordinal} "
                                  f"failed: {err}") from err
            raise

    def free(self, chunk) -> None:
        """Nothing to call: CuPy frees the chunk's memory (``cudaFree``) when the chunk's
        last reference (the allocator's slab, an array over it) is gone — at once, unless
        an array over it is still alive (freeing it then would leave that array dangling)."""

    def trim(self) -> None:
        """Empty CuPy's own memory pools (device and pinned: memory that CuPy code outside
        minerva's allocator hook cached) and collect garbage (dropped views free chunks)."""
        gc.collect()
        self.cupy.get_default_memory_pool().free_all_blocks()
        self.cupy.get_default_pinned_memory_pool().free_all_blocks()

    def view(self, chunk, offset: int, nbytes: int, shape: tuple, dtype):
        """A CuPy array over the chunk's bytes at ``offset`` (it keeps the chunk alive)."""
        cuda = self.cupy.cuda
        memory = cuda.UnownedMemory(chunk.ptr, chunk.nbytes, chunk, chunk.device_id)
        return self.cupy.ndarray(shape, dtype, memptr=cuda.MemoryPointer(memory, offset))

    def temporary(self, chunk, offset: int, nbytes: int, owner):
        """A MemoryPointer over unowned memory that keeps ``owner`` alive."""
        cuda = self.cupy.cuda
        memory = cuda.UnownedMemory(chunk.ptr + offset, nbytes, owner, chunk.device_id)
        return cuda.MemoryPointer(memory, 0)

    def pinned(self, nbytes: int):
        """Pinned host memory from CuPy's pinned pool, as a NumPy ``uint8`` array (the array
        keeps the memory alive; the pool reuses it once the array is gone)."""
        memory = self.cupy.cuda.alloc_pinned_memory(nbytes)
        return numpy.frombuffer(memory, numpy.uint8, nbytes)

    # ---- copies ----------------------------------------------------------------------------

    def copy_h2d(self, dst, src, nbytes: int, stream) -> None:
        """``cudaMemcpyAsync`` host to device."""
        self._memcpy(dst.data.ptr, src.ctypes.data, nbytes,
                     self.runtime.memcpyHostToDevice, stream)

    def copy_d2h(self, dst, src, nbytes: int, stream) -> None:
        """``cudaMemcpyAsync`` device to host."""
        self._memcpy(dst.ctypes.data, src.data.ptr, nbytes,
                     self.runtime.memcpyDeviceToHost, stream)

    def strided(self, array, shape: tuple, strides: tuple, offset: int):
        """``cupy.ndarray`` over ``array``'s memory at ``offset`` with ``strides``."""
        if 0 in shape:
            return self.cupy.ndarray(shape, array.dtype, memptr=array.data)
        return self.cupy.ndarray(shape, array.dtype, memptr=array.data + offset,
                                 strides=strides)

    def copy_d2d(self, dst, src, nbytes: int, stream) -> None:
        """``cudaMemcpyAsync`` device to device."""
        self._memcpy(dst.data.ptr, src.data.ptr, nbytes,
                     self.runtime.memcpyDeviceToDevice, stream)

    def copy_peer(self, dst, dst_ordinal: int, src, src_ordinal: int, nbytes: int,
                  stream) -> None:
        """``cudaMemcpyPeerAsync``."""
        with self.cupy.cuda.Device(stream.device_id):
            self.runtime.memcpyPeerAsync(dst.data.ptr, dst_ordinal, src.data.ptr,
                                         src_ordinal, nbytes, stream.ptr)

    def enable_peer_access(self, ordinal: int, peer: int) -> bool:
        """``cudaDeviceCanAccessPeer``, then ``cudaDeviceEnablePeerAccess`` once per pair."""
        with self._lock:
            state = self._peer.get((ordinal, peer))
            if state is None:
                state = self._peer[(ordinal, peer)] = self._try_enable_peer(ordinal, peer)
            return state

    def _try_enable_peer(self, ordinal: int, peer: int) -> bool:
        runtime = self.runtime
        if ordinal == peer or not runtime.deviceCanAccessPeer(ordinal, peer):
            return ordinal == peer
        try:
            with self.cupy.cuda.Device(ordinal):
                runtime.deviceEnablePeerAccess(peer)
        except runtime.CUDARuntimeError as err:
            if err.status != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED:
                log.warning("gpu_peer_access_failed", ordinal=ordinal, peer=peer,
                            error=str(err))
                return False
        log.info("gpu_peer_access", ordinal=ordinal, peer=peer)
        return True

    def _memcpy(self, dst_ptr: int, src_ptr: int, nbytes: int, kind: int, stream) -> None:
        with self.cupy.cuda.Device(stream.device_id):
            self.runtime.memcpyAsync(dst_ptr, src_ptr, nbytes, kind, stream.ptr)


# ---- the seam, counting and creation -------------------------------------------------------

