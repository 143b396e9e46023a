"""``HostFunction``: a NumPy function minerva has no native version of, run on the host.

A call waits for the NArray arguments (anywhere in nested lists, tuples and dicts) and
copies their values to host NumPy arrays, in their memory order; runs NumPy's own
function on them; writes the arguments NumPy wrote into (``writes``) back into their
NArrays through minerva's writes (an assignment into the NArray, so views and versions
stay right and later ops see the write); and returns NumPy's result with every NumPy array
of a dtype the current device holds uploaded to it as an NArray (an argument NumPy
returns as it is comes back as that NArray; tuples, lists, dicts and named tuples are
converted element by element; NumPy scalars, strings, arrays of other dtypes and other
objects come back as NumPy gives them).
"""
from __future__ import annotations

import functools

import numpy as np

from minerva.api.fallback import ledger, writes
from minerva.builder import ASSIGN, build, device_holds, upload
from minerva.narray import HOST_READS, NArray
from minerva.ops.dtypes import holds


class HostFunction:
    """NumPy's ``function`` (named ``label``: ``numpy.fft.fft``), run on the host copies
    of its arguments. Attributes of NumPy's function (a ufunc's ``nin``, ``reduce`` ...)
    are found on it: callables as HostFunctions, other values as they are."""

    def __init__(self, function, label: str):
        functools.update_wrapper(self, function, updated=())
        self.function = function
        self.label = label

    def __call__(self, *args, **kwargs):
        return call_on_host(self.label, self.function, args, kwargs)

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("function", "label"):
            raise AttributeError(name)
        value = getattr(self.function, name)
        if callable(value):
            value = HostFunction(value, f"{self.label}.{name}")
        setattr(self, name, value)  # found in the instance from now on
        return value

    def __repr__(self) -> str:
        return f"<minerva host fallback of {self.label}>"

    def __reduce__(self):
        return (HostFunction, (self.function, self.label))


def call_on_host(label: str, function, args: tuple, kwargs: dict):
    """``function(*args, **kwargs)`` run by NumPy on host copies (see the module's doc)."""
    admitted = ledger.admit(label)
    HOST_READS.check(f"{label} (the host fallback: NumPy's code on the host)")
    try:
        copies = HostCopies(writes.written(label, function, args, kwargs))
        result = function(*copies.to_host(args), **copies.to_host(kwargs))
        copies.write_back()
        return copies.to_device(result)
    finally:
        ledger.record(label, admitted)


class HostCopies:
    """The host copies of one call's NArrays (one per NArray object, so an array given
    twice is one array to NumPy, as it would be), writable for the ``targets`` NumPy
    writes into and read-only for the others."""

    def __init__(self, targets: list):
        self.targets = {id(x): x for x in targets}
        self.copies: dict = {}   # id(NArray) -> (NArray, host array)

    def to_host(self, value):
        """``value`` with every NArray in it replaced by its host copy."""
        if isinstance(value, NArray):
            return self._copy(value)
        if type(value) in (list, tuple):
            return type(value)(self.to_host(item) for item in value)
        if isinstance(value, dict):
            return {key: self.to_host(item) for key, item in value.items()}
        return value

    def _copy(self, x: NArray) -> np.ndarray:
        known = self.copies.get(id(x))
        if known is None:
            host = x.to_numpy()
            if id(x) in self.targets and x.flags.writeable:
                host = host if host.flags.writeable else host.copy()
            else:
                host.flags.writeable = False
            known = self.copies[id(x)] = (x, host)
        return known[1]

    def write_back(self) -> None:
        """Write each target's host copy, as NumPy left it, into its NArray."""
        for key, target in self.targets.items():
            if key in self.copies:
                value = upload(self.copies[key][1])
                build(ASSIGN, [value], {"dtype": target.dtype}, out=target)

    def to_device(self, value):
        """NumPy's result as minerva returns it (see the module's doc)."""
        if isinstance(value, np.ndarray):
            return self._array(value)
        if type(value) in (list, tuple):
            return type(value)(self.to_device(item) for item in value)
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return type(value)(*(self.to_device(item) for item in value))
        if type(value) is dict:
            return {key: self.to_device(item) for key, item in value.items()}
        return value

    def _array(self, value: np.ndarray):
        for x, host in self.copies.values():
            if value is host:
                return x
        if type(value) is not np.ndarray or not (holds(value.dtype)
                                                 and device_holds(value.dtype)):
            return value
        if not value.dtype.isnative:
            value = value.astype(value.dtype.newbyteorder("="))
        return upload(value)


def host_function(function, label: str | None = None) -> HostFunction:
    """A HostFunction of NumPy's ``function`` (labelled by its module and name unless
    ``label`` is given)."""
    if label is None:
        label = f"{getattr(function, '__module__', 'numpy')}.{function.__name__}"
    return HostFunction(function, label)
