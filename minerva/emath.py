"""``mv.emath``: ``numpy.emath`` (``numpy.lib.scimath``) on NArrays.

Its functions (``sqrt``, ``log``, ``log2``, ``log10``, ``logn``, ``power``, ``arccos``,
``arcsin``, ``arctanh``) give a complex result where the input's values leave the real
domain, so their output dtype depends on the values: they run through the host fallback
(``minerva.api.fallback``), NumPy's code on a host copy of the input, the result uploaded
to the current device.
"""
from __future__ import annotations

from minerva.api.fallback.resolve import attribute, numpy_names


def __getattr__(name):
    """``numpy.emath``'s functions: the host fallback (AttributeError for other names)."""
    return attribute("emath", name)


def __dir__() -> list:
    return sorted(set(globals()) | numpy_names("emath"))
