"""NumPy's dtypes, constants and data-type functions under NumPy's names.

The dtype objects are NumPy's own (``mv.float32 is numpy.float32``), so comparisons such as
``x.dtype == mv.float32`` or ``numpy.issubdtype(x.dtype, mv.floating)`` work both ways.
``mv.bool`` is ``numpy.bool`` (the array API's name); the builtin ``bool`` is untouched
everywhere, here too (NumPy's names are this module's attributes through ``__getattr__``).

The data-type functions are NumPy's, wrapped where the array API (or NumPy) lets an array
stand for its dtype: an NArray argument becomes its dtype (``result_type(x, 1.0)``,
``finfo(x)``, ``can_cast(x, mv.int8)``). ``min_scalar_type`` of a 0-d NArray looks at its
value, as NumPy's does, so it waits for it.
"""
from __future__ import annotations

import numpy as np

from minerva.builder import current_device, default_dtype, device_ids
from minerva.narray import NArray

__array_api_version__ = "2024.12"
"""The array API standard version minerva's namespace follows (NumPy's, where it is)."""

SCALAR_TYPES = (
    "bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "intp", "uintp", "float16", "float32", "float64", "complex64", "complex128",
    "byte", "ubyte", "short", "ushort", "intc", "uintc", "int_", "uint", "long", "ulong",
    "longlong", "ulonglong", "half", "single", "double", "longdouble", "csingle",
    "cdouble", "clongdouble", "float96", "float128", "complex192", "complex256")
"""NumPy's scalar types of the values minerva arrays hold (bool, integer, float, complex);
those the platform lacks (``float96`` …) are left out."""

ABSTRACT_TYPES = ("generic", "number", "integer", "signedinteger", "unsignedinteger",
                  "inexact", "floating", "complexfloating")
"""NumPy's abstract scalar types, for ``issubdtype`` and ``isdtype``."""

CONSTANTS = ("pi", "e", "inf", "nan", "euler_gamma", "newaxis", "little_endian", "True_",
             "False_", "typecodes")
"""NumPy's constants (``newaxis`` is None)."""

_NUMPY_OWN = ("dtype", "promote_types", "isdtype", "issubdtype")
"""Data-type functions that take dtypes only: NumPy's own."""

NUMPY_NAMES = frozenset(name for name in SCALAR_TYPES + ABSTRACT_TYPES + CONSTANTS
                        + _NUMPY_OWN if hasattr(np, name))
"""The names above that NumPy has: this module's attributes, NumPy's own objects
(``dtypes.float32 is numpy.float32``; see ``__getattr__``)."""


def _as_dtype(value):
    """``value``'s dtype when it is an array (NArray or NumPy), else ``value`` itself."""
    if isinstance(value, (NArray, np.ndarray)):
        return value.dtype
    return value


def finfo(type):  # noqa: A002  (NumPy's and the array API's parameter name)
    """``numpy.finfo`` of a float or complex dtype, or of an array's dtype."""
    return np.finfo(_as_dtype(type))


def iinfo(type):  # noqa: A002
    """``numpy.iinfo`` of an integer dtype, or of an array's dtype."""
    return np.iinfo(_as_dtype(type))


def can_cast(from_, to, casting="safe"):
    """``numpy.can_cast``: whether ``from_`` (a dtype or an array) casts to ``to``."""
    return np.can_cast(_as_dtype(from_), _as_dtype(to), casting)


def result_type(*arrays_and_dtypes) -> np.dtype:
    """``numpy.result_type``: the dtype NumPy's promotion gives arrays (their dtypes),
    dtypes and Python scalars (weak, as in NEP 50)."""
    return np.result_type(*[_as_dtype(x) for x in arrays_and_dtypes])


def min_scalar_type(a) -> np.dtype:
    """``numpy.min_scalar_type``: the smallest dtype holding scalar ``a``'s value (an
    array's own dtype unless it is 0-d; a 0-d NArray waits for its value)."""
    if isinstance(a, NArray):
        if a.ndim:
            return a.dtype
        a = a.to_numpy()
    return np.min_scalar_type(a)


def common_type(*arrays):
    """``numpy.common_type``: the inexact scalar type of the arrays' dtypes."""
    return np.common_type(*[np.empty(0, _as_dtype(x)) if isinstance(x, NArray) else x
                            for x in arrays])


def iscomplexobj(x) -> bool:
    """``numpy.iscomplexobj``: whether ``x`` (an array, a dtype-holding object or a value)
    has a complex dtype, whatever its values."""
    if isinstance(x, NArray):
        return issubclass(x.dtype.type, np.complexfloating)
    return np.iscomplexobj(x)


def isrealobj(x) -> bool:
    """``numpy.isrealobj``: not ``iscomplexobj(x)``."""
    return not iscomplexobj(x)


# ---- the array API's inspection namespace ---------------------------------------------------

API_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "float32", "float64", "complex64", "complex128")
"""The array API's dtypes, all of which minerva arrays hold on every device."""


class ArrayNamespaceInfo:
    """What ``__array_namespace_info__()`` returns: minerva's capabilities, devices (int
    ids) and dtypes, as the array API's inspection functions describe them."""

    def capabilities(self) -> dict:
        """Boolean indexing and data-dependent shapes (both waiting for values) work;
        arrays have at most 64 dimensions, as NumPy's."""
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": 64}

    def default_device(self) -> int:
        """The calling thread's current device."""
        return current_device()

    def devices(self) -> list:
        """The ids of the devices created so far (device 0 is created if none is)."""
        return device_ids()

    def default_dtypes(self, *, device=None) -> dict:
        """The dtypes of new arrays when none is given, by kind (the same on every
        device)."""
        return {"real floating": default_dtype(), "complex floating": np.dtype(np.complex128),
                "integral": np.dtype(np.int64), "indexing": np.dtype(np.intp)}

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The array API's dtypes by name, those of ``kind`` (a kind name as ``isdtype``
        takes, or a tuple of them) when given."""
        chosen = {name: np.dtype(name) for name in API_DTYPES}
        if kind is None:
            return chosen
        return {name: dt for name, dt in chosen.items() if np.isdtype(dt, kind)}


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The array API's inspection namespace for minerva."""
    return ArrayNamespaceInfo()


def __getattr__(name):
    """NumPy's own dtypes, constants and data-type functions (``NUMPY_NAMES``), and
    ``numpy.dtypes``' DType classes (``mv.dtypes.Float64DType``): a NumPy program finds its
    ``numpy.dtypes`` module here."""
    if name in NUMPY_NAMES:
        return getattr(np, name)
    if name.startswith("_") or not hasattr(np.dtypes, name):
        raise AttributeError(f"module 'minerva.dtypes' has no attribute '{name}'", name=name)
    return getattr(np.dtypes, name)


def __dir__() -> list:
    return sorted(set(globals()) | NUMPY_NAMES)


_WRAPPED = ("finfo", "iinfo", "can_cast", "result_type", "min_scalar_type", "common_type",
            "iscomplexobj", "isrealobj")

__all__ = sorted(list(NUMPY_NAMES) + list(_WRAPPED)
                 + ["__array_api_version__", "__array_namespace_info__"])
