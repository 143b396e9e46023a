"""Result dtypes by NumPy's own rules, found once per combination and cached, and the dtypes
minerva arrays hold."""
from __future__ import annotations

import functools
import warnings

import numpy as np

from minerva.common.errors import DTypeError, IntegerOverflowError
from minerva.ops.registry import ArraySpec, shape_error

_CACHE: dict = {}
_SCALAR_TYPES = (bool, int, float, complex, np.generic)
SUPPORTED_KINDS = "biufc"


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


def supported_dtype(dtype) -> np.dtype:
    """``dtype`` (anything ``numpy.dtype`` takes) as the NumPy dtype, when minerva arrays
    hold it (bool, integers, floats, complex); DTypeError for every other dtype (object,
    strings, datetimes, structured) and for what is not a dtype. Every entry point that
    takes a dtype checks it here."""
    try:
        dtype = np.dtype(dtype)
    except (TypeError, ValueError) as exc:
        raise DTypeError(f"not a dtype: {dtype!r} ({exc})") from None
    if dtype.kind not in SUPPORTED_KINDS:
        raise DTypeError(f"unsupported dtype {dtype}: minerva arrays hold bool, integer, "
                         "float or complex values")
    return dtype


def check_supported(name: str, spec: ArraySpec) -> None:
    """ShapeError unless ``spec`` has a numeric or bool dtype."""
    if spec.dtype.kind not in SUPPORTED_KINDS:
        raise shape_error(name, f"unsupported dtype {spec.dtype}", spec)


def check_scalar_fits(name: str, dtype: np.dtype, value) -> None:
    """IntegerOverflowError (an OverflowError, as NumPy 2's) when a Python int cannot be
    represented in the integer result dtype."""
    if isinstance(value, int) and not isinstance(value, bool) and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise IntegerOverflowError(f"Python integer {value} out of bounds for {dtype}")


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
