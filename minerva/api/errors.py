"""Errors: the exceptions minerva raises (``MinervaError`` and its kinds, see API.md,
"Errors"), and NumPy's own floating-point error handling (``errstate``, ``seterr``,
``geterr``, ``seterrcall``, ``geterrcall``): an op's kernel runs under the state of the
thread that issued it."""
from __future__ import annotations

from numpy import errstate, geterr, geterrcall, seterr, seterrcall

from minerva.common.errors import (
    CancelledError, DeviceError, DTypeError, IntegerOverflowError, JitError, MinervaError,
    OpError, OutOfMemoryError, ShapeError, WaitTimeoutError)

__all__ = ["CancelledError", "DTypeError", "DeviceError", "IntegerOverflowError", "JitError",
           "MinervaError", "OpError", "OutOfMemoryError", "ShapeError", "WaitTimeoutError",
           "errstate", "geterr", "geterrcall", "seterr", "seterrcall"]
