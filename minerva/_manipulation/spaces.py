"""Evenly spaced values: ``linspace``, ``logspace`` and ``geomspace``. The values are
computed on the host by NumPy (so they are NumPy's to the last bit) and copied to the
current device; NArray endpoints are read back first (this waits for them)."""
from __future__ import annotations

import numpy as np

from minerva.builder import upload
from minerva.creation import check_dtype
from minerva.narray import NArray


def _host(value):
    return value.to_numpy() if isinstance(value, NArray) else value


def _dtype(dtype):
    return None if dtype is None else check_dtype(dtype)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (included unless
    ``endpoint`` is False); with ``retstep``, ``(values, step)``."""
    if device not in (None, "cpu"):
        raise ValueError("linspace: device= is not supported; use mv.device()")
    result = np.linspace(_host(start), _host(stop), num, endpoint, retstep, _dtype(dtype),
                         axis)
    if retstep:
        return upload(result[0]), result[1]
    return upload(result)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop, num)``: values evenly spaced on a log scale."""
    return upload(np.logspace(_host(start), _host(stop), num, endpoint, _host(base),
                              _dtype(dtype), axis))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``num`` values from ``start`` to ``stop`` in a geometric progression."""
    return upload(np.geomspace(_host(start), _host(stop), num, endpoint, _dtype(dtype),
                               axis))
