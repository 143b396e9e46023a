"""What devices report besides finished ops: ``LAUNCHED_REPORT`` (an op's work queued,
not done) and errors kept without the frames that raised them (``detach_traceback``)."""
from __future__ import annotations

import traceback


class _LaunchedReport:
    """What a device that launches ahead passes to its listener in place of an error when
    it has *queued* an op's work (not finished it); the listener answers True when the
    op's completion is awaited (settle it promptly)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "LAUNCHED_REPORT"


LAUNCHED_REPORT = _LaunchedReport()


def detach_traceback(exc: BaseException) -> BaseException:
    """Keep the kernel's traceback as text and drop the frames: a stored error must not
    hold the caller's stack (and the arrays in it) alive."""
    tb = exc.__traceback__
    if tb is not None:
        exc.add_note("kernel traceback (most recent call last):\n"
                     + "".join(traceback.format_tb(tb)).rstrip())
        exc.__traceback__ = None
    return exc
