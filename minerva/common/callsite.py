"""Find the user's line: the first stack frame outside the minerva package."""
from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_callsite(skip: int = 2) -> tuple[str, int]:
    """``(filename, lineno)`` of the innermost frame whose code lies outside the package."""
    frame = sys._getframe(skip)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return ("<minerva>", 0)
    return (frame.f_code.co_filename, frame.f_lineno)


def format_callsite(site: tuple[str, int] | None) -> str:
    """``"file.py:line"`` for a callsite tuple (``"?"`` when unknown)."""
    if not site:
        return "?"
    return f"{os.path.basename(site[0])}:{site[1]}"
