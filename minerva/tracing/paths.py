"""The check of a trace path, made when a trace starts (``mv.profiler.start``,
``MINERVA_TRACE``) so that a bad path fails at once rather than at ``stop``/shutdown."""
from __future__ import annotations

import os

from minerva.tracing.errors import TracePathError


def check_trace_path(path) -> str:
    """``path`` as a str, once it is known a trace file can be written there.

    Raises TracePathError (a ValueError and a MinervaError) naming the path when it is
    empty, is a directory, its parent directory does not exist (or is not a directory),
    or the parent directory (or an existing file at ``path``) is not writable. A path
    that is not a str, bytes or os.PathLike raises TypeError. Nothing is created.
    """
    text = os.fsdecode(os.fspath(path))
    if not text:
        raise TracePathError("cannot write a trace to an empty path")
    problem = _problem(text)
    if problem is not None:
        raise TracePathError(f"cannot write a trace to {text!r}: {problem}")
    return text


def _problem(path: str) -> str | None:
    """What keeps a file from being written at ``path``, or None."""
    if os.path.isdir(path):
        return "it is a directory"
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(parent):
        return f"directory {parent!r} does not exist"
    if not os.path.isdir(parent):
        return f"{parent!r} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"directory {parent!r} is not writable"
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return "the file exists and is not writable"
    return None
