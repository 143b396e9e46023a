"""minerva: NumPy-style array programs run asynchronously through a dependency DAG,
on CPU devices (NumPy) and NVIDIA GPUs (CuPy), one device or many.

``import minerva as np`` runs a NumPy program; ``import minerva as mv`` for the rest. See
API.md and doc/ for the contract.

The namespace is every name of each chapter's ``__all__`` (``CHAPTERS``: the chapters of
the NumPy face, ``minerva.api``, one per chapter of NumPy's "Routines" page, and the
runtime's functions), the module's attributes (``NAMES``); the sub-namespaces (``mv.linalg``,
``mv.random``, ``mv.fft``, ``mv.emath``, ``mv.lib``, ``mv.nn``, ``mv.optim``, ``mv.autograd``,
``mv.profiler``, ``mv.dtypes``) are imported below. ``minerva.api.methods`` installs NArray's
operators and methods. Every other public NumPy name (of ``numpy``, and of NArray as
``numpy.ndarray``'s) is the host fallback's (``minerva.api.fallback``).
"""
import os as _os
import sys as _sys

# OpenBLAS threads spin for about 2**28 cycles after each call (its default timeout), taking
# the cores a CPU device's other kernel threads need; read once, when NumPy loads it.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from minerva import autograd, linalg, nn, optim, profiler, random  # noqa: E402,F401
from minerva import emath, fft, lib  # noqa: E402,F401
from minerva import array_api as _array_api  # noqa: E402  (what __array_namespace__ gives)
from minerva import einops_backend as _einops_backend  # noqa: E402,F401  (einops finds it)
from minerva import runtime as _runtime  # noqa: E402
from minerva.api import dtypes  # noqa: E402
from minerva.api import fallback as _fallback  # noqa: E402
from minerva.api import io as _io  # noqa: E402
from minerva.api import printing as _printing  # noqa: E402
from minerva.api import methods as _methods  # noqa: E402,F401  (NArray's methods, installed)
from minerva.api import (  # noqa: E402
    creation as _creation, errors as _errors, interop as _interop, logic as _logic,
    sets as _sets, sorting as _sorting, statistics as _statistics)
from minerva.builder import device  # noqa: E402,F401  (mv.device, not the package)
from minerva.api.core import (  # noqa: E402
    creation as _core_creation, elementwise as _elementwise, indexing as _core_indexing,
    manipulation as _core_manipulation, reductions as _reductions, ufuncs as _ufuncs)
from minerva.api.indexing import generate as _generate, select as _select  # noqa: E402
from minerva.api.indexing import iterating as _iterating  # noqa: E402
from minerva.api.manipulation import (  # noqa: E402
    joins as _joins, shaping as _shaping, views as _views)
from minerva.jit import JitError, jit  # noqa: E402,F401
from minerva.linalg import products as _products  # noqa: E402
from minerva.narray import NArray  # noqa: E402

CHAPTERS = (
    _fallback,  # first: a chapter's own version of a name wins
    _core_manipulation, _core_indexing, _core_creation, _ufuncs, _elementwise, _reductions,
    _creation, _select, _generate, _iterating, _shaping, _joins, _views, _sorting, _sets, _logic,
    _statistics, dtypes, _errors, _interop, _products, _runtime, _printing, _io)
"""The modules whose ``__all__`` make minerva's namespace."""

NAMES = {name: getattr(chapter, name) for chapter in CHAPTERS for name in chapter.__all__}
"""Every name of the namespace from ``CHAPTERS``, and what it names."""
globals().update({name: value for name, value in NAMES.items() if name not in globals()})
# (set here too, so ``np.exp`` in a user's loop is a plain attribute, not a call)

ndarray = NArray
__version__ = "0.2.0"
__all__ = sorted(set(NAMES) | {"NArray", "ndarray", "jit", "JitError", "autograd", "linalg",
                               "nn", "optim", "profiler", "random", "dtypes", "fft",
                               "emath", "lib"})
autograd.install(_sys.modules[__name__])
_interop.install(globals(), NAMES, _fallback.host_function, _array_api)
_fallback.install_attributes(NArray)  # numpy.ndarray's names NArray lacks, by the host


def __getattr__(name):
    """A name of the namespace (``NAMES``, which are attributes too: a name removed from
    the module alone is still found here); for a NumPy name minerva lacks, the host
    fallback (``minerva.api.fallback``); AttributeError for names NumPy lacks."""
    try:
        return NAMES[name]
    except KeyError:
        return _fallback.attribute("", name)


def __dir__() -> list:
    return sorted(set(globals()) | set(NAMES) | _fallback.numpy_names(""))
