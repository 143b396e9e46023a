"""minerva: NumPy-style array programs run asynchronously through a dependency DAG,
on CPU devices (NumPy) and NVIDIA GPUs (CuPy), one device or many.

``import minerva as np`` runs a NumPy program; ``import minerva as mv`` for the rest. See
API.md and doc/ for the contract.
"""
import os as _os
import sys as _sys

# OpenBLAS threads spin for about 2**28 cycles after each call (its default timeout), taking
# the cores a CPU device's other kernel threads need; read once, when NumPy loads it.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from minerva import autograd, methods, nn, optim, random, trace  # noqa: F401  (methods: operators)
from minerva.jit import JitError, jit  # noqa: F401
from minerva.common.errors import (  # noqa: F401
    CancelledError, DeviceError, DTypeError, MinervaError, OpError, OutOfMemoryError,
    ShapeError, WaitTimeoutError)
from minerva.creation import (  # noqa: F401
    arange, array, asarray, ascontiguousarray, asfortranarray, copy, empty, empty_like,
    from_numpy, full, full_like, ones, ones_like, rand, randb, randn, zeros, zeros_like)
from minerva.functions import (  # noqa: F401
    all, amax, amin, any, argmax, argmin, astype, broadcast_arrays, broadcast_to, clip,
    concat, concatenate, dot, expand_dims, matmul, max, mean, min, moveaxis, permute_dims,
    nonzero, prod, ravel, reshape, squeeze, stack, sum, swapaxes, transpose, where)
from minerva.narray import NArray  # noqa: F401
from minerva.runtime import (  # noqa: F401
    create_cpu_device, create_gpu_device, current_device, dag_stats, device, device_info,
    dump_dag, get_gpu_device_count, init, memory_stats, release_all, set_device, shutdown,
    wait_for_all)
from minerva.ufuncs import *  # noqa: F401,F403  (every element-wise function)
from minerva.manipulation import *  # noqa: F401,F403
from minerva.statistics import *  # noqa: F401,F403
from minerva.linalg import *  # noqa: F401,F403
from minerva.interop import *  # noqa: F401,F403
from minerva.ufuncs import FUNCTIONS as _UFUNCS  # noqa: F401

from numpy import errstate, geterr, geterrcall, seterr, seterrcall  # noqa: F401,E402
# (NumPy's own: an op's kernel runs under the state of the thread that issued it)

ndarray = NArray
__version__ = "0.2.0"
autograd.install(_sys.modules[__name__])
from minerva import interop as _interop, missing as _missing  # noqa: E402
from minerva.dtypes import *  # noqa: F401,F403,E402
_interop.install(globals())


def __getattr__(name):
    """NumPy names minerva lacks: a clear AttributeError (minerva.missing)."""
    raise _missing.missing_attribute(name)
