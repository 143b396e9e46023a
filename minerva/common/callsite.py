"""Find the user's line: the first stack frame outside the minerva package."""
from __future__ import annotations

import os
import sys

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
"""The package's folder: code in a file under it is minerva's, not the user's."""


_INSIDE: dict = {}
"""Code object -> whether it lies inside the package (filled as frames are met)."""


def _is_inside(code) -> bool:
    known = _INSIDE[code] = code.co_filename.startswith(PACKAGE_DIR)
    return known


_HOPS: dict = {}
"""Code object of a frame inside the package -> how many frames further out the user's
frame was found last time (a guess checked on every use)."""


_LINES: dict = {}
"""(code object, instruction offset) -> its line, for the offsets met (bounded: cleared
when full). ``f_lineno`` reads the line table from its start at every call: in a long
function that is the dearest step of an op."""
_MAX_LINES = 4096


def line_of(frame) -> int:
    """``frame.f_lineno``, read once per instruction offset."""
    key = frame.f_code, frame.f_lasti
    try:
        return _LINES[key]
    except KeyError:
        pass
    if len(_LINES) >= _MAX_LINES:
        _LINES.clear()
    line = _LINES[key] = frame.f_lineno
    return line


def user_callsite(skip: int = 2) -> tuple[str, int]:
    """``(filename, lineno)`` of the innermost frame whose code lies outside the package,
    starting ``skip`` frames out.

    ``sys._getframe(n)`` makes only the frame object it returns, while stepping out with
    ``f_back`` makes one per step: the user's frame is looked up directly at the depth it
    was found last time from the same code, and the stack is walked only when that guess
    is wrong."""
    frame = sys._getframe(skip)
    start = frame.f_code
    hops = _HOPS.get(start)
    if hops is not None:
        try:
            guess = sys._getframe(skip + hops)
        except ValueError:  # the stack is shallower than the guess
            guess = None
        if guess is not None and _INSIDE.get(guess.f_code) is False and (
                hops == 0 or _INSIDE.get(sys._getframe(skip + hops - 1).f_code)):
            return (guess.f_code.co_filename, line_of(guess))
    return _walk(frame, start)


def _walk(frame, start) -> tuple[str, int]:
    inside, hops = _INSIDE, 0
    while frame is not None:
        code = frame.f_code
        try:
            known = inside[code]
        except KeyError:
            known = _is_inside(code)
        if not known:
            _HOPS[start] = hops
            return (code.co_filename, line_of(frame))
        frame = frame.f_back
        hops += 1
    return ("<minerva>", 0)


def format_callsite(site: tuple[str, int] | None) -> str:
    """``"file.py:line"`` for a callsite tuple (``"?"`` when unknown)."""
    if not site:
        return "?"
    return f"{os.path.basename(site[0])}:{site[1]}"
