"""``numpy.ndarray``'s public attributes NArray has no native version of, through the
host: a ``HostAttribute`` descriptor per name (installed on NArray by
``minerva/__init__.py``, ``install_attributes``). A method (``x.tobytes()``,
``x.choose(...)``) comes back bound to the array: a call runs NumPy's method on the
array's host copy (writing it back for the methods that write in place, ``writes``); a
data attribute (``x.flat``, ``x.ctypes``) is the host copy's, read-only. Views NumPy's
methods return (``x.view(dtype)``) are copies on the device. The names of
``minerva.api.missing.CANNOT_EXIST['ndarray']`` and every other name raise
AttributeError.
"""
from __future__ import annotations

import types

import numpy as np

from minerva.api.fallback import ledger
from minerva.api.fallback.host import HostCopies, HostFunction
from minerva.api.missing import cannot_exist, missing_attribute
from minerva.narray import HOST_READS

NDARRAY_NAMES = frozenset(n for n in dir(np.ndarray) if not n.startswith("_"))
"""``numpy.ndarray``'s public attributes."""

_METHODS: dict = {}


class HostAttribute:
    """``x.<name>`` for a public name of ``numpy.ndarray`` NArray has no native version
    of (see the module's doc), set on NArray as a descriptor: a ``__getattr__`` would
    keep Python from specialising every other attribute read of an NArray."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __get__(self, x, owner=None):
        if x is None:
            return self
        name = self.name
        if cannot_exist(name, "ndarray"):
            raise missing_attribute(name, "ndarray")
        if callable(getattr(np.ndarray, name)):
            return types.MethodType(ndarray_method(name), x)
        return _data_attribute(x, name)


def install_attributes(cls) -> None:
    """Give ``cls`` (NArray) a ``HostAttribute`` for each of ``numpy.ndarray``'s public
    names it lacks."""
    for name in sorted(NDARRAY_NAMES):
        if not hasattr(cls, name):
            setattr(cls, name, HostAttribute(name))


def ndarray_method(name: str) -> HostFunction:
    """The HostFunction of ``numpy.ndarray.<name>`` (the array is its first argument)."""
    method = _METHODS.get(name)
    if method is None:
        method = _METHODS[name] = HostFunction(getattr(np.ndarray, name),
                                               f"numpy.ndarray.{name}")
    return method


def _data_attribute(x, name: str):
    label = f"numpy.ndarray.{name}"
    admitted = ledger.admit(label)
    HOST_READS.check(f"{label} (the host fallback: NumPy's code on the host)")
    try:
        copies = HostCopies([])
        return copies.to_device(getattr(copies.to_host(x), name))
    finally:
        ledger.record(label, admitted)


def fallback_attributes() -> list:
    """The public names of ``numpy.ndarray`` that NArray gives through the host."""
    return sorted(n for n in NDARRAY_NAMES if not cannot_exist(n, "ndarray"))
