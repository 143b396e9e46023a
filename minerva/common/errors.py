"""The exception classes of minerva; every error the runtime raises derives from MinervaError."""
from __future__ import annotations

from minerva.common.callsite import format_callsite, user_callsite


class MinervaError(Exception):
    """Base class of every error minerva raises."""


class ShapeError(MinervaError, ValueError):
    """An op's shapes or dtypes break its rule; raised at once, at the line that built the op.

    Every ShapeError notes that line ("built at file.py:12")."""

    def __init__(self, *args):
        super().__init__(*args)
        self.add_note(f"built at {format_callsite(user_callsite())}")


class ShapeIndexError(ShapeError, IndexError):
    """An index is out of range for the array it indexes (also an IndexError)."""


class DTypeError(ShapeError, TypeError):
    """An op does not take its operands' dtypes (``invert`` of floats), or a result cannot be
    written into an array of another dtype under NumPy's casting rule (``x += 1.5`` on an
    integer array); also a TypeError, as NumPy's UFuncTypeError."""


class IntegerOverflowError(ShapeError, OverflowError):
    """A Python integer an op takes does not fit the integer dtype NumPy 2 gives it (NEP 50:
    ``x_uint8 + 300``, ``x_uint8[0] = -1``); also an OverflowError, as NumPy's."""


class JitError(MinervaError):
    """A jitted function cannot be recorded or replayed as asked: a host read while
    recording (``float(x)``, ``to_numpy()``, ``if x:``), a NumPy-generator draw inside it,
    or, with ``check=True``, a replay that differs from the eager run."""


class FallbackError(MinervaError, NotImplementedError):
    """A NumPy name minerva has no native version of cannot run on the host as asked:
    ``MINERVA_FALLBACK=raise`` forbids the host fallback, or the call needs what a host
    copy cannot give (a method changing the array's own shape). ``name`` is NumPy's name
    of the function (``numpy.fft.fft``)."""

    def __init__(self, message: str, name: str = ""):
        super().__init__(message)
        self.name = name


class CancelledError(MinervaError):
    """An op never ran: ``mv.shutdown`` cancelled it (raised as the cause of its OpError)."""


class DeviceError(MinervaError):
    """A bad device id, a missing GPU, or a device that was lost."""


class WaitTimeoutError(MinervaError, TimeoutError):
    """A blocking call (wait, to_numpy, wait_for_all) ran past its timeout."""


class OutOfMemoryError(MinervaError, MemoryError):
    """A device store could not satisfy a request after freeing its cache and retrying."""


class OpError(MinervaError):
    """An op failed while running.

    Raised at the next wait/to_numpy that depends on it. Carries the failing op's name
    (``op``), its ``node_id``, its ``device`` id, ``created_at`` ("file.py:line" of the
    user's line that built it) and the original exception as ``__cause__``.
    """

    def __init__(self, message: str, *, op: str, node_id: int, device: int,
                 created_at: str, cause: BaseException | None = None):
        super().__init__(message)
        self.op = op
        self.node_id = node_id
        self.device = device
        self.created_at = created_at
        self.__cause__ = cause

    @classmethod
    def from_failure(cls, cause: BaseException, *, op: str, node_id: int, device: int,
                     created_at: str) -> "OpError":
        """Wrap ``cause`` (raised by op ``op``) into the OpError class that fits it."""
        kind = OpOutOfMemoryError if isinstance(cause, MemoryError) else cls
        message = (f"op '{op}' (node {node_id}) created at {created_at} failed on "
                   f"device {device}: {type(cause).__name__}: {cause}")
        return kind(message, op=op, node_id=node_id, device=device,
                    created_at=created_at, cause=cause)

    def fresh(self) -> "OpError":
        """A new instance with the same fields, to raise without growing a shared traceback."""
        err = type(self)(str(self), op=self.op, node_id=self.node_id, device=self.device,
                         created_at=self.created_at, cause=self.__cause__)
        return err

    def __reduce__(self):
        return (_rebuild_op_error, (type(self), str(self), self.op, self.node_id,
                                    self.device, self.created_at))


class OpOutOfMemoryError(OpError, OutOfMemoryError):
    """An op failed because its device ran out of memory (both an OpError and a MemoryError)."""


def _rebuild_op_error(kind, message, op, node_id, device, created_at):
    return kind(message, op=op, node_id=node_id, device=device, created_at=created_at)
