"""GPU devices over CuPy: the CUDA layer, GPU counting and GPU device creation.

This is the only module of the package that imports ``cupy``, and only inside functions, so
``import minerva`` works without CuPy. ``load_cuda_layer()`` is the seam: it returns the
process-wide :class:`~minerva.device.gpu.cupy_layer.CupyLayer` (tests replace it with a
host-side double).

- :func:`gpu_device_count` returns 0 when CuPy, a driver or a GPU is missing; never raises.
- :func:`create_gpu_device` raises :class:`DeviceError` saying why a GPU cannot be used.
- ``MINERVA_VIRTUAL_GPUS=N`` makes ordinals ``0..N-1`` logical GPUs on physical GPU 0.

The package: ``device`` (:class:`GpuDevice`: the interface, ``launching`` and ``settling``
its threads' work), ``layer`` (the CUDA layer's interface), ``cupy_layer`` (CuPy's),
``memory`` (slabs), ``temporaries``, ``copies``, ``completion``, ``records``.
"""
from __future__ import annotations

import threading

from minerva.common.errors import DeviceError
from minerva.common.logging import get_logger
from minerva.device.gpu.cupy_layer import CupyLayer
from minerva.device.gpu.device import GpuDevice
from minerva.device.gpu.layer import CudaLayer
from minerva.device.gpu.memory import DeviceAllocator

log = get_logger("minerva.device")

INSTALL_HINT = ("install CuPy for your CUDA version: pip install 'minerva[gpu]' "
                "(CUDA 13: pip install cupy-cuda13x; on a machine without the CUDA "
                "toolkit, whose NVRTC and cuBLAS CuPy needs: pip install "
                "'minerva[gpu-ctk]' or 'cupy-cuda13x[ctk]')")

_LAYER: CudaLayer | None = None
_LAYER_LOCK = threading.Lock()


def load_cuda_layer() -> CudaLayer:
    """The process-wide CUDA layer over CuPy; DeviceError saying why there is none (no
    CuPy, no driver, no GPU). Tests replace this function to inject a double."""
    global _LAYER
    with _LAYER_LOCK:
        if _LAYER is None:
            _LAYER = CupyLayer(_import_cupy_with_gpu())
        return _LAYER


def _import_cupy_with_gpu():
    """``cupy``, after checking that a driver answers and shows at least one GPU."""
    try:
        import cupy
    except ModuleNotFoundError as err:
        if err.name not in ("cupy", None):
            raise DeviceError(f"CuPy cannot be imported ({err}); {INSTALL_HINT}") from err
        raise DeviceError(f"no GPU support: CuPy is not installed; {INSTALL_HINT}") from err
    except ImportError as err:
        raise DeviceError(f"CuPy is installed but cannot be imported ({err}); "
                          f"{INSTALL_HINT}") from err
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # CuPy imports without a driver; any error means no GPU
        raise DeviceError(f"CuPy is installed but no CUDA driver or GPU is usable "
                          f"({type(err).__name__}: {err}); check nvidia-smi and that the "
                          f"driver supports CuPy's CUDA version") from err
    if count < 1:
        raise DeviceError("no CUDA GPU found: the driver reports 0 devices")
    return cupy


def gpu_device_count(config) -> int:
    """GPUs minerva can use: physical ones, or ``MINERVA_VIRTUAL_GPUS`` logical ones when
    set and a GPU exists; 0 without CuPy, driver or GPU. Never raises."""
    try:
        count = load_cuda_layer().device_count()
    except Exception as err:  # documented: never raises
        log.debug("gpu_count_zero", reason=str(err))
        return 0
    if count > 0 and config.virtual_gpus:
        return config.virtual_gpus
    return max(count, 0)


def physical_ordinal(ordinal, n_virtual: int, n_physical: int) -> int:
    """The physical GPU behind logical GPU ``ordinal``; DeviceError when there is none."""
    if isinstance(ordinal, bool) or not isinstance(ordinal, int):
        raise DeviceError(f"a GPU ordinal is an int, got {ordinal!r}")
    if n_virtual:
        if 0 <= ordinal < n_virtual:
            return 0
        raise DeviceError(f"no GPU {ordinal}: MINERVA_VIRTUAL_GPUS={n_virtual} makes GPUs "
                          f"0..{n_virtual - 1}, all on physical GPU 0")
    if 0 <= ordinal < n_physical:
        return ordinal
    raise DeviceError(f"no GPU {ordinal}: this machine has {n_physical} GPU(s), ordinals "
                      f"0..{n_physical - 1} (MINERVA_VIRTUAL_GPUS=N runs N logical GPUs "
                      f"on GPU 0)")


def create_gpu_device(device_id: int, ordinal: int, config, hooks, listener, make_store):
    """A :class:`GpuDevice` with id ``device_id`` on GPU ``ordinal`` (logical under
    ``MINERVA_VIRTUAL_GPUS``), its store made by ``make_store(allocator, device_id)``."""
    layer = load_cuda_layer()
    physical = physical_ordinal(ordinal, config.virtual_gpus, layer.device_count())
    store = make_store(DeviceAllocator(layer, physical, cap=config.mem_limit), device_id)
    device = GpuDevice(device_id, store, hooks, listener, layer, ordinal, physical,
                       n_virtual=config.virtual_gpus)
    log.info("gpu_device_created", device_id=device_id, ordinal=ordinal, physical=physical,
             name=layer.device_name(physical))
    return device
