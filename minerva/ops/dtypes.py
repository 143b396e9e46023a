"""Result dtypes by NumPy's own rules, found once per combination and cached, and the dtypes
minerva arrays hold: numbers and bools everywhere; on CPU devices also datetimes,
timedeltas, fixed-width strings and bytes, and structured (or plain void) records without
Python objects in them. Object dtypes are never held: a buffer of minerva's pools cannot
own references to Python objects."""
from __future__ import annotations

import functools
import warnings

import numpy as np

from minerva.common.errors import DTypeError, IntegerOverflowError
from minerva.ops.registry import ArraySpec, shape_error

_CACHE: dict = {}
_SCALAR_TYPES = (bool, int, float, complex, np.generic)
NUMERIC_KINDS = "biufc"
"""The kinds every device holds (CuPy's): bool, integers, floats, complex."""
HELD_KINDS = NUMERIC_KINDS + "mMSUV"
"""The kinds a CPU device holds: also timedelta, datetime, bytes, str and void/structured."""


def is_scalar(value) -> bool:
    """Whether ``value`` is a Python or NumPy scalar an op can take as an attribute."""
    return isinstance(value, _SCALAR_TYPES) or (
        isinstance(value, np.ndarray) and value.ndim == 0)


def probe(value):
    """A stand-in that gives ``value``'s dtype to NumPy: 1-element array or the scalar."""
    if isinstance(value, ArraySpec):
        return np.ones(1, dtype=value.dtype)
    return value


def cache_key(value):
    """What decides a result dtype: the dtype of a spec or NumPy scalar, the type of a
    Python scalar (NumPy treats those as weak)."""
    if isinstance(value, ArraySpec):
        return value.dtype
    if isinstance(value, np.generic):
        return value.dtype
    return type(value)


def result_dtype(name: str, function, *operands) -> np.dtype:
    """The dtype NumPy gives ``function(*operands)``; ShapeError if NumPy refuses them."""
    key = (name,) + tuple(cache_key(x) for x in operands)
    dtype = _CACHE.get(key)
    if dtype is None:
        dtype = _probe_dtype(name, function, operands)
        _CACHE[key] = dtype
    return dtype


def numpy_dtype(name: str, function, *operands, **kwargs) -> np.dtype:
    """The dtype NumPy gives ``function(*operands, **kwargs)`` (operands: specs or
    scalars), cached per dtypes and keyword values; DTypeError/ShapeError where NumPy
    refuses them."""
    key = name + repr(sorted(kwargs.items()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return result_dtype(key, functools.partial(function, **kwargs), *operands)


def holds(dtype: np.dtype) -> bool:
    """Whether minerva arrays (on a CPU device) hold ``dtype``: a number or bool, a
    datetime or timedelta, fixed-width str or bytes, a record of those (no Python
    objects, no subarray dtype: NumPy expands ``'(2,)f8'`` into a shape)."""
    if dtype.kind in NUMERIC_KINDS:
        return True
    return dtype.kind in HELD_KINDS and not dtype.hasobject and dtype.subdtype is None


def supported_dtype(dtype) -> np.dtype:
    """``dtype`` (anything ``numpy.dtype`` takes) as the NumPy dtype, when minerva arrays
    hold it (``holds``); DTypeError for the others (object, subarray dtypes) and for what
    is not a dtype. Every entry point that takes a dtype checks it here; a GPU device
    refuses the kinds beyond numbers when an array is made there (``check_device``)."""
    try:
        dtype = np.dtype(dtype)
    except (TypeError, ValueError) as exc:
        raise DTypeError(f"not a dtype: {dtype!r} ({exc})") from None
    if not holds(dtype):
        raise DTypeError(f"unsupported dtype {dtype}: minerva arrays hold numbers, bools, "
                         "datetimes, timedeltas, fixed-width strings and records of them, "
                         "not Python objects")
    return dtype


def check_supported(name: str, spec: ArraySpec) -> None:
    """ShapeError unless ``spec``'s dtype is one minerva arrays hold (whether the op
    takes it is NumPy's answer on a stand-in: ``result_dtype``)."""
    if not holds(spec.dtype):
        raise shape_error(name, f"unsupported dtype {spec.dtype}", spec)


def cast_dtype(source: np.dtype, target) -> np.dtype:
    """The dtype ``astype(target)`` gives an array of ``source``: ``target`` itself, or for
    an unsized one (``'U'``, ``'S'``, ``'V'``, a datetime without its unit) NumPy's answer
    on a stand-in (``int64`` to ``'U'`` is ``<U21``). Strings cast to a datetime without a
    unit take their unit from their values: ``values_decide(source, target)``."""
    target = supported_dtype(target)
    if target.itemsize or target.kind not in "SUV":
        if target.kind not in "mM" or np.datetime_data(target)[0] != "generic":
            return target
    key = ("astype", source, target)
    if key not in _CACHE:
        try:
            _CACHE[key] = np.ones(1, source).astype(target).dtype
        except (TypeError, ValueError) as exc:
            raise DTypeError(f"Cannot cast from {source!r} to {target!r}: {exc}") from None
    return _CACHE[key]


def values_decide(source: np.dtype, target) -> bool:
    """Whether ``astype(target)`` of strings of ``source`` needs their values to know its
    dtype (a datetime or timedelta without its unit)."""
    target = np.dtype(target)
    return source.kind in "SU" and target.kind in "mM" and \
        np.datetime_data(target)[0] == "generic"


def check_device(dtype: np.dtype, device) -> None:
    """DTypeError when ``device`` cannot hold ``dtype`` (a GPU device holds numbers and
    bools only, as CuPy does)."""
    if dtype.kind not in device.held_kinds:
        raise DTypeError(f"unsupported dtype {dtype} on {device.kind} device "
                         f"{device.device_id}: it holds bool, integer, float and complex "
                         "values (CuPy's); use a CPU device")


def check_scalar_fits(name: str, dtype: np.dtype, value) -> None:
    """IntegerOverflowError (an OverflowError, as NumPy 2's) when a Python int cannot be
    represented in the integer result dtype."""
    if isinstance(value, int) and not isinstance(value, bool) and dtype.kind in "iu":
        low, high = _int_bounds(dtype)
        if not low <= value <= high:
            raise IntegerOverflowError(f"Python integer {value} out of bounds for {dtype}")


@functools.lru_cache(maxsize=None)
def _int_bounds(dtype: np.dtype) -> tuple:
    """``(min, max)`` of an integer dtype, as Python ints (``np.iinfo`` is slow to make)."""
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _probe_dtype(name, function, operands) -> np.dtype:
    try:
        with np.errstate(all="ignore"):
            result = function(*(probe(x) for x in operands))
    except (TypeError, np.exceptions.DTypePromotionError) as exc:
        kinds = ", ".join(str(cache_key(x)) for x in operands)
        raise DTypeError(f"{name}: unsupported operand types ({kinds}): {exc}") from None
    except OverflowError as exc:
        raise IntegerOverflowError(f"{name}: {exc}") from None
    except ValueError as exc:
        kinds = ", ".join(str(cache_key(x)) for x in operands)
        raise shape_error(name, f"unsupported operand types ({kinds}): {exc}") from None
    return np.asarray(result).dtype
