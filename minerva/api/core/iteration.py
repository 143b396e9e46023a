"""Python-level iteration at NumPy's pace: ``for v in x``, ``x.flat`` and what iterates the
elements of an array (``ndenumerate``).

Over a 1-D array of at most ``SHORT`` elements whose value is computed, each element is
``x[i]``, read at once from that value (NumPy's scalar; a write in the loop is seen).
Over a longer one (and over ``x.flat``) the elements are read on the host **once**, when the
iteration starts (it waits for the value: ``exports.host_values``, no copy on a CPU
device), and each is given as ``indexing.host_element`` decides (NumPy's scalar). If the
loop writes into the array (the storage gets a new value), the rest is read again, so the
loop sees its own writes as it would in NumPy. While autograd records or jit captures (a
hook listens at the seam) or host reads are refused, elements are indexed one by one
(``x[i]``: lazy, recorded). Over an N-D array the rows are views: ``for row in x:
row[...] = 0`` writes through.

``x.flat`` is NumPy's ``flatiter``: ``x.flat[i]``, ``x.flat[key] = v`` (through item
assignment, ``v`` repeated to fill the positions), ``len``, ``index``, ``coords``,
``copy()``, ``base``; ``x.flat = v`` fills the array.
"""
from __future__ import annotations

import operator

import numpy as np

from minerva.api.core import exports
from minerva.api.core.creation import copy
from minerva.api.core.indexing import getitem, host_element, setitem
from minerva.api.core.manipulation import ravel, reshape
from minerva.builder import SEAM, to_narray, upload
from minerva.dag.nodes import COMPLETED
from minerva.narray import COPIED_SCALARS, HOST_READS, NArray


def iterate(x: NArray):
    """``iter(x)`` of an array of at least one dimension: rows as views, or the elements of
    a 1-D array read once on the host (see the module docstring)."""
    n = x.shape[0]
    if x.ndim > 1:
        return map(x.__getitem__, range(n))   # rows: ``x[i]``, views
    if _lazy():
        return (getitem(x, i) for i in range(n))
    if n <= SHORT and x.dtype.kind in COPIED_SCALARS and _computed(x._storage.current):
        return map(x.__getitem__, range(n))   # each ``x[i]`` read at once: NumPy's scalar
    return host_elements(x)


SHORT = 16
"""A 1-D array of at most so many elements is iterated element by element (``x[i]``,
read at once from its computed value: no host export to set up)."""


def _computed(data) -> bool:
    return data.state == COMPLETED and data.writer is None


def _lazy() -> bool:
    """Whether elements must be indexed one by one: someone records ops, or host reads are
    refused (a jit capture)."""
    return bool(SEAM.hooks) or HOST_READS.refuse is not None


def host_elements(x: NArray, start: int = 0):
    """The elements of ``x`` in C order from flat position ``start``, read on the host once
    (and again after a write to ``x``'s storage), each as ``host_element`` gives it."""
    storage, n, i = x._storage, x.size, start
    while i < n:
        current = storage.current
        values = exports.host_values(x).reshape(-1)
        while i < n and storage.current is current:
            yield host_element(x, values[i])
            i += 1


class FlatIter:
    """NumPy's ``flatiter`` over an NArray (``x.flat``): the elements in C order, by flat
    position, for reading, writing and iterating."""

    __slots__ = ("base", "_position", "_elements")
    __hash__ = None

    def __init__(self, base: NArray):
        self.base = base
        self._position = 0
        self._elements = None

    def __len__(self) -> int:
        return self.base.size

    def __iter__(self):
        return self

    def __next__(self):
        if self._elements is None:
            self._elements = (iter([getitem(self.base, _coords(self.base, i)) for i in
                                    range(self._position, self.base.size)])
                              if _lazy() else host_elements(self.base, self._position))
        value = next(self._elements)
        self._position += 1
        return value

    @property
    def index(self) -> int:
        """The flat position of the next element."""
        return self._position

    @property
    def coords(self) -> tuple:
        """The index per axis of the next element."""
        return _coords(self.base, self._position)

    def __getitem__(self, key):
        """One element for an int (as ``x[i, j]`` gives it), else a 1-D copy of the
        elements ``key`` picks (a slice, integer arrays, a mask, ``...``)."""
        key = _flat_key(key)
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            return getitem(self.base, _coords(self.base, key))
        return copy(getitem(ravel(self.base), key), "C")

    def __setitem__(self, key, value) -> None:
        """Writes into the array at the flat positions ``key`` picks, ``value`` repeated
        (flattened, cycled) to fill them, as NumPy's ``flatiter`` assigns."""
        x = self.base
        positions = np.arange(x.size).reshape(-1)[_host_key(_flat_key(key))]
        positions = np.atleast_1d(positions)
        if positions.size == 0:
            return
        index = np.unravel_index(positions, x.shape) if x.ndim else (positions * 0,)
        setitem(x if x.ndim else reshape(x, (1,)), index, _cycled(value, positions.size))

    def copy(self) -> NArray:
        """A 1-D copy of the elements in C order."""
        return copy(ravel(self.base), "C")

    def __array__(self, dtype=None, copy=None):
        values = np.asarray(self.base, dtype=dtype).reshape(-1)
        return np.array(values, copy=True) if copy else values

    def __repr__(self) -> str:
        return f"<minerva flatiter over an NArray of shape {self.base.shape}>"


def _coords(x: NArray, position) -> tuple:
    size = x.size
    position = operator.index(position)
    if not -size <= position < size:
        raise IndexError(f"index {position} is out of bounds for size {size}")
    return tuple(int(i) for i in np.unravel_index(position % size, x.shape))


def _flat_key(key):
    """``key`` of a flat index: a one-item tuple stands for its item; longer ones are
    NumPy's IndexError."""
    if isinstance(key, tuple):
        if len(key) > 1:
            raise IndexError(f"too many indices for flat iterator: flat iterator is "
                             f"1-dimensional, but {len(key)} were indexed")
        return key[0] if key else Ellipsis
    return key


def _host_key(key):
    """A flat key as NumPy indexes a host ``arange`` with it (NArray indices are read)."""
    return key.to_numpy() if isinstance(key, NArray) else key


def _cycled(value, count: int):
    """``value`` flattened and repeated to ``count`` elements (a scalar stays one)."""
    if not isinstance(value, NArray) and np.ndim(value) == 0:
        return value
    flat = ravel(to_narray(value, "flat"))
    if flat.size == count:
        return flat
    if flat.size == 0:
        raise ValueError("cannot assign an empty array through x.flat")
    return getitem(flat, upload(np.arange(count) % flat.size))


def flat_of(x: NArray) -> FlatIter:
    """``x.flat``."""
    return FlatIter(x)


def set_flat(x: NArray, value) -> None:
    """``x.flat = value``: every element, ``value`` repeated to fill the array."""
    FlatIter(x)[...] = value


__all__: list = []
