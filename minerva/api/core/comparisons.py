"""Comparisons with operands minerva arrays cannot hold, answered as NumPy answers them.

NumPy compares an array with any Python object: ``x == None`` is element-wise False,
``x != "text"`` element-wise True, ``x < None`` raises TypeError, ``x == Decimal(1)``
compares every element with the object, and a Python int beyond an integer array's range
compares as the number it is (NumPy 2). minerva gives the same results and errors:

- an int out of the array's range, and objects whose comparison with a number never looks
  at the number (None, strings, bytes, dicts, sets, objects with ``object``'s own
  comparisons; alone or in a list): the answer is the same for every element, so it is
  NumPy's answer for one element of the array's dtype (its error, or the value), spread
  over the result by an op that reads the array (no wait for its values);
- arrays beyond numbers (strings, datetimes; ``dtypes.holds``) on either side: an op
  where NumPy has a loop for the two dtypes (``names == "cat"``, ``dates < day``); where
  it has none, NumPy's answer for one element as above (``==`` all False); records
  (which NumPy compares field by field, with no ufunc): on the host, as below;
- other objects (``Decimal``, ``Fraction``, classes with their own ``__eq__``, lists
  mixing them with numbers): NumPy's comparison of the array's values, on the host (this
  waits for them), uploaded to the current device.

An operand that opts out of NumPy's ufuncs (``__array_ufunc__ = None``) or outranks arrays
(a higher ``__array_priority__``) gets NotImplemented, as from NumPy's arrays; one with
its own ``__array_ufunc__`` gets NumPy's ufunc, which hands the comparison to it.
"""
from __future__ import annotations

import operator

import numpy as np

from minerva.builder import ASSIGN, build, to_narray
from minerva.narray import NArray
from minerva.common.errors import DTypeError
from minerva.ops.dtypes import NUMERIC_KINDS, holds

OPERATORS = {"equal": operator.eq, "not_equal": operator.ne, "less": operator.lt,
             "less_equal": operator.le, "greater": operator.gt,
             "greater_equal": operator.ge}
"""The comparison ufuncs and their Python operators."""

_INERT_TYPES = frozenset({type(None), str, bytes, dict, set, frozenset, np.str_, np.bytes_})
_RICH = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")
_ABSENT = object()
_BOUNDS: dict = {}


def fits(dtype: np.dtype, value: int) -> bool:
    """Whether Python int ``value`` lies in the range of ``dtype`` (any int does for a
    dtype that is not an integer one)."""
    if dtype.kind not in "iu":
        return True
    bounds = _BOUNDS.get(dtype)
    if bounds is None:
        info = np.iinfo(dtype)
        bounds = _BOUNDS[dtype] = (int(info.min), int(info.max))
    return bounds[0] <= value <= bounds[1]


def compare(name: str, a: NArray, b, out, reverse: bool, operator_form: bool, binary_op):
    """NumPy's answer to comparison ``name`` of NArray ``a`` with ``b``, an operand
    minerva's kernels do not take (see the module's docstring); ``binary_op`` builds the
    ops (``ufuncs.binary_op``). ``operator_form``: as ``a == b`` (a comparison
    NumPy has no loop for is all False for ``==``), else as ``numpy.equal(a, b)``."""
    function = OPERATORS[name] if operator_form else getattr(np, name)

    def numpy_answer(values):
        return function(b, values) if reverse else function(values, b)
    if a.dtype.kind == "V" or isinstance(b, NArray) and b.dtype.kind == "V":
        other = b.to_numpy() if isinstance(b, NArray) else b  # records: field by field
        return _on_host(name, a, lambda values: function(*((other, values) if reverse else
                                                            (values, other))), out)
    if isinstance(b, NArray):
        return _arrays_beyond_numbers(name, a, b, out, reverse, function, binary_op)
    data = b if isinstance(b, (int, NArray)) else np.asarray(b)
    if a.dtype.kind not in NUMERIC_KINDS or (
            isinstance(data, np.ndarray) and data.dtype.kind not in NUMERIC_KINDS
            and holds(data.dtype)):
        result = _with_a_loop(name, a, data, out, reverse, binary_op)
        if result is not None:
            return result
    if type(b) is int:
        return _constant(a, (), _one_element(numpy_answer, a), out, binary_op)
    if not isinstance(b, (np.ndarray, np.generic, list, tuple)):
        deferred = _override(name, a, b, reverse)
        if deferred is not None:
            return deferred
    data = np.asarray(b)
    if data.dtype.kind in NUMERIC_KINDS:
        return binary_op(name, a, data, out, reverse)
    if _inert(data):
        return _constant(a, data.shape, _one_element(numpy_answer, a), out, binary_op)
    return _on_host(name, a, numpy_answer, out)


def _with_a_loop(name: str, a: NArray, b, out, reverse: bool, binary_op):
    """The op comparing ``a`` with ``b`` where NumPy has a loop for their dtypes; None
    where it has none (NumPy's ``==`` then answers for every element alike)."""
    try:
        return binary_op(name, a, b, out, reverse)
    except DTypeError:
        return None


def _arrays_beyond_numbers(name, a, b, out, reverse, function, binary_op):
    """``a`` compared with NArray ``b``, one of them beyond numbers: an op where NumPy
    has a loop, else NumPy's answer for one element of each dtype, everywhere."""
    result = _with_a_loop(name, a, b, out, reverse, binary_op)
    if result is not None:
        return result
    ones = np.zeros(1, a.dtype), np.zeros(1, b.dtype)
    value = function(*ones[::-1]) if reverse else function(*ones)
    return _constant(a, b.shape, bool(np.asarray(value).flat[0]), out, binary_op)


def _one_element(numpy_answer, a: NArray) -> bool:
    """NumPy's answer for one element of ``a``'s dtype (it raises NumPy's error)."""
    answer = np.asarray(numpy_answer(np.zeros((1,) * max(a.ndim, 1), a.dtype)))
    return bool(answer.flat[0]) if answer.size else False


def _constant(a: NArray, shape: tuple, value: bool, out, binary_op):
    """``value`` in the broadcast shape of ``a`` and ``shape``, made from ``a``."""
    other = value if not shape else np.full(shape, value)
    return binary_op("logical_or" if value else "logical_and", a, other, out)


def _on_host(name: str, a: NArray, numpy_answer, out):
    """NumPy's comparison of ``a``'s values (waits for them), on the current device."""
    result = to_narray(np.asarray(numpy_answer(a.to_numpy())), name)
    if out is None:
        return result
    return build(ASSIGN, [result], {"dtype": out.dtype}, out)


def _inert(data: np.ndarray) -> bool:
    """Whether comparing a number with each element of ``data`` never looks at the
    number (strings; objects of the kinds above)."""
    if data.dtype.kind in "SU":
        return True
    return data.dtype.kind == "O" and all(_inert_value(v) for v in data.flat)


def _inert_value(value) -> bool:
    kind = type(value)
    return kind in _INERT_TYPES or all(getattr(kind, m) is getattr(object, m) for m in _RICH)


def _override(name: str, a: NArray, b, reverse: bool):
    """What NumPy's arrays do with ``b`` when it overrides their operators: NotImplemented
    (defer to ``b``) or NumPy's ufunc (which hands the call to ``b``); None for an
    ordinary object."""
    override = getattr(type(b), "__array_ufunc__", _ABSENT)
    if override is None:
        return NotImplemented
    if override is not _ABSENT:
        ufunc = getattr(np, name)
        return ufunc(b, a) if reverse else ufunc(a, b)
    if getattr(b, "__array_priority__", NArray.__array_priority__) > \
            NArray.__array_priority__:
        return NotImplemented
    return None


__all__: list = []
