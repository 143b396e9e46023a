"""minerva: NumPy-style array programs run asynchronously through a dependency DAG,
on CPU devices (NumPy) and NVIDIA GPUs (CuPy), one device or many.

See API.md / doc/ for the contract. ``import minerva as mv``.
"""
from minerva import nn, random, trace  # noqa: F401
from minerva.common.errors import (  # noqa: F401
    DeviceError, MinervaError, OpError, OutOfMemoryError, ShapeError, WaitTimeoutError)
from minerva.creation import (  # noqa: F401
    arange, array, from_numpy, full, ones, ones_like, rand, randb, randn, zeros, zeros_like)
from minerva.functions import (  # noqa: F401
    abs, absolute, add, all, any, arctan2, argmax, argmin, astype, bitwise_and, bitwise_or,
    bitwise_xor, ceil, clip, concatenate, cos, divide, equal, exp, expand_dims, expm1, floor,
    floor_divide, greater, greater_equal, invert, less, less_equal, log, log1p, logical_and,
    logical_not, logical_or, matmul, max, maximum, mean, min, minimum, multiply, negative,
    not_equal, power, prod, reciprocal, relu, remainder, reshape, sigmoid, sign, sin, sqrt,
    square, squeeze, stack, subtract, sum, tanh, transpose, where)
from minerva.narray import NArray  # noqa: F401
from minerva.runtime import (  # noqa: F401
    create_cpu_device, create_gpu_device, current_device, dag_stats, device, device_info,
    dump_dag, get_gpu_device_count, init, memory_stats, release_all, set_device, shutdown,
    wait_for_all)

__version__ = "0.1.0"
