"""Functions that make new arrays on the current device: fills, copies of host data,
ranges and seeded random draws. They default to float32 unless they take values."""
from __future__ import annotations

import operator

import numpy as np

from minerva import random as _random
from minerva.common.errors import ShapeError
from minerva.narray import OPS, NArray, apply_op
from minerva.ops.dtypes import SUPPORTED_KINDS

DEFAULT_DTYPE = np.dtype(np.float32)


def check_dtype(dtype, default: np.dtype = DEFAULT_DTYPE) -> np.dtype:
    """``dtype`` as a NumPy dtype minerva supports (bool, ints, floats, complex)."""
    if dtype is None:
        return default
    try:
        dtype = np.dtype(dtype)
    except TypeError as exc:
        raise ShapeError(f"not a dtype: {dtype!r} ({exc})") from None
    if dtype.kind not in SUPPORTED_KINDS:
        raise ShapeError(f"unsupported dtype {dtype}: minerva arrays hold bool, integer, "
                         "float or complex values")
    return dtype


def check_shape(shape) -> tuple:
    """``shape`` (an int or a sequence of ints >= 0) as a tuple."""
    try:
        dims = (operator.index(shape),) if not isinstance(shape, (tuple, list)) \
            else tuple(operator.index(n) for n in shape)
    except TypeError:
        raise ShapeError(f"a shape is an int or a tuple of ints, got {shape!r}") from None
    if any(n < 0 for n in dims):
        raise ShapeError(f"negative dimensions are not allowed: {dims}")
    return dims


def full(shape, value, dtype=None) -> NArray:
    """An array of ``shape`` filled with ``value`` (float32 unless ``dtype`` is given)."""
    return apply_op(OPS["fill"], [], shape=check_shape(shape), dtype=check_dtype(dtype),
                    value=value)


def zeros(shape, dtype=None) -> NArray:
    """An array of zeros (float32 unless ``dtype`` is given)."""
    return full(shape, 0, dtype)


def ones(shape, dtype=None) -> NArray:
    """An array of ones (float32 unless ``dtype`` is given)."""
    return full(shape, 1, dtype)


def zeros_like(x: NArray, dtype=None) -> NArray:
    """Zeros of ``x``'s shape (and dtype unless given)."""
    return full(x.shape, 0, dtype or x.dtype)


def ones_like(x: NArray, dtype=None) -> NArray:
    """Ones of ``x``'s shape (and dtype unless given)."""
    return full(x.shape, 1, dtype or x.dtype)


def array(obj, dtype=None) -> NArray:
    """A copy of ``obj`` (a list, NumPy array, scalar or NArray) on the current device;
    the dtype is inferred as NumPy infers it when not given."""
    if isinstance(obj, NArray):
        moved = obj.to(_current_device())
        return moved if dtype is None else moved.astype(dtype)
    try:
        data = np.array(obj, dtype=None if dtype is None else check_dtype(dtype), order="C")
    except (TypeError, ValueError) as exc:
        raise ShapeError(f"array: cannot convert {type(obj).__name__}: {exc}") from None
    check_dtype(data.dtype)
    return apply_op(OPS["from_host"], [], data=data)


from_numpy = array


def arange(start, stop=None, step=1, dtype=None) -> NArray:
    """Evenly spaced values in ``[start, stop)``; the dtype follows NumPy's arange."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ShapeError("arange: step must not be zero")
    dtype = check_dtype(dtype, np.array([start, stop, step]).dtype)
    return apply_op(OPS["arange"], [], start=start, stop=stop, step=step, dtype=dtype)


def _random_op(kind, shape, dtype, params):
    dtype = check_dtype(dtype)
    return apply_op(OPS["random"], [], kind=kind, shape=check_shape(shape), dtype=dtype,
                    params=params, seed=_random.next_seed())


def randn(shape, mu=0.0, sigma=1.0, dtype=None) -> NArray:
    """Normal samples with mean ``mu`` and standard deviation ``sigma``."""
    return _random_op("normal", shape, dtype, (float(mu), float(sigma)))


def rand(shape, low=0.0, high=1.0, dtype=None) -> NArray:
    """Uniform samples in ``[low, high)``."""
    return _random_op("uniform", shape, dtype, (float(low), float(high)))


def randb(shape, prob, dtype=None) -> NArray:
    """Bernoulli samples: 1 with probability ``prob``, else 0."""
    if not 0.0 <= float(prob) <= 1.0:
        raise ShapeError(f"randb: prob must be in [0, 1], got {prob}")
    return _random_op("bernoulli", shape, dtype, (float(prob),))


def _current_device() -> int:
    from minerva.system import get_system
    return get_system().current_device()
