"""``mv.lib``: ``numpy.lib`` as far as NArray programs use it.

``mv.lib.stride_tricks`` is minerva's (native views: ``as_strided``,
``sliding_window_view``). Every other public name of ``numpy.lib`` is NumPy's own object
(its classes and submodules: ``NumpyVersion``, ``mixins``, ``scimath`` ..., whose
functions reach minerva through ``__array_function__``) or, for a function, the host
fallback (``minerva.api.fallback``).
"""
from __future__ import annotations

from minerva.api.fallback.resolve import attribute, numpy_names
from minerva.lib import stride_tricks  # noqa: F401


def __getattr__(name):
    """``numpy.lib``'s other names: NumPy's own objects, or the host fallback."""
    return attribute("lib", name)


def __dir__() -> list:
    return sorted(set(globals()) | numpy_names("lib"))
