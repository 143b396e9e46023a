"""NumPy's element-wise functions beyond the ufuncs: ``clip``, ``where``, ``astype``,
``round``/``around``, ``real``, ``imag``, ``angle``, ``nan_to_num`` and ``sinc`` (and the
setters of ``x.real``/``x.imag``, ``round(x)`` of a 0-d array). Each builds one op and
returns at once (``where`` of a condition alone is ``nonzero``, which waits).
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from minerva.api.core.indexing import assign, check_writable, nonzero
from minerva.api.core.manipulation import explicit_view, view_of
from minerva.builder import build, on_device, to_device, to_narray
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.dtypes import is_scalar, supported_dtype, values_decide
from minerva.ops.elementwise import ARRAY

_OPS = registry.get


def _mixed(name, operands, out=None):
    layout, arrays = [], []
    for value in operands:
        if type(value) is NArray:   # (no scalar test: it would ask NArray's __class__)
            layout.append(ARRAY)
            arrays.append(to_narray(value, name))
        elif value is None or (is_scalar(value) and not isinstance(value, NArray)):
            layout.append(value[()] if isinstance(value, np.ndarray) else value)
        else:
            layout.append(ARRAY)
            arrays.append(to_narray(value, name))
    return build(_OPS(name), arrays, {"layout": tuple(layout)}, out)

def clip(a, a_min=None, a_max=None, out=None, **kwargs) -> NArray:
    """``a`` limited to ``[a_min, a_max]`` (scalars, arrays, or None for no bound)."""
    a_min = kwargs.pop("min", a_min)
    a_max = kwargs.pop("max", a_max)
    if kwargs:
        raise TypeError(f"clip: unsupported keyword argument(s) {sorted(kwargs)}")
    x = to_narray(a, "clip")
    if a_min is None and a_max is None:  # NumPy 2: a copy (into out=, when given)
        return build(_OPS("copy"), [x]) if out is None else build(
            _OPS("assign"), [x], {"dtype": out.dtype}, out)
    return _mixed("clip", (x, a_min, a_max), out)

def where(condition, x=None, y=None) -> NArray:
    """Elements of ``x`` where ``condition`` is true, else of ``y`` (arrays or scalars,
    broadcast); with ``condition`` alone, ``nonzero(condition)``."""
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    return _mixed("where", (to_narray(condition, "where"), x, y))

def astype(x, dtype, /, *, copy=True, device=None) -> NArray:
    """``x`` cast to ``dtype`` (a copy; ``x`` itself when ``copy=False`` and no cast is
    needed), on ``device`` when given (a minerva device id; None or ``"cpu"``: ``x``'s)."""
    x = to_narray(x, "astype")
    if device is not None and device != "cpu":
        with on_device(device):
            return astype(to_device(x, device), dtype, copy=copy)
    dtype = supported_dtype(dtype)
    if not copy and dtype == x.dtype:
        return x
    if values_decide(x.dtype, dtype):  # NumPy reads the unit off the strings: so must we
        return to_narray(x.to_numpy().astype(dtype), "astype")
    return build(_OPS("astype"), [x], {"dtype": dtype})

# ---- rounding, complex parts, nan_to_num -----------------------------------------------

def round(a, decimals=0, out=None) -> NArray:  # noqa: A001  (NumPy's name)
    """``a`` rounded to ``decimals`` places (negative: to tens, hundreds...), half to
    even, in ``a``'s dtype (``float16`` for booleans, as NumPy)."""
    x = to_narray(a, "round")
    return build(_OPS("round"), [x], {"decimals": operator.index(decimals)}, out)

around = round

def python_round(self, ndigits=None):
    """``round(x)`` of a 0-d array, as of a NumPy scalar: a Python int (waits) without
    ``ndigits``, else a 0-d array."""
    if self.ndim:
        raise TypeError("type minerva.NArray doesn't define __round__ method")
    if ndigits is None:
        return builtins.round(self.item())
    return round(self, ndigits)

def real(val) -> NArray:
    """The real part: a copy for complex arrays (NumPy gives a view), the array itself
    (a view of it) otherwise."""
    x = to_narray(val, "real")
    if x.dtype.kind == "c":
        return build(_OPS("real_part"), [x], {"part": "real"})
    return view_of(x, explicit_view(x))

def imag(val) -> NArray:
    """The imaginary part: a copy for complex arrays (NumPy gives a view), zeros of the
    array's dtype otherwise."""
    x = to_narray(val, "imag")
    if x.dtype.kind == "c":
        return build(_OPS("real_part"), [x], {"part": "imag"})
    return build(_OPS("fill"), [], {"shape": x.shape, "dtype": x.dtype, "value": 0})

def set_part(part):
    """The setter of ``x.real`` or ``x.imag`` (``part``): writes that part in place."""
    def setter(self, value):
        check_writable(self)
        if self.dtype.kind != "c":
            if part == "imag":
                raise TypeError("array does not have imaginary part to set")
            assign(self, value)
            return
        attrs = {"part": part, "shape": self.shape, "dtype": self.dtype}
        build(_OPS("set_part"), [to_narray(value, part)], attrs, out=self)
    return setter

def angle(z, deg=False) -> NArray:
    """The angle of each complex element, in radians (degrees with ``deg``)."""
    return build(_OPS("angle"), [to_narray(z, "angle")], {"deg": bool(deg)})

def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None) -> NArray:
    """``x`` with NaN replaced by ``nan`` and infinities by ``posinf``/``neginf`` (the
    dtype's largest/smallest values by default); ``copy=False`` writes into an NArray
    ``x`` in place and returns it."""
    array = to_narray(x, "nan_to_num")
    attrs = {"nan": _scalar(nan), "posinf": _scalar(posinf), "neginf": _scalar(neginf)}
    out = array if not copy and isinstance(x, NArray) else None
    if out is not None:
        check_writable(out)
    return build(_OPS("nan_to_num"), [array], attrs, out)

def sinc(x) -> NArray:
    """The normalized sinc, ``sin(pi x) / (pi x)`` (1 at 0), in NumPy's result dtype."""
    return build(_OPS("sinc"), [to_narray(x, "sinc")])


def _scalar(value):
    if value is None or (is_scalar(value) and not isinstance(value, NArray)):
        return value[()] if isinstance(value, np.ndarray) else value
    raise TypeError(f"nan_to_num: expected a scalar, got {type(value).__name__}")


__all__ = ["angle", "around", "astype", "clip", "imag", "nan_to_num", "real", "round", "sinc",
           "where"]
