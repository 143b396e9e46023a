"""What minerva hands out for a NumPy name it has no native version of.

A name is public in a NumPy namespace as NumPy itself lists it: it is in ``dir(module)``
and does not start with ``_``. For such a name, ``resolve`` gives

- a ``HostFunction`` for NumPy's functions (plain functions, ufuncs, builtins), which run
  NumPy's code on host copies of the inputs;
- NumPy's own object for classes (``ndindex``, ``poly1d``, ``errstate`` ...), constants
  (``ScalarType``, ``sctypeDict`` ...), modules (``numpy.testing``, which reads NArrays
  through ``numpy.asarray``) and the functions of ``NUMPYS_OWN``, which take no arrays
  (printing options, ``show_config`` ...): what a user needs of them is NumPy's object.

The same name always gives the same object (``mv.fft.fft is mv.fft.fft``).
"""
from __future__ import annotations

import threading
import types
import warnings

import numpy as np

from minerva.api.fallback.host import HostFunction
from minerva.api.missing import cannot_exist, missing_attribute

NAMESPACES = {"": np, "linalg": np.linalg, "fft": np.fft, "random": np.random,
              "emath": np.emath, "lib": np.lib, "lib.stride_tricks": np.lib.stride_tricks}
"""minerva's namespaces (``''`` the package, ``'fft'`` ``mv.fft`` ...) -> NumPy's module
of the same names."""

NUMPYS_OWN = {
    "": frozenset("get_printoptions set_printoptions printoptions getbufsize setbufsize "
                  "show_config show_runtime get_include info typename mintypecode "
                  "test".split()),
}
"""Per namespace, the functions handed out as NumPy's own: they take no arrays (``test``,
NumPy's own test runner, is in every namespace)."""

_RESOLVED: dict = {}
_UNKNOWN = object()
_DIRS: dict = {}
_LOCK = threading.Lock()


def label(namespace: str, name: str) -> str:
    """NumPy's full name of ``name`` in ``namespace``: ``numpy.fft.fft``."""
    return ".".join(part for part in ("numpy", namespace, name) if part)


def numpy_names(namespace: str) -> frozenset:
    """The public names of NumPy's module for ``namespace`` (submodules included)."""
    names = _DIRS.get(namespace)
    if names is None:
        names = _DIRS[namespace] = frozenset(
            n for n in dir(NAMESPACES[namespace]) if not n.startswith("_"))
    return names


def public_names(namespace: str) -> list:
    """NumPy's public names of ``namespace`` as NumPy defines them: ``dir(module)``
    without the names starting with ``_`` and without the submodules."""
    return sorted(n for n in numpy_names(namespace)
                  if not isinstance(numpy_object(namespace, n), types.ModuleType))


def resolve_module(namespace: str):
    """NumPy's module for ``namespace`` (``numpy.fft`` for ``'fft'``)."""
    return NAMESPACES[namespace]


def numpy_object(namespace: str, name: str):
    """NumPy's object for ``name`` in ``namespace`` (its deprecation warnings silenced)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(NAMESPACES[namespace], name)


def resolve(namespace: str, name: str):
    """What minerva hands out for NumPy's public ``name`` of ``namespace`` (see the
    module's doc); None when NumPy has no such public name."""
    found = _RESOLVED.get((namespace, name), _UNKNOWN)
    if found is not _UNKNOWN:
        return found
    if name not in numpy_names(namespace) or cannot_exist(name, namespace):
        return None
    obj = numpy_object(namespace, name)
    if not _numpys_own(namespace, name, obj):
        obj = HostFunction(obj, label(namespace, name))
    with _LOCK:
        return _RESOLVED.setdefault((namespace, name), obj)


def _numpys_own(namespace: str, name: str, obj) -> bool:
    return (isinstance(obj, (type, types.ModuleType)) or not callable(obj)
            or name == "test" or name in NUMPYS_OWN.get(namespace, ()))


def is_resolved(namespace: str, name: str, obj) -> bool:
    """Whether ``obj`` is what the fallback handed out for ``name`` of ``namespace``
    (not a native name of minerva)."""
    key = (namespace, name)
    return key in _RESOLVED and _RESOLVED[key] is obj


def attribute(namespace: str, name: str):
    """``resolve(namespace, name)``, or the AttributeError of a name minerva lacks
    (``minerva.api.missing``)."""
    found = resolve(namespace, name)
    if found is None:
        raise missing_attribute(name, namespace)
    return found
