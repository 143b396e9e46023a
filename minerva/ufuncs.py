"""Element-wise functions under NumPy's names (and the array API's), with ``out=``.

Each takes NArrays, NumPy arrays, lists or scalars, broadcasts them by NumPy's rules and
gives NumPy's result dtype (NEP 50: a Python scalar takes the array's dtype). ``out=``
writes into an NArray in place; ``dtype=`` casts the inputs first, as a ufunc's ``dtype``
does. ``where=`` is not supported (a clear TypeError says so).
"""
from __future__ import annotations

import numpy as np

from minerva.builder import build, to_narray
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.dtypes import is_scalar
from minerva.ops.elementwise import BINARY, UNARY

_PYTHON_SCALARS = (int, float, bool, complex)


def binary_op(name: str, a, b, out=None, reverse: bool = False):
    """``a <name> b`` (``b <name> a`` when ``reverse``) where ``a`` is an NArray and ``b`` an
    NArray, a scalar or an array-like; NotImplemented for other operand types."""
    kind = type(b)
    if kind in _PYTHON_SCALARS or isinstance(b, np.generic):
        return build(_SCALAR_OPS[name], [a], {"scalar": b, "reverse": reverse}, out)
    if kind is NArray:
        return build(_OPS[name], [b, a] if reverse else [a, b], out=out)
    if is_scalar(b):
        return build(_SCALAR_OPS[name], [a], {"scalar": b[()], "reverse": reverse}, out)
    if isinstance(b, (np.ndarray, list, tuple)):
        b = to_narray(b, name)
        return build(_OPS[name], [b, a] if reverse else [a, b], out=out)
    return NotImplemented


def unary_op(name: str, x, out=None):
    """``name(x)`` for an NArray ``x``."""
    return build(_OPS[name], [x], out=out)


def _ufunc_kwargs(name: str, kwargs: dict):
    """The ``dtype`` a ufunc call asks for; TypeError for what minerva does not take."""
    dtype = kwargs.pop("dtype", None)
    where = kwargs.pop("where", True)
    if kwargs.get("casting", "same_kind") == "same_kind":
        kwargs.pop("casting", None)
    if kwargs.get("order", "K") == "K":
        kwargs.pop("order", None)
    if where is not True:
        raise TypeError(f"{name}: where= is not supported by minerva; use "
                        "mv.where(cond, f(x), x) or out= with a mask assignment")
    if kwargs:
        raise TypeError(f"{name}: unsupported keyword argument(s) {sorted(kwargs)}")
    return dtype


def _binary_function(name: str):
    def function(x1, x2, /, out=None, **kwargs):
        dtype = _ufunc_kwargs(name, kwargs) if kwargs else None
        out = _single_out(out)
        if dtype is not None:
            x1, x2 = to_narray(x1, name, dtype), to_narray(x2, name, dtype)
        if isinstance(x1, NArray):
            result = binary_op(name, x1, x2, out)
        elif isinstance(x2, NArray):
            result = binary_op(name, x2, x1, out, reverse=True)
        else:
            result = binary_op(name, to_narray(x1, name), x2, out)
        if result is NotImplemented:
            raise TypeError(f"{name}: unsupported operand types {type(x1).__name__} and "
                            f"{type(x2).__name__}")
        return result
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Element-wise ``numpy.{name}`` of two arrays (or an array and a scalar)."
    return function


def _unary_function(name: str):
    def function(x, /, out=None, **kwargs):
        dtype = _ufunc_kwargs(name, kwargs) if kwargs else None
        return unary_op(name, to_narray(x, name, dtype), _single_out(out))
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Element-wise ``numpy.{name}``."
    return function


def _single_out(out):
    if isinstance(out, tuple):
        if len(out) != 1:
            raise TypeError(f"out= must hold one array, got {len(out)}")
        return out[0]
    return out


_OPS = {name: registry.get(name) for name in BINARY + UNARY + ("sigmoid", "relu")}
_SCALAR_OPS = {name: registry.get(name + "_scalar") for name in BINARY}
FUNCTIONS = {name: _binary_function(name) for name in BINARY}
FUNCTIONS.update({name: _unary_function(name) for name in UNARY + ("sigmoid", "relu")})
ALIASES = {
    "abs": "absolute", "true_divide": "divide", "mod": "remainder", "pow": "power",
    "conj": "conjugate", "acos": "arccos", "asin": "arcsin", "atan": "arctan",
    "atan2": "arctan2", "acosh": "arccosh", "asinh": "arcsinh", "atanh": "arctanh",
    "bitwise_not": "invert", "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
    "bitwise_right_shift": "right_shift", "degrees": "rad2deg", "radians": "deg2rad",
}
FUNCTIONS.update({alias: FUNCTIONS[name] for alias, name in ALIASES.items()})
globals().update(FUNCTIONS)

__all__ = sorted(FUNCTIONS) + ["binary_op", "unary_op"]
