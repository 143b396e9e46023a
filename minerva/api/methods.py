"""NArray's operators and NumPy's methods: the one table (``METHODS``) of every one of them,
by name, installed on the class at import.

They live here, not in ``narray.py``, because they build ops through the public functions
of the chapters, which themselves return NArrays: installing them from above keeps the
face free of import cycles. Every entry names the function that implements it (in the
chapter of NumPy's function of that name); the small adapters below are the methods whose
signature differs from the function's. In-place operators (``+=`` ...) write into the
array, as NumPy's do.
"""
from __future__ import annotations

import operator
import types

import numpy as np

from minerva import autograd
from minerva.api import interop, printing, sorting, statistics
from minerva.api.core import (attributes, creation, elementwise, exports, fields,
                              indexing, iteration, layout, lean, manipulation, reductions,
                              scalars)
from minerva.api.core.ufuncs import (FUNCTIONS, comparison_method, in_place_method,
                                     operator_method, power_method, reflected_method,
                                     unary_method)
from minerva.api.indexing import select
from minerva.api.manipulation import shaping
from minerva.builder import check_open, on_device, to_device, to_narray, upload
from minerva.linalg import products
from minerva.narray import NArray


# ---- adapters: methods whose signature is not the function's -------------------------------

def _rmatmul(self, other):
    return products.matmul(other, self)


def _imatmul(self, other):
    other = to_narray(other, "matmul")
    if other.ndim < 2:
        raise ValueError("inplace matrix multiplication requires the first operand to have "
                         "at least one and the second at least two dimensions.")
    products.matmul(self, other, out=self)
    return self


def _iter(self):
    """Rows as views, or the elements of a 1-D array read once on the host
    (``minerva.api.core.iteration``)."""
    scalars.check_iterable(self)  # raises at once, not at the first next()
    return iteration.iterate(self)


def _transposed(self):
    """``x.T``: the view with the axes reversed."""
    return manipulation.transpose(self)


def _delitem(self, key):
    raise ValueError("cannot delete array elements")


def _class_getitem(cls, item):
    """``NArray[shape, dtype]`` in annotations, as ``numpy.ndarray[...]``."""
    return types.GenericAlias(cls, item)


def _contains(self, value) -> bool:
    """``value in x``: whether an element equals ``value``, NumPy's ``(x == value).any()``
    (it waits for the answer)."""
    found = operator.eq(self, value)
    return bool(reductions.any(found) if isinstance(found, NArray) else found.any())


def _reduce(self):
    return (upload, (self.to_numpy(),))


def _copy(self, order="C"):
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
    check_open(self)
    return to_device(self, device)


def _reshape(self, *shape, order="C", copy=None):
    """The values in a new shape (a view when NumPy makes one)."""
    return manipulation.reshape(self, shape[0] if len(shape) == 1 else shape, order,
                                copy=copy)


def _transpose(self, *axes):
    """A view with the axes permuted (reversed by default)."""
    return manipulation.transpose(self, axes[0] if len(axes) == 1 else (axes or None))


def _flatten(self, order="C"):
    """A 1-D copy."""
    return creation.copy(manipulation.ravel(self, order), "C")


def _astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True, device=None):
    """This array cast to ``dtype`` (on ``device`` when given), laid out in memory order
    ``order``; TypeError with NumPy's words when ``casting`` forbids the cast. ``copy=False``
    returns this array itself when nothing changes."""
    if device is not None and device != "cpu":
        with on_device(device):
            return _astype(to_device(self, device), dtype, order, casting, subok, copy)
    x = self
    order = layout.check_order(order)
    dtype = creation.check_dtype(dtype, sized=False)  # 'U' is sized by the values' dtype
    if not np.can_cast(x.dtype, dtype, casting):
        raise TypeError(f"Cannot cast array data from {x.dtype!r} to {dtype!r} according "
                        f"to the rule {casting!r}")
    if order == "K":
        return elementwise.astype(x, dtype, copy=copy)
    return creation.array(x, dtype, copy=True if copy else None, order=order)


def _backward(self, out_grad=None, retain_graph=False, train_mode=True):
    """Gradients of this array into every variable it depends on (``autograd.backward``)."""
    autograd.backward([self], None if out_grad is None else [out_grad], retain_graph,
                      train_mode)


# ---- the table ----------------------------------------------------------------------------

METHODS: dict = {
    # arithmetic operators: x <op> y, y <op> x, x <op>= y
    "__add__": operator_method("add"), "__radd__": reflected_method("add"),
    "__iadd__": in_place_method("add"),
    "__sub__": operator_method("subtract"), "__rsub__": reflected_method("subtract"),
    "__isub__": in_place_method("subtract"),
    "__mul__": operator_method("multiply"), "__rmul__": reflected_method("multiply"),
    "__imul__": in_place_method("multiply"),
    "__truediv__": operator_method("divide"), "__rtruediv__": reflected_method("divide"),
    "__itruediv__": in_place_method("divide"),
    "__floordiv__": operator_method("floor_divide"),
    "__rfloordiv__": reflected_method("floor_divide"),
    "__ifloordiv__": in_place_method("floor_divide"),
    "__mod__": operator_method("remainder"), "__rmod__": reflected_method("remainder"),
    "__imod__": in_place_method("remainder"),
    "__pow__": power_method(), "__rpow__": reflected_method("power"),
    "__ipow__": power_method(in_place=True),
    "__and__": operator_method("bitwise_and"), "__rand__": reflected_method("bitwise_and"),
    "__iand__": in_place_method("bitwise_and"),
    "__or__": operator_method("bitwise_or"), "__ror__": reflected_method("bitwise_or"),
    "__ior__": in_place_method("bitwise_or"),
    "__xor__": operator_method("bitwise_xor"), "__rxor__": reflected_method("bitwise_xor"),
    "__ixor__": in_place_method("bitwise_xor"),
    "__lshift__": operator_method("left_shift"),
    "__rlshift__": reflected_method("left_shift"),
    "__ilshift__": in_place_method("left_shift"),
    "__rshift__": operator_method("right_shift"),
    "__rrshift__": reflected_method("right_shift"),
    "__irshift__": in_place_method("right_shift"),
    "__divmod__": operator_method("divmod"), "__rdivmod__": reflected_method("divmod"),
    "__matmul__": products.matmul, "__rmatmul__": _rmatmul, "__imatmul__": _imatmul,
    # comparisons and unary operators
    "__eq__": comparison_method("equal"), "__ne__": comparison_method("not_equal"),
    "__lt__": comparison_method("less"), "__le__": comparison_method("less_equal"),
    "__gt__": comparison_method("greater"), "__ge__": comparison_method("greater_equal"),
    "__neg__": unary_method("negative"), "__pos__": unary_method("positive"),
    "__abs__": unary_method("absolute"), "__invert__": unary_method("invert"),
    "__round__": elementwise.python_round,
    # indexing, iteration, copies, pickling
    "__getitem__": lean.element(fields.getitem), "__setitem__": lean.setitem(fields.setitem),
    # conversions of one element, read at once where it is computed on a CPU device
    "__float__": lean.conversion(NArray.__float__, "float"),
    "__int__": lean.conversion(NArray.__int__, "int"),
    "__bool__": lean.conversion(NArray.__bool__, "bool"),
    "__index__": lean.conversion(NArray.__index__, "index"),
    "__iter__": _iter,
    "__contains__": _contains, "__copy__": _shallow_copy, "__deepcopy__": _deepcopy,
    "__reduce__": _reduce,
    # printing, as NumPy prints (it waits for the values)
    "__repr__": printing.narray_repr, "__str__": printing.narray_str,
    "__format__": printing.narray_format,
    # NumPy and the array API on NArrays, DLPack (interop)
    "__array_ufunc__": lean.array_ufunc(interop.array_ufunc, interop.FAST_UFUNC_CALLS,
                                          interop.SCALARS_FIRST), "__array_function__": interop.array_function,
    "__array_namespace__": interop.array_namespace, "__dlpack__": interop.dlpack,
    "__dlpack_device__": interop.dlpack_device,
    # copies, devices, fills
    "copy": _copy, "fill": _fill, "to": _to, "to_device": _to, "astype": _astype,
    # shapes and views
    "reshape": _reshape, "transpose": _transpose, "flatten": _flatten,
    "T": property(lean.transposed(_transposed)),
    "mT": property(lambda self: manipulation.swapaxes(self, -1, -2)),
    "ravel": manipulation.ravel, "squeeze": manipulation.squeeze,
    "swapaxes": manipulation.swapaxes, "repeat": shaping.repeat,
    # element-wise, complex parts
    "clip": elementwise.clip, "round": elementwise.round,
    "conj": FUNCTIONS["conjugate"], "conjugate": FUNCTIONS["conjugate"],
    "real": property(elementwise.real, elementwise.set_part("real"),
                     doc="The real part (settable)."),
    "imag": property(elementwise.imag, elementwise.set_part("imag"),
                     doc="The imaginary part (settable)."),
    # reductions and statistics
    "sum": reductions.sum, "prod": reductions.prod, "max": reductions.max,
    "min": reductions.min, "mean": reductions.mean, "any": reductions.any,
    "all": reductions.all, "argmax": reductions.argmax, "argmin": reductions.argmin,
    "cumsum": reductions.cumsum, "cumprod": reductions.cumprod, "std": statistics.std,
    "var": statistics.var, "ptp": statistics.ptp,
    # sorting and searching
    "sort": sorting.sort_in_place, "argsort": sorting.argsort,
    "partition": sorting.partition_in_place, "argpartition": sorting.argpartition,
    "searchsorted": sorting.searchsorted, "nonzero": indexing.nonzero,
    # picking elements, diagonals, products
    "take": select.take, "put": select.put, "diagonal": select.diagonal,
    "trace": select.trace, "dot": products.dot,
    # ndarray's memory: settable shape and strides, views reading it as another dtype, flat
    "shape": property(NArray.shape.fget, attributes.set_shape, doc=NArray.shape.__doc__),
    "strides": property(NArray.strides.fget, attributes.set_strides,
                        doc=NArray.strides.__doc__),
    "view": attributes.view, "getfield": attributes.getfield,
    "setfield": attributes.setfield, "resize": attributes.resize,
    "byteswap": attributes.byteswap, "__delitem__": _delitem,
    "flat": property(iteration.flat_of, iteration.set_flat,
                     doc="NumPy's flatiter over the elements in C order (settable)."),
    "__class_getitem__": classmethod(_class_getitem),
    # values on the host by NumPy 2's copy rules: aliases, bytes, files, pickles (exports)
    "__array__": exports.array,
    "__array_interface__": property(exports.array_interface,
                                    doc=exports.array_interface.__doc__),
    "item": exports.item, "tobytes": exports.tobytes, "tofile": exports.tofile,
    "dump": exports.dump, "dumps": exports.dumps,
    "ctypes": property(exports.ctypes_of, doc=exports.ctypes_of.__doc__),
    "data": property(exports.data_of, doc=exports.data_of.__doc__),
    # autograd (MXNet Gluon's)
    "attach_grad": autograd.attach_grad, "grad": property(autograd.grad_of),
    "detach": autograd.detach, "backward": _backward,
}
"""Every operator and method minerva gives NArray beyond ``narray.py``'s own (metadata and
reading values), by name."""

for _name in [name for name in METHODS if name.startswith("__i") and
              "__" + name[3:] in METHODS]:  # NumPy's scalars are immutable: s += 1 rebinds
    METHODS[_name] = lean.in_place(  # in C where it can (``x += 1.0`` of an array)
        scalars.rebinding(METHODS[_name], METHODS["__" + _name[3:]]),
        getattr(METHODS[_name], "ufunc_name", None))

for _name, _method in METHODS.items():
    setattr(NArray, _name, _method)
