"""NumPy's iterating functions on NArrays: ``ndenumerate`` (the values read once on the
host, as ``for v in x`` reads them: ``minerva.api.core.iteration``) and ``nditer``.
(``ndindex`` needs no values: ``mv.ndindex`` is NumPy's own class, handed out as NumPy's
own objects are, ``minerva.api.fallback``.)

``nditer`` is NumPy's own iterator run over host arrays of the operands: a read-only alias
of each NArray read (``numpy.asarray``: no copy on a CPU device), a private copy of each
NArray written (``op_flags`` ``readwrite`` or ``writeonly``), which is written back into the
NArray when the iteration ends: at the exit of its ``with`` block, at ``close()``, or when a
plain ``for`` loop over it finishes. Every other attribute is NumPy's iterator's;
``operands`` are those host arrays (an allocated output, ``None`` as operand, is NumPy's
array).
"""
from __future__ import annotations

import numpy as np

from minerva.api.core.indexing import setitem
from minerva.api.core.iteration import host_elements
from minerva.narray import NArray

_WRITES = ("readwrite", "writeonly")


class ndenumerate:
    """``numpy.ndenumerate``: ``(index, element)`` pairs of an array in C order, its values
    read on the host once (again after a write to it), elements as ``for v in x`` gives
    them."""

    def __init__(self, arr):
        values = arr if isinstance(arr, NArray) else np.asarray(arr)
        self._indices = np.ndindex(values.shape)
        self._elements = host_elements(arr) if isinstance(arr, NArray) else iter(values.flat)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._indices), next(self._elements)


class nditer:
    """``numpy.nditer`` over NArrays and array-likes (see the module docstring): NumPy's
    iterator, keywords and attributes, over host arrays; written operands are written back
    into their NArrays when the iteration ends."""

    def __init__(self, op, flags=None, op_flags=None, op_dtypes=None, order="K",
                 casting="safe", op_axes=None, itershape=None, buffersize=0):
        operands = list(op) if isinstance(op, (list, tuple)) else [op]
        per_operand = _flags_per_operand(op_flags, len(operands))
        self._targets = [(i, x) for i, (x, f) in enumerate(zip(operands, per_operand))
                         if isinstance(x, NArray) and any(w in f for w in _WRITES)]
        written = {i for i, _ in self._targets}
        host = [x.to_numpy() if i in written else np.asarray(x) if isinstance(x, NArray)
                else x for i, x in enumerate(operands)]
        self._host = host
        self._entered = self._done = False
        self._it = np.nditer(host if isinstance(op, (list, tuple)) else host[0], flags,
                             op_flags, op_dtypes, order, casting, op_axes, itershape,
                             buffersize)

    def __iter__(self):
        yield from self._it
        if not self._entered:
            self._write_back()

    def __next__(self):
        return next(self._it)

    def __enter__(self):
        self._entered = True
        self._it.__enter__()
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self) -> None:
        """Close NumPy's iterator (its own write-backs into the host arrays), then write
        the written operands back into their NArrays."""
        self._it.close()
        self._write_back()

    def _write_back(self) -> None:
        if self._done:
            return
        self._done = True
        for i, target in self._targets:
            setitem(target, Ellipsis, self._host[i])

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._it, name)


def _flags_per_operand(op_flags, n: int) -> list:
    """``op_flags`` as one list of flags per operand (NumPy's default: read-only)."""
    if op_flags is None:
        return [["readonly"]] * n
    if all(isinstance(f, str) for f in op_flags):
        return [list(op_flags)] * n
    return [list(f) for f in op_flags]


__all__ = ["ndenumerate", "nditer"]
