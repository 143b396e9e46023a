"""Printing, as NumPy prints: NArray's ``repr``, ``str`` and ``format``, and NumPy's
printing functions on NArrays (``array2string``, ``array_repr``, ``array_str``,
``format_float_positional``, ``format_float_scientific``).

Text is NumPy's own: printing waits for the values (as CuPy and PyTorch do), reads them
onto the host and formats them with NumPy, so NumPy's print options hold
(``mv.set_printoptions``, ``mv.get_printoptions`` and ``mv.printoptions`` are NumPy's own
functions). An array prints
as a NumPy array (``array([0., 1.])``, ``[0. 1.]``), a NumPy scalar
(``minerva.api.core.scalars``) as NumPy's scalar (``np.float64(3.0)``, ``3.0``).

``repr`` never raises minerva's errors: an array whose op failed (or of a runtime that was
shut down, or read while a jit records) prints as ``NArray(shape=(3,), dtype=float64,
device=0, failed: OpError: ...)`` — and the failure counts as reported (``wait_for_all``
does not raise it again). ``str``, ``format`` and the functions read the values as
``to_numpy`` does, and raise the op's error.
"""
from __future__ import annotations

import numpy as np
from numpy import get_printoptions, printoptions, set_printoptions

from minerva.api.core.scalars import is_numpy_scalar
from minerva.common.errors import MinervaError
from minerva.narray import NArray


def host_value(x):
    """``x``'s value on the host, as NumPy would hold it: an NArray standing for a NumPy
    scalar as that scalar, another NArray as a NumPy array (both wait); anything else
    as it is."""
    if not isinstance(x, NArray):
        return x
    values = x.to_numpy()
    return values[()] if is_numpy_scalar(x) else values


def narray_repr(x: NArray) -> str:
    """``repr(x)``: NumPy's ``repr`` of the value (waits); the error, for an array whose
    value cannot be read."""
    try:
        value = host_value(x)
    except MinervaError as error:
        return _unreadable(x, error)
    return repr(value) if is_numpy_scalar(x) else np.array_repr(value)


def _unreadable(x: NArray, error: MinervaError) -> str:
    message = str(error).splitlines()[0] if str(error) else ""
    return (f"NArray(shape={x.shape}, dtype={x.dtype}, device={x.device}, failed: "
            f"{type(error).__name__}: {message})")


def narray_str(x: NArray) -> str:
    """``str(x)``: NumPy's ``str`` of the value (waits; raises the op's error)."""
    return str(host_value(x))


def narray_format(x: NArray, spec: str) -> str:
    """``format(x, spec)``: a 0-d array or a scalar formats its element (``f"{s:.2f}"``);
    an array takes the empty spec alone, as NumPy's."""
    value = host_value(x)
    return format(value[()] if isinstance(value, np.ndarray) and not value.ndim else value,
                  spec)


def array2string(a, *args, **kwargs) -> str:
    """``numpy.array2string`` of ``a``'s values (waits)."""
    return np.array2string(_as_array(a), *args, **kwargs)


def array_repr(arr, *args, **kwargs) -> str:
    """``numpy.array_repr`` of ``arr``'s values (waits)."""
    return np.array_repr(_as_array(arr), *args, **kwargs)


def array_str(a, *args, **kwargs) -> str:
    """``numpy.array_str`` of ``a``'s values (waits)."""
    return np.array_str(_as_array(a), *args, **kwargs)


def format_float_positional(x, *args, **kwargs) -> str:
    """``numpy.format_float_positional`` of the scalar ``x`` (a size-1 NArray waits)."""
    return np.format_float_positional(_as_scalar(x), *args, **kwargs)


def format_float_scientific(x, *args, **kwargs) -> str:
    """``numpy.format_float_scientific`` of the scalar ``x`` (a size-1 NArray waits)."""
    return np.format_float_scientific(_as_scalar(x), *args, **kwargs)


def _as_array(a):
    return a.to_numpy() if isinstance(a, NArray) else a


def _as_scalar(x):
    if not isinstance(x, NArray):
        return x
    if x.size != 1:
        raise TypeError(f"only size-1 arrays can be formatted as one number; this one has "
                        f"shape {x.shape}")
    return x.to_numpy().reshape(())[()]


__all__ = ["array2string", "array_repr", "array_str", "format_float_positional",
           "format_float_scientific", "get_printoptions", "printoptions",
           "set_printoptions"]
