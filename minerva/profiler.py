"""``mv.profiler``: record what the runtime does into a Chrome trace (open it in Perfetto),
under MXNet's name.

    mv.profiler.start("run.json")  # record from now on
    ...                            # any minerva program
    mv.profiler.stop()             # write run.json (also done by mv.shutdown())

``MINERVA_TRACE=run.json`` records a whole run. The recorder and the writers live in
``minerva.tracing``; ``minerva-trace`` reads the files back (summary, critical path,
executed DAG, timeline picture). See doc/tracing.md. (``mv.trace`` is NumPy's ``trace``,
the sum along a diagonal.)
"""
from __future__ import annotations

from minerva import system as _system
from minerva.tracing import (  # noqa: F401  (the public names of tracing)
    MAX_EVENTS, TraceFileError, TracePathError, check_trace_path)


def start(path: str, max_events: int = MAX_EVENTS) -> None:
    """Record the running runtime (started now if none runs) into the Chrome trace
    ``path`` (``.json``, or ``.json.gz`` compressed) until ``stop()`` or shutdown.

    At most ``max_events`` events are kept (about three per op): past that the oldest
    are dropped, the trace keeps the latest part of the run and says it was truncated.

    The path is checked first (``check_trace_path``): TracePathError, a ValueError
    naming the path, if its directory is missing or not writable or it is a directory;
    then nothing records and no runtime is started."""
    path = check_trace_path(path)
    _system.get_system().start_trace(path, max_events)


def stop() -> str | None:
    """Stop the current trace and write its file; the path (None when none was on).

    If the file cannot be written (OSError), the trace is stopped all the same, the
    failure is logged (``trace_write_failed``) and the OSError raised."""
    system = _system.running()
    return None if system is None else system.stop_trace()


__all__ = ["start", "stop", "check_trace_path", "TracePathError", "TraceFileError"]
