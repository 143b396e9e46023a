"""The folding methods of NumPy's ufuncs on minerva's element-wise functions: ``reduce``,
``accumulate`` and ``reduceat``, for every two-operand function, with NumPy's arguments
(``axis`` None, an int or a tuple; ``dtype``, ``out``, ``keepdims``, ``initial``,
``where``) and NumPy's numbers.

NumPy's own method decides first, on a stand-in of the array (zeros of its dtype, each
axis cut to at most one element, so empty axes stay empty): it raises what NumPy raises
(ValueError for a one-operand ufunc, for several axes of a ufunc NumPy may not reorder, for
an empty reduction without identity; NumPy's AxisError, TypeError ...) and gives the
result's dtype. Then one op computes it: ``add``, ``multiply``, ``maximum``, ``minimum``,
``logical_and`` and ``logical_or`` reduce as ``sum``, ``prod``, ``max``, ``min``, ``all`` and
``any`` (whose gradients they share) unless ``initial`` or ``where`` is given; ``add`` and
``multiply`` accumulate as ``cumsum`` and ``cumprod``; every other case is one
``ufunc_reduce``, ``ufunc_accumulate`` or ``ufunc_reduceat`` op (``ops.reductions``: NumPy's
method on CPU devices, a composition of the array module's functions on GPUs).
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from minerva.api.core import reductions
from minerva.builder import build, to_narray
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.dtypes import supported_dtype
from minerva.ops.reductions import normalize_axis

NO_VALUE = np._NoValue
"""NumPy's marker of an argument not given (``initial``)."""
_SIMPLE = {"add": reductions.sum, "multiply": reductions.prod, "maximum": reductions.max,
           "minimum": reductions.min, "logical_and": reductions.all,
           "logical_or": reductions.any}
_SCANS = {"add": "cumsum", "multiply": "cumprod"}
_REDUCE, _ACCUMULATE = registry.get("ufunc_reduce"), registry.get("ufunc_accumulate")
_REDUCEAT, _CUMULATIVE = registry.get("ufunc_reduceat"), registry.get("cumulative")


def mask_of(where):
    """``where=`` as a boolean NArray (None for ``True``): lists and scalars are converted
    to bool, arrays must already be bool (NumPy's 'safe' rule)."""
    if where is True:
        return None
    if isinstance(where, (NArray, np.ndarray)) and where.dtype != np.bool_:
        np.add(1, 1, where=np.zeros((), where.dtype))  # NumPy's TypeError
    if isinstance(where, NArray):
        return where
    return to_narray(np.asarray(where, dtype=bool), "where")


def check_arity(name: str, method: str, nin: int, nout: int) -> None:
    """NumPy's ValueError for a folding method of a ufunc that is not binary."""
    if nin != 2:
        raise ValueError(f"{method} only supported for binary functions")
    if nout != 1:
        raise ValueError(f"{method} only supported for functions returning a single value")


def single_out(out):
    """``out=`` of a method: one array, or None (a tuple of one is unpacked)."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError("The 'out' tuple must have exactly one entry")
        out = out[0]
    if out is not None and not isinstance(out, NArray):
        raise TypeError(f"out= must be an NArray, got {type(out).__name__}")
    return out


def _stand_in(x: NArray, keep_axis=None, whole=False) -> np.ndarray:
    """Zeros of ``x``'s dtype, each axis (but ``keep_axis``; none when ``whole``) cut to at
    most one element."""
    shape = tuple(n if whole or d == keep_axis else min(n, 1) for d, n in enumerate(x.shape))
    return np.broadcast_to(np.zeros((), x.dtype), shape)


def _numpy(method, *args, out=None, **kwargs):
    """NumPy's ``method`` on stand-ins: its result, or its error; with ``out`` (an NArray)
    checked against a stand-in of ``out``'s dtype."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = method(*args, **kwargs)
        if out is not None:
            result = method(*args, out=np.zeros(np.shape(result), out.dtype), **kwargs)
    return np.asarray(result).dtype


def reduce_method(name: str, nin: int, nout: int):
    """``<name>.reduce``."""
    def reduce(array, axis=0, dtype=None, out=None, keepdims=False, initial=NO_VALUE,
               where=True):
        check_arity(name, "reduce", nin, nout)
        x, out, dtype = to_narray(array, f"{name}.reduce"), single_out(out), _dtype(dtype)
        mask = mask_of(where)
        extras = {} if initial is NO_VALUE else {"initial": initial}
        if mask is not None:
            extras["where"] = _stand_in(mask).astype(bool)
        result = _numpy(getattr(np, name).reduce, _stand_in(x), axis=axis, dtype=dtype,
                        keepdims=keepdims, out=out, **extras)
        axes = normalize_axis(f"{name}.reduce", axis, x.ndim)
        initial = None if initial is NO_VALUE else initial
        if name in _SIMPLE and initial is None and mask is None:
            return _simple(name, x, axes, dtype, out, keepdims)
        attrs = {"name": name, "axis": axes, "keepdims": bool(keepdims), "initial": initial,
                 "dtype": dtype, "result": result}
        return build(_REDUCE, [x] if mask is None else [x, mask], attrs, out)
    return named(reduce, name, "reduce", "NumPy's ``{0}.reduce``: ``{0}`` folded along "
                  "``axis`` (0 by default), from ``initial``, over the elements ``where``"
                  " selects.")


def _dtype(dtype):
    """``dtype=`` as a dtype minerva holds (DTypeError for others), or None."""
    return None if dtype is None else supported_dtype(dtype)


def _simple(name: str, x: NArray, axes, dtype, out, keepdims):
    """The reductions minerva has under their own names (``sum`` for ``add`` ...)."""
    if dtype is None and out is not None:
        dtype = out.dtype  # NumPy reduces in out's dtype
    if dtype is not None and name not in ("add", "multiply"):  # the others: x cast first
        x, dtype = to_narray(x, f"{name}.reduce", dtype), None
    return _SIMPLE[name](x, axis=axes, dtype=dtype, out=out, keepdims=keepdims)


def accumulate_method(name: str, nin: int, nout: int):
    """``<name>.accumulate``."""
    def accumulate(array, axis=0, dtype=None, out=None):
        check_arity(name, "accumulate", nin, nout)
        x, out = to_narray(array, f"{name}.accumulate"), single_out(out)
        dtype = _dtype(dtype)
        result = _numpy(getattr(np, name).accumulate, _stand_in(x), axis=axis, dtype=dtype,
                        out=out)
        axis = _one_axis(axis, x.ndim)
        if name in _SCANS:
            attrs = {"name": _SCANS[name], "axis": axis, "dtype": result,
                     "include_initial": False}
            return build(_CUMULATIVE, [x], attrs, out)
        attrs = {"name": name, "axis": axis, "dtype": dtype, "result": result}
        return build(_ACCUMULATE, [x], attrs, out)
    return named(accumulate, name, "accumulate", "NumPy's ``{0}.accumulate``: the running "
                  "``{0}`` along ``axis`` (0 by default).")


def _one_axis(axis, ndim: int) -> int:
    """The one axis an accumulation runs along (NumPy has checked it)."""
    if isinstance(axis, (tuple, list)):
        (axis,) = axis
    return 0 if axis is None else operator.index(axis) % ndim


def reduceat_method(name: str, nin: int, nout: int):
    """``<name>.reduceat``."""
    def reduceat(array, indices, axis=0, dtype=None, out=None):
        check_arity(name, "reduceat", nin, nout)
        x, out = to_narray(array, f"{name}.reduceat"), single_out(out)
        dtype = _dtype(dtype)
        if isinstance(indices, NArray):
            indices = indices.to_numpy()  # the segments are known on the host
        try:
            keep = np.lib.array_utils.normalize_axis_index(axis, x.ndim)
        except (TypeError, ValueError):
            keep = None
        result = _numpy(getattr(np, name).reduceat, _stand_in(x, keep, keep is None),
                        indices, axis=axis, dtype=dtype, out=out)
        attrs = {"name": name, "axis": keep or 0, "dtype": dtype, "result": result,
                 "indices": tuple(int(i) for i in np.asarray(indices).astype(np.intp))}
        return build(_REDUCEAT, [x], attrs, out)
    return named(reduceat, name, "reduceat", "NumPy's ``{0}.reduceat``: ``{0}`` folded "
                  "over the slices of ``axis`` that start at ``indices``.")


def named(method, name: str, kind: str, doc: str):
    """``method``, named ``kind`` (``<name>.<kind>``), with its docstring."""
    method.__name__ = kind
    method.__qualname__ = f"{name}.{kind}"
    method.__doc__ = doc.format(name)
    return method


__all__: list = []
