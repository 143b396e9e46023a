"""The methods of NumPy's ufuncs on minerva's element-wise functions, where minerva has
NumPy's exact equivalent: ``reduce`` of add, multiply, maximum, minimum, logical_and and
logical_or (NumPy's ``sum``, ``prod``, ``max``, ``min``, ``all`` and ``any`` are those
reductions), ``accumulate`` of add and multiply (``cumsum``, ``cumprod``), ``outer`` of
every binary function (a broadcast), and ``add.at`` (``minerva.api.core.indexing.add_at``).
Any other method is refused with :class:`UfuncMethodError`, both when it is looked up on
minerva's function and when NumPy's is called on NArrays.
"""
from __future__ import annotations

import operator

import numpy as np

from minerva.api.core import reductions
from minerva.api.core.indexing import add_at
from minerva.api.core.manipulation import reshape
from minerva.builder import build, to_narray
from minerva.common.errors import MinervaError
from minerva.ops import registry
from minerva.ops.dtypes import supported_dtype
from minerva.ops.reductions import normalize_axis

METHODS = ("reduce", "accumulate", "reduceat", "outer", "at")
"""NumPy's ufunc methods."""

_REDUCTIONS = {"add": reductions.sum, "multiply": reductions.prod,
               "maximum": reductions.max, "minimum": reductions.min,
               "logical_and": reductions.all, "logical_or": reductions.any}
_ACCUMULATIONS = {"add": "cumsum", "multiply": "cumprod"}
_CUMULATIVE = registry.get("cumulative")


class UfuncMethodError(MinervaError, AttributeError, NotImplementedError, TypeError):
    """A ufunc method minerva does not implement yet for that function (``multiply.at``,
    ``subtract.reduce``, ``add.reduceat`` ...), raised when it is looked up on minerva's
    function (so ``hasattr`` says False) and when NumPy's is called on NArrays. Also an
    AttributeError, a NotImplementedError, and a TypeError as NumPy raises for operands
    its ufunc cannot take."""


def missing_method(name: str, method: str) -> UfuncMethodError:
    """The error for ufunc ``name``'s ``method``, which minerva lacks."""
    return UfuncMethodError(
        f"minerva does not implement {name}.{method} yet; apply numpy.{name}.{method} to "
        "the values on the host (x.to_numpy()) and make an NArray of the result with "
        "mv.array(...)", name=method)


def methods_of(name: str, ufunc, binary: bool) -> dict:
    """The methods minerva has for ufunc ``name`` (``ufunc`` itself, called by
    ``outer``), by method name."""
    found = {}
    if name in _REDUCTIONS:
        found["reduce"] = _reduce(name)
    if name in _ACCUMULATIONS:
        found["accumulate"] = _accumulate(name)
    if binary:
        found["outer"] = _outer(name, ufunc)
    if name == "add":
        found["at"] = add_at
    return found


def _reduce(name: str):
    reduction = _REDUCTIONS[name]

    def reduce(array, axis=0, dtype=None, out=None, keepdims=False, **kwargs):
        x = to_narray(array, f"{name}.reduce")
        if dtype is not None:
            dtype = supported_dtype(dtype)
            getattr(np, name).reduce(np.zeros(1, x.dtype), dtype=dtype)  # NumPy's refusal
            if name in ("add", "multiply"):
                kwargs["dtype"] = dtype
            else:  # the others reduce the array cast to dtype
                x = to_narray(x, f"{name}.reduce", dtype)
        return reduction(x, axis=axis, out=out, keepdims=keepdims, **kwargs)
    reduce.__name__ = reduce.__qualname__ = f"{name}.reduce"
    reduce.__doc__ = (f"NumPy's ``{name}.reduce``: ``{reduction.__name__}`` along ``axis`` "
                      "(0 by default, as NumPy's).")
    return reduce


def _accumulate(name: str):
    function = _ACCUMULATIONS[name]

    def accumulate(array, axis=0, dtype=None, out=None):
        x = to_narray(array, f"{name}.accumulate")
        axis = _one_axis(name, axis, x.ndim)
        dtype = None if dtype is None else supported_dtype(dtype)
        return build(_CUMULATIVE, [x], {"name": function, "axis": axis, "dtype": dtype,
                                        "include_initial": False}, out)
    accumulate.__name__ = accumulate.__qualname__ = f"{name}.accumulate"
    accumulate.__doc__ = f"NumPy's ``{name}.accumulate``: ``{function}`` along ``axis``."
    return accumulate


def _one_axis(name: str, axis, ndim: int) -> int:
    """The one axis an accumulation runs along, with NumPy's errors."""
    if ndim == 0:
        if axis is not None:
            normalize_axis(f"{name}.accumulate", axis, 1)
        raise TypeError("cannot accumulate on a scalar")
    if isinstance(axis, (tuple, list)) and len(axis) == 1:
        axis = axis[0]
    if axis is None and ndim == 1:
        axis = 0
    if axis is None or isinstance(axis, (tuple, list)):
        raise ValueError("accumulate does not allow multiple axes")
    return normalize_axis(f"{name}.accumulate", operator.index(axis), ndim)[0]


def _outer(name: str, ufunc):
    def outer(A, B, /, **kwargs):
        a, b = to_narray(A, f"{name}.outer"), to_narray(B, f"{name}.outer")
        return ufunc(reshape(a, a.shape + (1,) * b.ndim), b, **kwargs)
    outer.__name__ = outer.__qualname__ = f"{name}.outer"
    outer.__doc__ = (f"NumPy's ``{name}.outer``: ``{name}`` of every element of ``A`` with "
                     "every element of ``B`` (shape ``A.shape + B.shape``).")
    return outer


__all__ = ["UfuncMethodError"]
