"""The array API namespace NArrays give array-API consumers: ``x.__array_namespace__()``.

It is the ``minerva`` namespace (every name is the package's own, found at call time)
except where NumPy's answer is one the array API leaves open and every other namespace
consumers meet answers one way: ``unique_values`` gives the unique elements **sorted**, as
``numpy.unique`` and ``array_api_compat.numpy`` do (NumPy 2.3's ``numpy.unique_values``
gives them in hash order, and consumers such as scikit-learn read ``classes_`` from it as
sorted: their classifiers and ``log_loss`` would be silently wrong). ``mv.unique_values``
itself stays NumPy's. As ``array_api_compat``'s namespaces, it is made for consumers:
``__array_namespace__`` returns it, ``import minerva as np`` never sees it.
"""
from __future__ import annotations

from minerva.api import interop


def unique_values(x, /):
    """The unique elements of ``x`` (flattened), sorted, as ``numpy.unique(x,
    equal_nan=False)``: an NArray. The result's shape depends on the values: this waits
    for ``x``."""
    return interop.namespace_module().unique(x, equal_nan=False)


def __getattr__(name: str):
    """Every other name is the ``minerva`` package's (AttributeError where it has none)."""
    return getattr(interop.namespace_module(), name)


def __dir__() -> list:
    return sorted(set(dir(interop.namespace_module())) | {"unique_values"})
