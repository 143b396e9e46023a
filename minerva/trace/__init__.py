"""Tracing: record what the runtime did and write it as a Chrome trace (open in Perfetto).

    mv.trace.start("run.json")     # record from now on
    ...                            # any minerva program
    mv.trace.stop()                # write run.json (also done by mv.shutdown())

``MINERVA_TRACE=run.json`` records a whole run. The recorder only listens on the runtime's
hook bus (``minerva.common.hooks``): it never drives execution, and with no trace running
the hooks cost a call of a shared no-op. ``minerva-trace`` (``minerva.trace.cli``) reads
the files back: summary, critical path, executed DAG, timeline picture. See doc/tracing.md.
"""
from __future__ import annotations

import contextlib
import gc
import threading

from minerva.common.errors import MinervaError
from minerva.common.logging import get_logger
from minerva.trace import chrome
from minerva.trace.convert import convert
from minerva.trace.recorder import MAX_EVENTS, Recorder

log = get_logger("minerva.trace")


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
        """Stop recording and write the trace; its path (None if already stopped)."""
        with self._lock:
            recorder, self._recorder = self._recorder, None
        if recorder is None:
            return None
        self.system.hooks.unsubscribe(recorder)
        recorder.close()
        if getattr(self.system, "tracer", None) is self:
            self.system.tracer = None
        with _collector_paused():  # many small dicts, no cycles: the GC would only slow it
            trace = self.build(recorder)
            chrome.write(trace, self.path)
        log.info("trace_written", path=self.path, n_events=len(trace["traceEvents"]))
        return self.path

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
        engine, dag = self.system.engine, self.system.dag
        with engine._lock:
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
    """Start recording ``system`` into ``path``; MinervaError if it already records."""
    current = getattr(system, "tracer", None)
    if current is not None and current.recording:
        raise MinervaError(f"a trace is already being recorded to {current.path}; "
                           "call mv.trace.stop() first")
    tracer = Tracer(system, path, max_events)
    system.tracer = tracer
    log.info("trace_started", path=str(path))
    return tracer


def start(path: str, max_events: int = MAX_EVENTS) -> None:
    """Record the running runtime (started now if none runs) into the Chrome trace
    ``path`` (``.json``, or ``.json.gz`` compressed) until ``stop()`` or shutdown.

    At most ``max_events`` events are kept (about three per op): past that the oldest
    are dropped, the trace keeps the latest part of the run and says it was truncated."""
    start_system_trace(_running_system(start=True), path, max_events)


def stop() -> str | None:
    """Stop the current trace and write its file; the path (None when none was on)."""
    system = _running_system(start=False)
    tracer = getattr(system, "tracer", None)
    return tracer.stop() if tracer is not None else None


def _running_system(start: bool):
    # The public face needs the runtime; the recorder itself stays below the wiring.
    from minerva import system as wiring
    return wiring.get_system() if start else wiring.running()


__all__ = ["start", "stop", "start_system_trace", "Tracer"]
