"""The methods of NumPy's ufuncs on minerva's element-wise functions: ``reduce``,
``accumulate``, ``reduceat`` (``ufunc_folds``), ``outer`` and ``at``, on every function, as
NumPy's ufuncs have them all; each raises NumPy's error where NumPy's does (ValueError for
``reduce`` of a one-operand function, for ``at`` of ``divmod`` ...).

``outer`` reshapes ``A`` to ``A.shape + (1,) * B.ndim`` and calls the function (so its
keywords and gradients are the call's). ``at`` writes into the array in place, unbuffered
(an index that repeats applies the function once per occurrence), through minerva's writes
(views and versions stay right): ``add.at`` with values of the array's dtype is the
``scatter_add`` op (with its gradient), every other one the ``ufunc_at`` op
(``ops.indexing``: NumPy's ``at`` on CPU devices; on GPUs, rounds of gathers and scatters
over the array module).

:class:`UfuncMethodError` remains for the functions minerva has that are not ufuncs
(``numpy.<name>.<method>`` on NArrays, where minerva's ``<name>`` is a plain function).
"""
from __future__ import annotations

import warnings

import numpy as np

from minerva.api.core import ufunc_folds
from minerva.api.core.indexing import add_at, advanced_index, check_writable
from minerva.api.core.manipulation import reshape
from minerva.builder import build, to_narray
from minerva.common.errors import MinervaError
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.elementwise import ARRAY
from minerva.ops.indexing import UFUNC_AT

METHODS = ("reduce", "accumulate", "reduceat", "outer", "at")
"""NumPy's ufunc methods."""
_NO_OPERAND = object()


class UfuncMethodError(MinervaError, AttributeError, NotImplementedError, TypeError):
    """A ufunc method minerva cannot run: NumPy's ``<name>.<method>`` called on NArrays
    where minerva's ``<name>`` is not a ufunc. Also an AttributeError, a
    NotImplementedError, and a TypeError as NumPy raises for operands its ufunc cannot
    take."""


def missing_method(name: str, method: str) -> UfuncMethodError:
    """The error for ufunc ``name``'s ``method``, which minerva lacks."""
    return UfuncMethodError(
        f"minerva does not implement {name}.{method} yet; apply numpy.{name}.{method} to "
        "the values on the host (x.to_numpy()) and make an NArray of the result with "
        "mv.array(...)", name=method)


def methods_of(name: str, ufunc, nin: int, nout: int) -> dict:
    """The five methods of ufunc ``name`` (``ufunc`` itself, called by ``outer``), by
    method name."""
    return {"reduce": ufunc_folds.reduce_method(name, nin, nout),
            "accumulate": ufunc_folds.accumulate_method(name, nin, nout),
            "reduceat": ufunc_folds.reduceat_method(name, nin, nout),
            "outer": _outer(name, ufunc, nin), "at": _at(name, nin, nout)}


def _outer(name: str, ufunc, nin: int):
    def outer(A, B, /, **kwargs):
        if nin != 2:
            raise ValueError("outer product only supported for binary functions")
        a, b = to_narray(A, f"{name}.outer"), to_narray(B, f"{name}.outer")
        return ufunc(reshape(a, a.shape + (1,) * b.ndim), b, **kwargs)
    return ufunc_folds.named(outer, name, "outer", "NumPy's ``{0}.outer``: ``{0}`` of every "
                             "element of ``A`` with every element of ``B`` (shape "
                             "``A.shape + B.shape``), with the call's keywords.")


def _at(name: str, nin: int, nout: int):
    def at(a, indices, b=_NO_OPERAND, /):
        _check_at(name, a, b, nin, nout)
        check_writable(a)
        b = None if b is _NO_OPERAND else b
        if b is not None and not _is_scalar(b):
            b = to_narray(b, f"{name}.at")
        _check_types(name, a, b, nin)
        if name == "add" and _exact_in_place(a.dtype, b):
            return add_at(a, indices, b)
        layout, arrays = advanced_index(a, indices)
        attrs = {"name": name, "layout": layout, "value": b, "shape": a.shape,
                 "dtype": a.dtype}
        if isinstance(b, NArray):
            attrs["value"], arrays = ARRAY, [b] + arrays
        build(UFUNC_AT, arrays, attrs, out=a)
    return ufunc_folds.named(at, name, "at", "NumPy's ``{0}.at``: ``a[indices] = {0}(a[indices]"
                             "[, b])`` in place, unbuffered (a repeated index applies it "
                             "each time).")


def _check_at(name: str, a, b, nin: int, nout: int) -> None:
    """NumPy's errors for the operands of ``at``."""
    if nout != 1:
        raise ValueError("Only single output ufuncs supported at this time")
    if not isinstance(a, NArray):
        raise TypeError("first operand must be array")
    if nin == 1 and b is not _NO_OPERAND:
        raise ValueError("second operand provided when ufunc is unary")
    if nin == 2 and b is _NO_OPERAND:
        raise ValueError("second operand needed for ufunc")


_TYPES_CHECKED: set = set()
"""(ufunc name, dtype, operand key) of the ``at`` calls ``_check_types`` passed (bounded:
cleared when full)."""
_MAX_TYPES_CHECKED = 1024


def _check_types(name: str, a: NArray, b, nin: int) -> None:
    """NumPy's TypeError for dtypes its ``at`` has no loop for (on stand-ins, once per
    dtypes and kind of operand); for minerva's own ufuncs, their op's DTypeError."""
    key = (name, a.dtype, _operand_key(b))
    if key in _TYPES_CHECKED:
        return
    _check_types_now(name, a, b, nin)
    if len(_TYPES_CHECKED) >= _MAX_TYPES_CHECKED:
        _TYPES_CHECKED.clear()
    _TYPES_CHECKED.add(key)


def _operand_key(b):
    """What NumPy's check of ``at``'s operand reads: its dtype, the value of a Python int
    (NEP 50: one out of range raises), else its type."""
    if isinstance(b, (NArray, np.generic)):
        return b.dtype
    return (int, b) if type(b) is int else type(b)


def _check_types_now(name: str, a: NArray, b, nin: int) -> None:
    ufunc = getattr(np, name, None)
    if not isinstance(ufunc, np.ufunc):
        registry.get(name).infer(a._spec)
        return
    operands = () if nin == 1 else (np.zeros(1, b.dtype) if isinstance(b, NArray) else b,)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ufunc.at(np.zeros(1, a.dtype), np.zeros(1, np.intp), *operands)


def _is_scalar(value) -> bool:
    return isinstance(value, (bool, int, float, complex, np.generic))


def _exact_in_place(dtype: np.dtype, b) -> bool:
    """Whether adding ``b`` cast to ``dtype`` is what NumPy's ``add.at`` computes (its loop
    is of ``dtype``)."""
    if isinstance(b, NArray):
        return b.dtype == dtype
    if not _is_scalar(b) or np.result_type(dtype, b) != dtype:
        return False
    if isinstance(b, int) and dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min <= b <= info.max
    return True


__all__ = ["UfuncMethodError"]
