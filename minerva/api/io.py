"""NumPy's "Input and output" chapter, native where the host fallback's answer would not
be minerva's: ``load``.

``mv.load`` reads ``.npy`` and ``.npz`` files as ``numpy.load`` does and gives NArrays on
the current device: an ``.npy`` file's array is one, an ``.npz`` archive is a mapping whose
arrays are NArrays when read (``NpzArrays``, over NumPy's lazy ``NpzFile``). It **never
unpickles**: a pickle can run any code while it loads, so ``allow_pickle=True`` is refused
(ValueError) and a file of object arrays or pickles raises NumPy's ValueError, as
``numpy.load(..., allow_pickle=False)`` does. The rest of the chapter (``save``,
``savez``, ``savetxt``, ``loadtxt``, ``genfromtxt``, ``fromfile`` ...) is the host
fallback's: NumPy's code on host copies, NArrays back.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from minerva.builder import upload

_NO_PICKLES = ("minerva.load never unpickles (a pickle can run code while it loads), so "
               "allow_pickle=True is refused; for a file you trust, "
               "mv.asarray(numpy.load(file, allow_pickle=True))")


class NpzArrays(Mapping):
    """The arrays of an ``.npz`` archive, read as NArrays on the current device: NumPy's
    ``NpzFile`` (lazy: each array is read when asked for), with its ``files``, ``close``
    and ``with`` block."""

    def __init__(self, archive: np.lib.npyio.NpzFile):
        self.archive = archive

    @property
    def files(self) -> list:
        """The names of the archive's arrays (without ``.npy``), as NumPy's."""
        return self.archive.files

    def __getitem__(self, key: str):
        return upload(self.archive[key])

    def __iter__(self):
        return iter(self.archive)

    def __len__(self) -> int:
        return len(self.archive)

    def close(self) -> None:
        """Close the archive's file."""
        self.archive.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"NpzArrays({self.archive!r})"


def load(file, mmap_mode=None, allow_pickle=False, fix_imports=True, encoding="ASCII",
         *, max_header_size=None):
    """``numpy.load`` of ``file`` (a path or a binary file) without pickles: an NArray
    for an ``.npy`` file (also under ``mmap_mode``: the values are read onto the device),
    ``NpzArrays`` for an ``.npz`` archive. ValueError for ``allow_pickle=True`` and, as
    NumPy's, for a file that holds object arrays or a pickle."""
    if allow_pickle:
        raise ValueError(_NO_PICKLES)
    header = {} if max_header_size is None else {"max_header_size": max_header_size}
    loaded = np.load(file, mmap_mode, allow_pickle=False, fix_imports=fix_imports,
                     encoding=encoding, **header)
    if isinstance(loaded, np.lib.npyio.NpzFile):
        return NpzArrays(loaded)
    return upload(loaded)


__all__ = ["load"]
