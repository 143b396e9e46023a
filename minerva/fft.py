"""``mv.fft``: ``numpy.fft`` on NArrays.

The transforms (``fft``, ``ifft``, ``rfft``, ``fft2``, ``fftn``, ``hfft`` ... every
public name of ``numpy.fft``) run through the host fallback (``minerva.api.fallback``):
NumPy's pocketfft on a host copy of the input, the result uploaded to the current device
(see doc/numpy/fallback.md for what that costs). The helpers that move or make no
transformed values are native: ``fftshift`` and ``ifftshift`` (a roll on the device) and
``fftfreq`` and ``rfftfreq`` (an ``arange`` times the spacing), with NumPy's values and
dtypes.
"""
from __future__ import annotations

import numpy as np

from minerva.api.core.creation import arange
from minerva.api.core.elementwise import astype
from minerva.api.core.manipulation import concatenate
from minerva.api.fallback.resolve import attribute, numpy_names
from minerva.api.manipulation.shaping import roll
from minerva.builder import on_device, to_narray


def _shifts(x, axes, sign: int) -> tuple:
    if axes is None:
        axes = tuple(range(x.ndim))
        return [sign * (n // 2) for n in x.shape], axes
    if isinstance(axes, (int, np.integer)):
        return sign * (x.shape[axes] // 2), axes
    return [sign * (x.shape[ax] // 2) for ax in axes], axes


def fftshift(x, axes=None):
    """``x`` with the zero-frequency term moved to the centre (along ``axes``, every
    axis by default), as ``numpy.fft.fftshift``."""
    x = to_narray(x, "fftshift")
    return roll(x, *_shifts(x, axes, 1))


def ifftshift(x, axes=None):
    """The inverse of ``fftshift``, as ``numpy.fft.ifftshift``."""
    x = to_narray(x, "ifftshift")
    return roll(x, *_shifts(x, axes, -1))


def _length(n) -> int:
    if not isinstance(n, (int, np.integer)) or isinstance(n, (bool, np.bool_)):
        raise ValueError("n should be an integer")
    return int(n)


def _in_dtype(values, dtype):
    """``values`` (NumPy's ``float64`` frequencies) cast to ``dtype`` when given (the
    array API's keyword), as ``astype``."""
    return values if dtype is None else astype(values, dtype, copy=False)


def fftfreq(n, d=1.0, device=None, *, dtype=None):
    """The sample frequencies of an ``n``-point DFT with sample spacing ``d``, as
    ``numpy.fft.fftfreq``, made on ``device`` (a minerva device id; None or ``"cpu"``: the
    current device); ``dtype=`` is the array API's: NumPy's values cast to it."""
    n = _length(n)
    spacing = 1.0 / (n * d)
    half = (n - 1) // 2 + 1
    with on_device(device):
        values = concatenate([arange(0, half), arange(-(n // 2), 0)]) * spacing
        return _in_dtype(values, dtype)


def rfftfreq(n, d=1.0, device=None, *, dtype=None):
    """The sample frequencies of ``rfft``'s output, as ``numpy.fft.rfftfreq`` (``device``
    and ``dtype`` as ``fftfreq``'s)."""
    n = _length(n)
    with on_device(device):
        return _in_dtype(arange(0, n // 2 + 1) * (1.0 / (n * d)), dtype)


def __getattr__(name):
    """``numpy.fft``'s transforms: the host fallback (AttributeError for other names)."""
    return attribute("fft", name)


def __dir__() -> list:
    return sorted(set(globals()) | numpy_names("fft"))
