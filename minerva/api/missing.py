"""The NumPy names that cannot exist in minerva, with the reason, and the AttributeError
for them and for names NumPy lacks.

Every public name of ``numpy``, ``numpy.linalg``, ``numpy.fft``, ``numpy.random``,
``numpy.emath`` and ``numpy.lib.stride_tricks`` resolves in minerva, natively or through
the host fallback (``minerva.api.fallback``): ``CANNOT_EXIST`` has none of them. It lists
the attributes of ``numpy.ndarray`` that a host copy cannot stand in for, when NArray has
no native version of them: they change the array object itself, not its values.
"""
from __future__ import annotations

CANNOT_EXIST = {
    "ndarray": {
        "resize": "it changes the array's own shape in place, and a host copy's new shape "
                  "would not reach the NArray (mv.resize(x, shape) gives a resized copy)",
        "setflags": "it sets the array's own flags, and a host copy's flags would not "
                    "reach the NArray",
    },
}
"""Namespace (``''`` the package, ``'fft'`` ..., ``'ndarray'`` NArray's attributes) ->
name -> why the host fallback cannot give it."""


def missing_attribute(name: str, namespace: str = "") -> AttributeError:
    """The AttributeError for ``name`` of ``minerva.<namespace>`` (or of NArray, for
    ``'ndarray'``): Python's plain message, with the reason when the name is one of
    ``CANNOT_EXIST``."""
    if namespace == "ndarray":
        message = f"'NArray' object has no attribute '{name}'"
    else:
        where = "minerva" + (f".{namespace}" if namespace else "")
        message = f"module '{where}' has no attribute '{name}'"
    reason = CANNOT_EXIST.get(namespace, {}).get(name)
    if reason is not None:
        message += f": NumPy's {name} cannot run on a host copy: {reason}"
    return AttributeError(message, name=name)


def cannot_exist(name: str, namespace: str = "") -> bool:
    """Whether ``name`` of ``namespace`` is one of ``CANNOT_EXIST``."""
    return name in CANNOT_EXIST.get(namespace, {})


__all__: list = []
