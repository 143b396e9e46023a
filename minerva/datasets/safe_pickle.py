"""Load a pickle that may hold only NumPy arrays, refusing every other global.

A pickle can name any importable callable and call it while loading, so a plain
``pickle.load`` of a downloaded file can run arbitrary code. :class:`ArrayUnpickler`
resolves only the few names NumPy's array reconstruction uses and raises
:class:`~minerva.datasets.errors.DatasetError` for anything else, before it is imported
or called. Object dtypes are refused too, so the result holds plain numbers only.
"""
from __future__ import annotations

import io
import pickle

import numpy as np

from minerva.datasets.errors import DatasetError

try:  # NumPy >= 2
    from numpy._core.multiarray import _reconstruct
except ImportError:  # pragma: no cover - NumPy 1.x
    from numpy.core.multiarray import _reconstruct


def _plain_dtype(*args) -> np.dtype:
    """``numpy.dtype`` as the unpickler sees it: object dtypes are refused."""
    dtype = np.dtype(*args)
    if dtype.hasobject:
        raise DatasetError(f"refused to load an array of Python objects (dtype {dtype})")
    return dtype


# (module, name) as written in the pickle -> what it resolves to. Older pickles (and the
# MNIST one, written by Python 2) name numpy.core; NumPy 2 writes numpy._core.
_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): _plain_dtype,
}


class ArrayUnpickler(pickle.Unpickler):
    """An unpickler that admits only NumPy array reconstruction."""

    def find_class(self, module: str, name: str):
        """Resolve ``module.name`` from the allow-list; refuse anything else."""
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise DatasetError(
                f"refused to load '{module}.{name}': this pickle may hold only NumPy "
                "arrays, so it is corrupt or has been tampered with") from None


def load_arrays(data: bytes, source: str = "<bytes>"):
    """Unpickle ``data`` with :class:`ArrayUnpickler` and return the object it holds.

    Python 2 pickles are read with ``encoding='latin1'``, which NumPy needs to rebuild
    their array buffers. Every failure becomes a :class:`DatasetError` naming ``source``.
    """
    try:
        return ArrayUnpickler(io.BytesIO(data), encoding="latin1").load()
    except DatasetError as err:
        raise DatasetError(f"{source}: {err}") from None
    except Exception as err:  # a malformed pickle can raise almost anything
        raise DatasetError(f"{source}: not a readable array pickle: "
                           f"{type(err).__name__}: {err}") from err
