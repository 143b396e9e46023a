"""NArray's operators and NumPy's methods, installed on the class at import.

They live here, not in ``narray.py``, because they build ops through the public functions,
which themselves return NArrays: installing them from above keeps the face free of import
cycles. In-place operators (``+=`` …) write into the array, as NumPy's do.
"""
from __future__ import annotations

import operator

from minerva import (autograd, comparisons, creation, functions, indexing, interop, linalg,
                     manipulation, statistics, ufuncs)
from minerva.builder import build, to_device, to_narray, upload
from minerva.narray import NArray
from minerva.ops import registry

_OPERATORS = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "and": "bitwise_and",
    "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
    "rshift": "right_shift",
}
_COMPARISONS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                "gt": "greater", "ge": "greater_equal"}


def _forward(name):
    op, scalar_op = registry.get(name), registry.get(name + "_scalar")

    def method(self, other):
        kind = type(other)
        if kind is float or kind is int:  # the common cases, without a detour
            return build(scalar_op, [self], {"scalar": other, "reverse": False})
        if kind is NArray:
            return build(op, [self, other])
        return ufuncs.binary_op(name, self, other)
    return method


def _comparison(name):
    op, scalar_op = registry.get(name), registry.get(name + "_scalar")

    def method(self, other):
        kind = type(other)
        if kind is float or kind is int and comparisons.fits(self._spec.dtype, other):
            return build(scalar_op, [self], {"scalar": other, "reverse": False})
        if kind is NArray:
            return build(op, [self, other])
        return ufuncs.compare(name, self, other, operator_form=True)
    return method


def _reflected(name):
    def method(self, other):
        return ufuncs.binary_op(name, self, other, reverse=True)
    return method


def _in_place(name):
    def method(self, other):
        result = ufuncs.binary_op(name, self, other, out=self)
        if result is NotImplemented:
            return NotImplemented
        return self
    return method


def _unary(name):
    def method(self):
        return ufuncs.unary_op(name, self)
    return method


def _install_operators() -> None:
    for dunder, name in _OPERATORS.items():
        setattr(NArray, f"__{dunder}__", _forward(name))
        setattr(NArray, f"__r{dunder}__", _reflected(name))
        setattr(NArray, f"__i{dunder}__", _in_place(name))
    for dunder, name in _COMPARISONS.items():
        setattr(NArray, f"__{dunder}__", _comparison(name))
    NArray.__divmod__ = _forward("divmod")
    NArray.__rdivmod__ = _reflected("divmod")
    NArray.__neg__ = _unary("negative")
    NArray.__pos__ = _unary("positive")
    NArray.__abs__ = _unary("absolute")
    NArray.__invert__ = _unary("invert")


def _matmul(self, other):
    return functions.matmul(self, other)


def _rmatmul(self, other):
    return functions.matmul(other, self)


def _imatmul(self, other):
    other = to_narray(other, "matmul")
    if other.ndim < 2:
        raise ValueError("inplace matrix multiplication requires the first operand to have "
                         "at least one and the second at least two dimensions.")
    functions.matmul(self, other, out=self)
    return self


def _iter(self):
    if not self.shape:
        raise TypeError("iteration over a 0-d array")
    for i in range(self.shape[0]):
        yield self[i]


def _contains(self, value) -> bool:
    """``value in x``: whether an element equals ``value``, NumPy's ``(x == value).any()``
    (it waits for the answer)."""
    found = operator.eq(self, value)
    return bool(functions.any(found) if isinstance(found, NArray) else found.any())


def _reduce(self):
    return (upload, (self.to_numpy(),))


def _copy_method(self, order="C"):
    """A copy (new storage) on the current device, laid out in memory order ``order``
    (``'C'``, ``'F'``, ``'A'``: F when this array is F- and not C-contiguous, ``'K'``:
    as this array's strides), as NumPy's."""
    return creation.copy(self, order)


def _shallow_copy(self):
    return creation.copy(self, "K")


def _deepcopy(self, memo):
    result = creation.copy(self, "K")
    memo[id(self)] = result
    return result


def _fill(self, value):
    """Set every element to ``value`` (in place)."""
    indexing.setitem(self, Ellipsis, value)


def _to(self, device, /, *, stream=None):
    """This array on ``device``: itself when it lives there, else a copy (cached while this
    value lives). ``stream`` is accepted for the array API and ignored. MinervaError for an
    array of a runtime that was shut down."""
    self._storage.engine.check_open(self._storage.current)
    return to_device(self, device)


def _reshape(self, *shape, order="C", copy=None):
    """The values in a new shape (a view when NumPy makes one)."""
    return functions.reshape(self, shape[0] if len(shape) == 1 else shape, order, copy=copy)


def _transpose(self, *axes):
    """A view with the axes permuted (reversed by default)."""
    return functions.transpose(self, axes[0] if len(axes) == 1 else (axes or None))


def _flatten(self, order="C"):
    """A 1-D copy."""
    return creation.copy(functions.ravel(self, order), "C")


def _dot(self, b, out=None):
    """``numpy.dot(self, b)``."""
    return functions.dot(self, b, out=out)


_METHODS = {
    "__getitem__": indexing.getitem, "__setitem__": indexing.setitem, "__iter__": _iter,
    "__matmul__": _matmul, "__rmatmul__": _rmatmul, "__imatmul__": _imatmul,
    "__copy__": _shallow_copy, "__deepcopy__": _deepcopy, "__reduce__": _reduce,
    "__contains__": _contains,
    "copy": _copy_method, "fill": _fill, "to": _to, "to_device": _to,
    "reshape": _reshape, "transpose": _transpose, "flatten": _flatten,
    "T": property(lambda self: functions.transpose(self)),
    "mT": property(lambda self: functions.swapaxes(self, -1, -2)),
    "ravel": functions.ravel, "squeeze": functions.squeeze, "swapaxes": functions.swapaxes,
    "astype": lambda self, dtype, copy=True, device=None: functions.astype(
        self if device is None else to_device(self, device), dtype, copy=copy),
    "clip": functions.clip, "argmax": functions.argmax, "argmin": functions.argmin,
    "sum": functions.sum, "prod": functions.prod, "max": functions.max,
    "min": functions.min, "mean": functions.mean, "any": functions.any,
    "all": functions.all, "dot": _dot,
}


def _install_methods() -> None:
    tables = (_METHODS, manipulation.METHODS, statistics.METHODS, linalg.METHODS,
              interop.METHODS, autograd.METHODS)
    for table in tables:
        for name, method in table.items():
            setattr(NArray, name, method)


_install_operators()
_install_methods()
ufuncs.FUNCTIONS["add"].at = indexing.add_at
