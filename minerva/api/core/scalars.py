"""NumPy's scalars: where NumPy returns a scalar (``np.float64(3.0)``, ``np.int64(2)``,
``np.True_``) minerva returns a 0-d NArray *marked* as one, and the mark makes it act as
NumPy's scalar: not iterable, hashable by value, ``repr`` ``np.float64(3.0)``, in-place
operators that make a new scalar (NumPy's scalars are immutable).

The mark (``NArray._numpy_scalar``) is set when the result is built, from its op and shape
alone, so a scalar stays lazy: it is an input of later ops like any array, and only a use
that needs its value (``hash``, ``repr``, ``str``, ``format``, ``__index__``, ``float``,
``bool``) waits for it. Marked are

- the 0-d results of the ops in ``SCALAR_RESULT_OPS``: NumPy's ufuncs (operators and
  element-wise functions, ``divmod``, ``clip``, ``round``, calls with ``where=``, the
  ``reduce`` method), reductions (``sum`` ...
  ``argmin``, ``std``, ``median``, the nan-functions ...), products of vectors (``matmul``,
  ``vdot``, ``inner``, ``vecdot``, ``einsum``) and the scalars of ``numpy.linalg``
  (``det``, ``norm``, ``cond``, ``matrix_rank``, ``slogdet``): the seam marks them
  (``minerva.builder.SCALAR_RESULT_OPS``), unless ``out=`` is given;
- an element picked by integers alone (``x[1, 2]``, ``x[()]`` of a 0-d array, ``x[i]`` with
  a 0-d integer NArray ``i``): ``indexing.getitem`` marks it.

Everything else that is 0-d is an ndarray-like 0-d array, as in NumPy: ``mv.array(3.0)``,
``x.reshape(())``, ``x[...]``, copies and casts (``s.copy()``, ``s.astype(...)``).
"""
from __future__ import annotations

import numbers

from minerva import builder, narray
from minerva.autograd.tape import Leaf
from minerva.narray import NArray
from minerva.ops.elementwise import BINARY, UNARY

_UFUNCS = BINARY + tuple(name + "_scalar" for name in BINARY) + UNARY + (
    "divmod", "divmod_scalar", "clip", "round", "angle", "sinc", "ufunc_where",
    "ufunc_where2", "ufunc_reduce")
_REDUCTIONS = ("sum", "prod", "max", "min", "mean", "any", "all", "argmax", "argmin",
               "std", "var", "ptp", "median", "percentile", "quantile", "average",
               "average_returned", "count_nonzero", "nansum", "nanprod", "nanmax", "nanmin",
               "nanmean", "nanmedian", "nanstd", "nanvar", "nanargmax", "nanargmin",
               "nanpercentile", "nanquantile", "searchsorted")
_PRODUCTS_AND_LINALG = ("matmul", "vdot", "inner", "vecdot", "einsum", "det", "norm",
                        "vector_norm", "cond", "matrix_rank", "slogdet")

SCALAR_RESULT_OPS = frozenset(_UFUNCS + _REDUCTIONS + _PRODUCTS_AND_LINALG)
"""Names of the ops whose 0-d results NumPy gives as scalars."""

builder.SCALAR_RESULT_OPS.update(SCALAR_RESULT_OPS)


class BoolScalar(NArray):
    """What a NumPy scalar of bool dtype is an instance of (as ``np.bool_``, not a
    ``numbers.Number``). Never instantiated: the ``__class__`` of a marked NArray."""

    __slots__ = ()


class IntegerScalar(NArray):
    """What a NumPy scalar of an integer dtype is an instance of: a ``numbers.Integral``,
    as ``np.int64``. Never instantiated: the ``__class__`` of a marked NArray."""

    __slots__ = ()


class FloatScalar(NArray):
    """What a NumPy scalar of a floating dtype is an instance of: a ``numbers.Real``, as
    ``np.float64``. Never instantiated: the ``__class__`` of a marked NArray."""

    __slots__ = ()


class ComplexScalar(NArray):
    """What a NumPy scalar of a complex dtype is an instance of: a ``numbers.Complex``, as
    ``np.complex128``. Never instantiated: the ``__class__`` of a marked NArray."""

    __slots__ = ()


numbers.Integral.register(IntegerScalar)
numbers.Real.register(FloatScalar)
numbers.Complex.register(ComplexScalar)
narray.SCALAR_CLASSES.update({"b": BoolScalar, "i": IntegerScalar, "u": IntegerScalar,
                              "f": FloatScalar, "c": ComplexScalar})


def numpy_scalar(x: NArray) -> NArray:
    """``x`` (a 0-d NArray) marked as a NumPy scalar; returns it. Never waits."""
    if x.ndim:
        raise ValueError(f"a NumPy scalar is 0-d; this array has shape {x.shape}")
    x._numpy_scalar = True
    return x


def is_numpy_scalar(x) -> bool:
    """Whether ``x`` is an NArray standing for a NumPy scalar."""
    return isinstance(x, NArray) and x._numpy_scalar


def type_name(x: NArray) -> str:
    """The name of NumPy's scalar type of ``x``'s dtype, as NumPy's messages quote it
    (``'numpy.float64'``)."""
    return f"'numpy.{x.dtype.type.__name__}'"


def check_iterable(x: NArray) -> None:
    """TypeError, at once, for what NumPy does not iterate over: a scalar ("'numpy.float64'
    object is not iterable") or a 0-d array ("iteration over a 0-d array")."""
    if x._numpy_scalar:
        raise TypeError(f"{type_name(x)} object is not iterable")
    if not x.shape:
        raise TypeError("iteration over a 0-d array")


def rebinding(in_place, forward):
    """NArray's in-place operator: ``in_place`` (``x += y`` writes into ``x``) for arrays;
    for a NumPy scalar, which is immutable, ``forward`` (``s += 1`` makes a new scalar and
    rebinds ``s``, leaving other references to the old one as they were, as in NumPy) —
    unless it is a variable of autograd (``attach_grad``), which optimizers update in
    place."""
    def method(self, other):
        if self._numpy_scalar and not isinstance(self._grad_info, Leaf):
            return forward(self, other)
        return in_place(self, other)
    method.__name__ = method.__qualname__ = getattr(in_place, "__name__", "method")
    method.__doc__ = in_place.__doc__
    return method
