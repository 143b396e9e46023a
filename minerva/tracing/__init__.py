"""Tracing: record what the runtime did and write it as a Chrome trace (open in Perfetto).

    mv.profiler.start("run.json")  # record from now on
    ...                            # any minerva program
    mv.profiler.stop()             # write run.json (also done by mv.shutdown())

``MINERVA_TRACE=run.json`` records a whole run. The recorder only listens on the runtime's
hook bus (``minerva.common.hooks``): it never drives execution, and with no trace running
the hooks cost a call of a shared no-op. ``minerva-trace`` (``minerva.tracing.cli``) reads
the files back: summary, critical path, executed DAG, timeline picture. See doc/tracing.md.

A bad trace path fails at ``start`` (``check_trace_path``: TracePathError, a ValueError);
a file that ``minerva-trace`` cannot read is a TraceFileError (also a ValueError).
"""
from __future__ import annotations

import contextlib
import gc
import threading

from minerva.common.errors import MinervaError
from minerva.common.logging import get_logger
from minerva.tracing import chrome
from minerva.tracing.convert import convert, format_error
from minerva.tracing.errors import TraceFileError, TracePathError
from minerva.tracing.paths import check_trace_path
from minerva.tracing.recorder import MAX_EVENTS, Recorder

log = get_logger("minerva.tracing")


class Tracer:
    """One recording of one runtime, from ``start`` until ``stop`` writes the file.

    ``_lock`` guards ``_recorder``: stop may be called by the user and by shutdown at
    once, and only one of them writes the file.
    """

    def __init__(self, system, path: str, max_events: int = MAX_EVENTS):
        self.system = system
        self.path = str(path)
        self._lock = threading.Lock()
        self._recorder = Recorder(max_events)
        system.hooks.subscribe(self._recorder)

    @property
    def recording(self) -> bool:
        """Whether this tracer still records."""
        return self._recorder is not None

    def stop(self) -> str | None:
        """Stop recording and write the trace; its path (None if already stopped).

        The recorder is unsubscribed and the tracer detached from the system first, so
        when writing fails (disk full, directory removed) the runtime is left without a
        trace, the error is logged (``trace_write_failed``) and then raised (OSError)."""
        with self._lock:
            recorder, self._recorder = self._recorder, None
        if recorder is None:
            return None
        self._detach(recorder)
        try:
            with _collector_paused():  # many small dicts, no cycles: the GC would only slow it
                trace = self.build(recorder)
                chrome.write(trace, self.path)
        except Exception as exc:
            log.error("trace_write_failed", path=self.path, error=format_error(exc))
            raise
        log.info("trace_written", path=self.path, n_events=len(trace["traceEvents"]))
        return self.path

    def _detach(self, recorder: Recorder) -> None:
        """Stop hearing events and stop being the system's tracer."""
        self.system.hooks.unsubscribe(recorder)
        recorder.close()
        if getattr(self.system, "tracer", None) is self:
            self.system.tracer = None

    def build(self, recorder: Recorder) -> dict:
        """The Chrome trace object of what ``recorder`` heard."""
        recording = convert(recorder.snapshot(), recorder.t_start, recorder.t_stop,
                            *self._live_nodes())
        trace = chrome.build(recording, _device_names(self.system))
        if recorder.full:
            log.warning("trace_truncated", path=self.path, kept_events=recorder.max_events,
                        hint="the oldest events were dropped; trace a shorter window")
            trace["otherData"]["minerva"]["truncated"] = True
        return trace

    def _live_nodes(self) -> tuple[list, dict]:
        """The op nodes still in the DAG and the data nodes by id, copied under the
        engine's lock (read only)."""
        return self.system.engine.snapshot(_live)


def _live(dag) -> tuple[list, dict]:
    return list(dag.ops.values()), dict(dag.data)


@contextlib.contextmanager
def _collector_paused():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _device_names(system) -> dict:
    """Device id -> a short description, read duck-typed from ``system.devices``."""
    names = {}
    for device in system.devices.all():
        kind = getattr(device, "kind", "device")
        names[device.device_id] = f"{kind}{getattr(device, 'ordinal', device.device_id)}"
    return names


def start_system_trace(system, path: str, max_events: int = MAX_EVENTS) -> Tracer:
    """Start recording ``system`` into ``path``. TracePathError (a ValueError) if no trace
    can be written at ``path`` (see ``check_trace_path``), MinervaError if ``system``
    already records; either way nothing is subscribed."""
    path = check_trace_path(path)
    current = getattr(system, "tracer", None)
    if current is not None and current.recording:
        raise MinervaError(f"a trace is already being recorded to {current.path}; "
                           "call mv.profiler.stop() first")
    tracer = Tracer(system, path, max_events)
    system.tracer = tracer
    log.info("trace_started", path=path)
    return tracer


__all__ = ["start_system_trace", "check_trace_path", "Tracer", "TracePathError", "MAX_EVENTS",
           "TraceFileError"]
