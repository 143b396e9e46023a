"""The host fallback: every public name of NumPy's namespaces that minerva has no native
version of still works, by running NumPy's own code on host copies of the inputs (as
cuPyNumeric and ``cupyx.fallback_mode`` do).

- ``resolve``: what ``mv.<name>``, ``mv.fft.<name>`` ... is for such a name: a
  ``HostFunction`` for NumPy's functions, NumPy's own object for its classes, constants
  and the few functions that take no arrays;
- ``host``: ``HostFunction`` and its call: the inputs' values to the host, NumPy's code,
  written arguments back through minerva's writes, results to the current device;
- ``writes``: which arguments a NumPy function writes into;
- ``ledger``: the mode (``MINERVA_FALLBACK``), the counts per name (``fallback_stats``),
  the trace record (a slice on the ``host`` track);
- ``attributes``: NArray's descriptors for ``numpy.ndarray``'s names it lacks;
- ``no_values``: the functions that need no values, native so they never fall back.

The fallback is not a chapter of NumPy: like ``methods.py`` it serves every chapter, and
the sub-namespaces (``minerva.linalg``, ``minerva.random`` ...) use it for NumPy's names
they lack. See doc/numpy/fallback.md.
"""
from __future__ import annotations

from minerva.api.fallback.attributes import (  # noqa: F401  (used by the rest of minerva)
    HostAttribute, fallback_attributes, install_attributes)
from minerva.api.fallback.host import HostFunction, host_function  # noqa: F401
from minerva.api.fallback.ledger import fallback_stats, reset_fallback_stats
from minerva.api.fallback.no_values import (  # noqa: F401  (the namespace's names)
    broadcast_shapes, isscalar, iterable, may_share_memory, ndim, shape, shares_memory,
    size)
from minerva.api.fallback.resolve import (  # noqa: F401  (used by the rest of minerva)
    attribute, is_resolved, numpy_names, public_names, resolve, resolve_module)
from minerva.common.errors import FallbackError

__all__ = ["FallbackError", "broadcast_shapes", "fallback_stats", "isscalar", "iterable",
           "may_share_memory", "ndim", "reset_fallback_stats", "shape", "shares_memory",
           "size"]
