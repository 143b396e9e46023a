"""The errors of the trace tools: a trace path refused at ``mv.profiler.start``, and a trace
file ``minerva-trace`` cannot read. Both are MinervaErrors and ValueErrors (a bad
argument or a bad input file); their messages are one line that names the path."""
from __future__ import annotations

from minerva.common.errors import MinervaError


class TracePathError(MinervaError, ValueError):
    """A trace cannot be written at this path: its directory is missing or not writable,
    or the path is a directory. Raised by ``mv.profiler.start`` before anything records."""


class TraceFileError(MinervaError, ValueError):
    """A trace file that cannot be read, or is not a minerva Chrome trace. The message
    is one line: ``PATH: what is wrong``."""

    def __init__(self, path, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem
