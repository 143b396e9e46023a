"""Clear errors for NumPy names minerva does not have.

``minerva/__init__.py`` (and ``minerva.random``, ``minerva.linalg``) end with a module
``__getattr__`` (PEP 562) that raises ``missing_attribute(name, module)``: for a name NumPy
has, an AttributeError that says minerva does not support it yet and, where one exists,
what to use instead; for any other name, Python's plain AttributeError.
"""
from __future__ import annotations

import numpy as np

_ON_HOST = "numpy.{name} on the host, then mv.array(...) (x.to_numpy() gives the values)"
_VALUES = "minerva arrays hold bool, integer, float or complex values"


def _group(names: str, hint: str) -> dict:
    return dict.fromkeys(names.split(), hint)


_HINTS = {
    "": {
        **_group("save savez savez_compressed load loadtxt savetxt genfromtxt fromfile "
                 "frombuffer fromstring fromregex fromiter fromfunction memmap fft "
                 "polynomial poly1d polyfit polyval", _ON_HOST),
        **_group("matrix asmatrix bmat", "2-D arrays and the @ operator"),
        **_group("vectorize frompyfunc piecewise apply_along_axis apply_over_axes",
                 "minerva's element-wise functions, with mv.where for branches"),
        **_group("str_ bytes_ object_ void datetime64 timedelta64 character flexible "
                 "record char strings rec datetime_data datetime_as_string busday_count "
                 "busday_offset is_busday busdaycalendar", _VALUES),
        **_group("set_printoptions get_printoptions printoptions",
                 "numpy.{name}: minerva prints arrays through NumPy"),
        **_group("testing", "numpy.testing: it reads NArrays through numpy.asarray"),
        **_group("ndindex ndenumerate nditer",
                 "numpy.ndindex(x.shape) for indices, numpy.asarray(x) for values"),
        "ma": "mv.where with a boolean mask",
    },
    "random": {
        **_group("BitGenerator PCG64 PCG64DXSM MT19937 Philox SFC64 SeedSequence",
                 "numpy.random.{name}, passed to mv.random.default_rng(...)"),
        **_group("get_bit_generator set_bit_generator",
                 "mv.random.RandomState(seed) or mv.random.default_rng(seed)"),
    },
    "linalg": {},
}


def missing_attribute(name: str, module: str = "") -> AttributeError:
    """The AttributeError for ``minerva.<module>.<name>`` (``module`` '' for the package
    itself, or 'random', 'linalg'): it says whether NumPy has the name and, if so, what to
    use instead where minerva has an alternative."""
    where = "minerva" + (f".{module}" if module else "")
    if not _numpy_has(name, module):
        return AttributeError(f"module '{where}' has no attribute '{name}'", name=name)
    message = (f"{where} has no attribute '{name}': it is a NumPy name minerva does not "
               "support yet")
    hint = _HINTS.get(module, {}).get(name)
    if hint is not None:
        message += " (use " + hint.format(name=name) + " instead)"
    return AttributeError(message, name=name)


def _numpy_has(name: str, module: str) -> bool:
    """Whether ``numpy.<module>`` has the public name ``name`` (looked up in its ``dir``,
    so NumPy's deprecation warnings stay silent)."""
    if name.startswith("_"):
        return False
    numpy_module = getattr(np, module) if module else np
    return name in dir(numpy_module)


__all__ = ["missing_attribute"]
