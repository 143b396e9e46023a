"""NArray's values on the host, by NumPy 2's copy rules: NumPy arrays that alias a computed
value without copying it, copies where NumPy asks for one, and the host's forms of the
values (one element, bytes, files, pickles, ``ctypes``, the buffer).

**Aliasing** (``host_alias``). ``numpy.asarray(x)`` (NumPy reads ``x.__array_interface__``
first), ``x.__array__()`` with ``copy=None`` or ``copy=False`` and the DLPack export give,
for an array of a CPU device, a NumPy array over the buffer of ``x``'s current value,
without copying it (once the value is computed: they wait for it). Two rules keep this safe
while minerva goes on computing asynchronously:

- the NumPy array is **read-only**: the value is immutable for the runtime (a version that
  pending ops may still read), so writing into it raises NumPy's ValueError;
- the export **holds** the value (``Engine.share``: a second storage on it), so a later
  minerva write to ``x`` copies it first (copy on write) and the NumPy array keeps the
  values it had when it was handed out: a snapshot, never a race. The hold, and the
  buffer, go when the last NumPy array over it does.

An array of a GPU device has no buffer on the host: ``__array_interface__`` is absent
(AttributeError, so NumPy asks ``__array__``), ``__array__`` copies to the host, and
``copy=False`` raises NumPy's ValueError.
"""
from __future__ import annotations

import operator
import os
import pickle

import numpy as np

from minerva.api.core.creation import NO_COPY
from minerva.narray import HOST_READS, NArray, device_of
from minerva.ops import views


class HostExport:
    """Keeps the buffer of one value alive and unwritten while NumPy arrays alias it: a
    hold on the value (a second storage of it, ``hold``) and NumPy's array interface of
    its bytes, read-only (NumPy arrays made from it keep it as their base)."""

    __slots__ = ("__array_interface__", "hold", "buffer")

    def __init__(self, hold, buffer: np.ndarray):
        self.hold, self.buffer = hold, buffer
        self.__array_interface__ = {
            "shape": (buffer.nbytes,), "typestr": "|u1", "version": 3,
            "data": (buffer.__array_interface__["data"][0], True)}


def on_host(x: NArray) -> bool:
    """Whether ``x`` lives where NumPy can see its buffer (a CPU device)."""
    return getattr(device_of(x), "kind", "cpu") != "gpu"


def _value_bytes(x: NArray) -> np.ndarray:
    """The bytes of ``x``'s current value (its whole buffer), read-only, kept alive and
    unwritten by a hold while any NumPy array over them lives; waits for the value."""
    HOST_READS.check("reading values on the host")
    storage = x._storage
    engine = storage.engine
    hold = None if engine.closed else engine.share(storage)
    data = storage.current if hold is None else hold.current
    engine.wait(data, None)
    return np.asarray(HostExport(hold, data.array.reshape(-1).view(np.uint8)))


def host_alias(x: NArray):
    """A read-only NumPy array aliasing ``x``'s computed value (see the module docstring);
    None for an array of a GPU device. Waits for the value."""
    if not on_host(x):
        return None
    raw = _value_bytes(x)
    shape, strides, offset = views.of(x._spec, x._view)
    if 0 in shape:
        return np.ndarray(shape, x.dtype, raw, 0)
    return np.ndarray(shape, x.dtype, raw, offset, tuple(strides))


def array(self: NArray, dtype=None, copy=None) -> np.ndarray:
    """NumPy's ``__array__`` by NumPy 2's copy rules: ``copy=True`` gives a private,
    writable copy; ``copy=None`` the read-only alias of a CPU array's value (a copy of a GPU
    array's, or to cast to ``dtype``); ``copy=False`` the alias, or NumPy's ValueError when
    none can be made (a GPU array, another dtype). Waits for the value."""
    if copy:
        values = self.to_numpy()
        return values if dtype is None else values.astype(dtype, copy=False)
    alias = host_alias(self)
    cast = dtype is not None and np.dtype(dtype) != self.dtype
    if alias is not None and not cast:
        return alias
    if copy is False:
        raise ValueError(NO_COPY.format("a cast to another dtype" if cast else
                                        "the array lives on a GPU"))
    values = self.to_numpy() if alias is None else alias
    return values if dtype is None else values.astype(dtype)


def array_interface(self: NArray) -> dict:
    """NumPy's ``__array_interface__`` (version 3) of a CPU array: its computed value's
    buffer, aliased read-only and held as ``host_alias`` holds it. ``data`` is that buffer
    as an object with the buffer protocol (a read-only uint8 NumPy array over the whole
    value, which keeps the hold) and ``offset`` where the array starts in it; NumPy's
    ``numpy.asarray`` reads it. AttributeError for an array of a GPU device (NumPy then
    asks ``__array__``, which copies)."""
    if not on_host(self):
        raise AttributeError("an NArray of a GPU device has no __array_interface__ (its "
                             "values are not in host memory); numpy.asarray copies them")
    raw = _value_bytes(self)
    shape, strides, offset = views.of(self._spec, self._view)
    contiguous = views.is_contiguous((shape, strides, offset), self.itemsize)
    return {"shape": shape, "typestr": self.dtype.str, "descr": self.dtype.descr,
            "data": raw, "offset": 0 if 0 in shape else offset, "version": 3,
            "strides": None if contiguous else tuple(strides)}


def host_values(x: NArray) -> np.ndarray:
    """``x``'s values as a NumPy array, read only: the alias on a CPU device, a copy from a
    GPU. Waits for them."""
    alias = host_alias(x)
    return x.to_numpy() if alias is None else alias


# ---- one element, bytes, files, pickles ------------------------------------------------------

def item(self: NArray, *args):
    """One element as a Python scalar: of a size-1 array with no argument, else at a flat
    index (one int) or at one index per axis (ints or a tuple), as NumPy's ``item``. Reads
    that element alone (after waiting for the value)."""
    if not args:
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self.to_numpy().item()
    index = _element_index(self.shape, args[0] if len(args) == 1 and
                           isinstance(args[0], tuple) else args)
    view = views.index(views.of(self._spec, self._view), index)
    if views.read_as(self._view) is not None:
        view = views.typed(view, self.dtype)
    data = self._storage.current
    HOST_READS.check("reading values on the host")
    self._storage.engine.wait(data, None)
    return device_of(self).to_host(data.array, view).item()


def _element_index(shape: tuple, args: tuple) -> tuple:
    """The index per axis of ``item(*args)``: a flat index unravelled, else ``args``."""
    if len(args) == 1 and len(shape) != 1:
        size = int(np.prod(shape, dtype=np.int64))
        flat = operator.index(args[0])
        if not -size <= flat < size:
            raise IndexError(f"index {flat} is out of bounds for size {size}")
        return tuple(int(i) for i in np.unravel_index(flat % size, shape))
    if len(args) != len(shape):
        raise ValueError("incorrect number of indices for array")
    return tuple(operator.index(i) for i in args)


def tobytes(self: NArray, order="C") -> bytes:
    """The raw bytes of the values in memory order ``order`` (``'C'``, ``'F'``, ``'A'``),
    as NumPy's ``tobytes``."""
    return host_values(self).tobytes(order)


def tofile(self: NArray, fid, sep: str = "", format: str = "%s") -> None:
    """The values written to ``fid`` (a file name, a path, or an open file) as NumPy's
    ``tofile`` writes them: raw bytes in C order, or text with ``sep`` between values."""
    host_values(self).tofile(fid, sep, format)


def dumps(self: NArray) -> bytes:
    """A pickle of the array (loading it gives an NArray on the current device)."""
    return pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL)


def dump(self: NArray, file) -> None:
    """The pickle of ``dumps`` written to ``file`` (a file name, a path, or a file opened
    for binary writing)."""
    if isinstance(file, (str, bytes, os.PathLike)):
        with open(file, "wb") as stream:
            stream.write(dumps(self))
        return
    file.write(dumps(self))


def ctypes_of(self: NArray):
    """NumPy's ``ctypes`` object of the values on the host (the read-only alias of a CPU
    array, which it keeps alive; a copy of a GPU array's)."""
    return host_values(self).ctypes


def data_of(self: NArray) -> memoryview:
    """A read-only memoryview of the values on the host (as ``host_values``)."""
    return host_values(self).data


__all__: list = []
