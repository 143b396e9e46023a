"""The CUDA facilities a GPU device uses, as one small interface: :class:`CudaLayer`.

:class:`~minerva.device.gpu.device.GpuDevice` reaches CUDA only through a CudaLayer. The real
one, over CuPy, is ``CupyLayer`` in :mod:`minerva.device.gpu` (the only module of the package
that imports ``cupy``); ``tests/support/fake_cuda.py`` simulates the same interface on the host so the
GPU device's control flow runs in CI without a GPU.

Conventions: ``ordinal`` is a *physical* CUDA device number; streams, events and chunks are
opaque objects of the layer; device arrays are of the layer's array module ``xp``; host
staging buffers are 1-D NumPy ``uint8`` arrays; every copy moves ``nbytes`` bytes between
C-contiguous buffers and is asynchronous on the stream it is given (it may start only after
the work queued on that stream before it). Kernels are queued through ``launch``, on the
stream given. The store's allocator over a GPU is
:class:`~minerva.device.gpu.memory.DeviceAllocator`.

On a context a sticky error poisoned, *any* call may raise that error — also leaving a
``bind`` (restoring the thread's device and stream calls CUDA) — and CUDA libraries report
it with their own status (cuBLAS: ``CUBLAS_STATUS_EXECUTION_FAILED`` 13,
``CUBLAS_STATUS_INTERNAL_ERROR`` 14), so :meth:`CudaLayer.sticky_error` asks the context.
"""
from __future__ import annotations

import abc
from typing import Any, Callable, ContextManager

STICKY_CUDA_ERRORS = frozenset({
    214,  # cudaErrorECCUncorrectable
    700,  # cudaErrorIllegalAddress
    702,  # cudaErrorLaunchTimeout
    709,  # cudaErrorContextIsDestroyed
    710,  # cudaErrorAssert (device-side assert)
    714,  # cudaErrorHardwareStackError
    715,  # cudaErrorIllegalInstruction
    716,  # cudaErrorMisalignedAddress
    717,  # cudaErrorInvalidAddressSpace
    718,  # cudaErrorInvalidPc
    719,  # cudaErrorLaunchFailure
})
"""CUDA error codes that poison the process's context on that GPU: every later CUDA call
there fails the same way, and only a new process can use the GPU again."""
CUDA_ERROR_NOT_READY = 600
"""``cudaErrorNotReady``: what ``cudaEventQuery`` returns for work not done yet."""


class CudaLayer(abc.ABC):
    """Streams, events, device memory, pinned host memory and copies of the CUDA devices."""

    xp: Any = None
    """The array module of device arrays (``cupy``; NumPy in the test double)."""

    # ---- devices ---------------------------------------------------------------------------

    @abc.abstractmethod
    def device_count(self) -> int:
        """Number of physical GPUs the driver shows."""

    @abc.abstractmethod
    def device_name(self, ordinal: int) -> str:
        """The marketing name of GPU ``ordinal`` (e.g. ``NVIDIA H200``)."""

    @abc.abstractmethod
    def mem_info(self, ordinal: int) -> tuple[int, int]:
        """``(free_bytes, total_bytes)`` of GPU ``ordinal`` now, as the driver reports them."""

    def is_sticky(self, error: BaseException) -> bool:
        """Whether ``error`` (raised by a CUDA call) is one that poisons the GPU's context
        for the rest of the process (``STICKY_CUDA_ERRORS``, by the error's ``status``)."""
        return getattr(error, "status", None) in STICKY_CUDA_ERRORS

    def sticky_error(self, error: BaseException, ordinal: int) -> BaseException | None:
        """The sticky CUDA error behind ``error``, raised by work for GPU ``ordinal``:
        ``error`` itself when it is one, else the error GPU ``ordinal``'s context is
        poisoned with (a library reports a lost context with its own status); None when
        the context is usable. Never raises."""
        if self.is_sticky(error):
            return error
        return self.context_error(ordinal)

    @abc.abstractmethod
    def context_error(self, ordinal: int) -> BaseException | None:
        """The sticky error GPU ``ordinal``'s context is poisoned with, or None when it is
        usable; asks the GPU without waiting for its work, never raises."""

    # ---- streams, events and kernels --------------------------------------------------------

    @abc.abstractmethod
    def new_stream(self, ordinal: int) -> Any:
        """A new non-blocking stream on GPU ``ordinal`` (it does not wait for the null
        stream)."""

    @abc.abstractmethod
    def new_event(self, ordinal: int) -> Any:
        """A new event on GPU ``ordinal``, without timing data."""

    @abc.abstractmethod
    def record(self, event: Any, stream: Any) -> None:
        """Record ``event`` on ``stream`` (of the event's GPU): it completes when the work
        queued so far does."""

    @abc.abstractmethod
    def wait(self, stream: Any, event: Any) -> None:
        """Make later work on ``stream`` wait for ``event`` (which may be of another GPU)."""

    @abc.abstractmethod
    def synchronize(self, event: Any) -> None:
        """Block the calling thread until ``event`` completed; raise the GPU's error if the
        work before it failed. Must not hold the GIL while waiting."""

    @abc.abstractmethod
    def query(self, event: Any) -> bool:
        """Whether ``event`` completed, without waiting; raise the GPU's error if it is
        anything but done or not ready (the work before it failed, the context is lost)."""

    @abc.abstractmethod
    def launch(self, stream: Any, kernel: Callable[[], None]) -> None:
        """Queue the work ``kernel()`` issues through the array module on ``stream``, a
        stream of the calling thread's current GPU (else raise), whatever stream is
        current. CuPy queues asynchronously by itself, so the real layer calls
        ``kernel()`` at once with ``stream`` current; the test double runs it later, when
        the stream reaches it."""

    @abc.abstractmethod
    def bind(self, ordinal: int, stream: Any, allocator: Any) -> ContextManager:
        """A context in which the calling thread's current GPU is ``ordinal``, its current
        stream ``stream`` (kernels the array module launches go there), and memory the array
        module allocates comes from ``allocator(nbytes)``; all restored on exit. On a lost
        context entering *and leaving* raise the context's error."""

    # ---- memory ----------------------------------------------------------------------------

    @abc.abstractmethod
    def malloc(self, ordinal: int, nbytes: int) -> Any:
        """A new chunk of ``nbytes`` bytes of GPU ``ordinal``'s memory (an object that can
        be weakly referenced; its memory is freed once it is gone); MemoryError when the
        GPU has none left."""

    @abc.abstractmethod
    def free(self, chunk: Any) -> None:
        """Let go of ``chunk``: its memory goes back to the GPU (``cudaFree``: it
        synchronizes the device) at once, or, under CuPy, once no array over it is left."""

    @abc.abstractmethod
    def trim(self) -> None:
        """Free memory the array module caches on its own (CuPy's memory pools) and collect
        garbage, so a failed allocation can be retried."""

    @abc.abstractmethod
    def view(self, chunk: Any, offset: int, nbytes: int, shape: tuple, dtype: Any) -> Any:
        """An ``xp`` array of ``shape`` and ``dtype`` over ``nbytes`` bytes of ``chunk`` at
        ``offset``."""

    @abc.abstractmethod
    def temporary(self, chunk: Any, offset: int, nbytes: int, owner: Any) -> Any:
        """What the array module's allocator hook returns for ``nbytes`` bytes of ``chunk``
        at ``offset``: it keeps ``owner`` alive, and drops it when the array module no
        longer uses the memory."""

    @abc.abstractmethod
    def pinned(self, nbytes: int) -> Any:
        """A page-locked host buffer of ``nbytes`` bytes (1-D NumPy ``uint8``); it stays
        valid while the returned array lives, and may be handed out again as soon as it
        is gone (whatever copy still uses it)."""

    # ---- copies (asynchronous on ``stream``) -----------------------------------------------

    @abc.abstractmethod
    def copy_h2d(self, dst: Any, src: Any, nbytes: int, stream: Any) -> None:
        """Host (pinned ``src``) to device array ``dst``."""

    @abc.abstractmethod
    def copy_d2h(self, dst: Any, src: Any, nbytes: int, stream: Any) -> None:
        """Device array ``src`` to host (pinned ``dst``)."""

    def elementwise_kernel(self, in_params: str, out_params: str, operation: str,
                           name: str, preamble: str) -> Any:
        """A kernel as CuPy's ``ElementwiseKernel`` makes one (called with the inputs,
        then the output), for the jit's fused kernels (``minerva.device.gpu.fused``);
        NotImplementedError where the layer has none (plans then do not fuse)."""
        raise NotImplementedError("this CUDA layer makes no element-wise kernels")

    @abc.abstractmethod
    def strided(self, array: Any, shape: tuple, strides: tuple, offset: int) -> Any:
        """A strided view of the whole C-contiguous device buffer ``array``: ``shape``,
        byte ``strides`` and byte ``offset`` (no copy, no work on a stream)."""

    @abc.abstractmethod
    def copy_d2d(self, dst: Any, src: Any, nbytes: int, stream: Any) -> None:
        """Device array to device array on the same GPU."""

    @abc.abstractmethod
    def copy_peer(self, dst: Any, dst_ordinal: int, src: Any, src_ordinal: int, nbytes: int,
                  stream: Any) -> None:
        """Device array on GPU ``src_ordinal`` to one on GPU ``dst_ordinal`` over peer
        access (``stream`` is of ``dst_ordinal``)."""

    @abc.abstractmethod
    def enable_peer_access(self, ordinal: int, peer: int) -> bool:
        """Let GPU ``ordinal`` read ``peer``'s memory directly; False when the hardware
        cannot (then copies between them are staged through the host). Idempotent."""
