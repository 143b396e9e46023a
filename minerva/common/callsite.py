"""Find the user's line: the first stack frame outside the minerva package."""
from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


_INSIDE: dict = {}


def _inside(frame) -> bool:
    code = frame.f_code
    known = _INSIDE.get(code)
    if known is None:
        known = _INSIDE[code] = code.co_filename.startswith(_PACKAGE_DIR)
    return known


def user_callsite(skip: int = 2, guess: int = 3) -> tuple[str, int]:
    """``(filename, lineno)`` of the innermost frame whose code lies outside the package.

    Frame objects are made on demand, so walking out one frame at a time costs one object
    per frame. The user's frame is usually ``guess`` frames further out: look there first,
    and accept it when the frame just inside it belongs to the package."""
    try:
        frame = sys._getframe(skip + guess)
        if _inside(sys._getframe(skip + guess - 1)) and not _inside(frame):
            return (frame.f_code.co_filename, frame.f_lineno)
    except ValueError:  # the stack is shallower than the guess
        pass
    frame = sys._getframe(skip)
    inside = _INSIDE
    while frame is not None:
        code = frame.f_code
        known = inside.get(code)
        if known is None:
            known = inside[code] = code.co_filename.startswith(_PACKAGE_DIR)
        if not known:
            return (code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return ("<minerva>", 0)


def format_callsite(site: tuple[str, int] | None) -> str:
    """``"file.py:line"`` for a callsite tuple (``"?"`` when unknown)."""
    if not site:
        return "?"
    return f"{os.path.basename(site[0])}:{site[1]}"
