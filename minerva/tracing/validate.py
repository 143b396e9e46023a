"""Read a trace file's JSON and check it before the reader (``model``) uses it: the one
place where a bad file becomes a TraceFileError with a one-line message.

A trace is a JSON object with a ``traceEvents`` list (or, as Chrome also accepts, the
list alone) of event objects. The events the reader uses — thread and process names, op,
copy and dispatcher slices, poisoned instants, the two counters — must carry the fields
it reads with the right types; events of other kinds are skipped, as long as they are
objects. Times (us) are finite numbers of magnitude at most ``MAX_US``.
"""
from __future__ import annotations

import gzip
import json
import math
import zlib

from minerva.tracing.errors import TraceFileError

MAX_US = 1e15
"""The largest time (us, about 31 years) a trace may hold."""


def read_json(path: str):
    """The JSON value in ``path`` (gzip-compressed when it ends in ``.gz``)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as src:
            return json.load(src)
    except OSError as exc:
        raise TraceFileError(path, f"cannot read: {exc.strerror or exc}") from exc
    except (EOFError, zlib.error) as exc:
        raise TraceFileError(path, f"cannot read: corrupt or truncated gzip data "
                                   f"({exc})") from exc
    except UnicodeDecodeError as exc:
        raise TraceFileError(path, f"not a trace: not UTF-8 text ({exc.reason} "
                                   f"at byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise TraceFileError(path, f"not valid JSON: {exc}") from exc
    except (ValueError, RecursionError) as exc:
        raise TraceFileError(path, f"not valid JSON: {type(exc).__name__}: "
                                   f"{_first_line(exc)}") from exc


def checked(data, path: str) -> tuple[list, dict]:
    """``(events, minerva metadata)`` of the JSON value ``data`` read from ``path``,
    once they are known to hold what the reader uses; TraceFileError if not."""
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise TraceFileError(path, "not a Chrome trace: " + _top_level_problem(data))
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            raise TraceFileError(path, "not a Chrome trace: 'traceEvents' must be a list "
                                       f"of event objects; traceEvents[{index}] is "
                                       f"{_type(event)}")
        problem = _event_problem(event)
        if problem is not None:
            raise TraceFileError(path, f"bad event traceEvents[{index}] {problem}")
    meta, problem = _metadata(data)
    if problem is not None:
        raise TraceFileError(path, f"bad trace metadata: {problem}")
    return events, meta


def _top_level_problem(data) -> str:
    if not isinstance(data, dict):
        return ("expected a JSON object with a 'traceEvents' list, got "
                f"{_type(data)}")
    if "traceEvents" not in data:
        return "no 'traceEvents' list"
    return ("'traceEvents' must be a list of event objects, got "
            f"{_type(data['traceEvents'])}")


# ---- field checks: each returns what is wrong with a value, or None -------------------

def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(value):
    return None if _is_int(value) else "must be an integer"


def _int_or_null(value):
    return None if value is None or _is_int(value) else "must be an integer or null"


def _str(value):
    return None if isinstance(value, str) else "must be a string"


def _str_or_null(value):
    return None if value is None or isinstance(value, str) else "must be a string or null"


def time_problem(value) -> str | None:
    """What keeps ``value`` from being a time of a trace (us), or None."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and abs(value) <= MAX_US
    return None if ok else f"must be a finite number of microseconds (at most {MAX_US:g})"


def _time_or_null(value):
    return None if value is None else time_problem(value)


def _amount(value):
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and value >= 0
    return None if ok else "must be a non-negative finite number"


def _duration(value):
    return _amount(value) or time_problem(value)


def _deps(value):
    ok = isinstance(value, list) and all(d is None or _is_int(d) for d in value)
    return None if ok else "must be a list of node ids (integers or null)"


_TIME = time_problem
_OP_ARGS = [("args.node_id", _int, True), ("args.op", _str, True),
            ("args.device", _int, True), ("args.deps", _deps, False),
            ("args.created_at", _str, False), ("args.error", _str_or_null, False)]
_SLICE = [("pid", _int, True), ("tid", _int, True), ("ts", _TIME, True),
          ("dur", _duration, True)]
_FIELDS = {  # event kind -> (dotted field, check, required)
    "thread name": [("pid", _int, True), ("tid", _int, True), ("args.name", _str, True)],
    "process name": [("pid", _int, True), ("args.name", _str, True)],
    "op slice": [*_SLICE, *_OP_ARGS, ("args.bytes", _amount, False),
                 ("args.from_device", _int_or_null, False)],
    "poisoned op": [("ts", _TIME, True), *_OP_ARGS,
                    ("args.poisoned_by", _int_or_null, False)],
    "dispatcher slice": [*_SLICE, ("name", _str, True)],
    "memory counter": [("pid", _int, True), ("ts", _TIME, True),
                       ("args.bytes", _amount, True)],
    "ops-in-flight counter": [("ts", _TIME, True), ("args.ops", _amount, True)],
}


def _kind(event: dict) -> str | None:
    """The kind of ``event`` the reader uses (as ``model`` selects them), or None."""
    ph, cat, name = event.get("ph"), event.get("cat"), event.get("name")
    if cat == "poisoned":
        return "poisoned op"
    if ph == "M" and name in ("thread_name", "process_name"):
        return name.replace("_", " ")
    if ph == "X" and cat in ("op", "copy"):
        return "op slice"
    if ph == "X" and cat == "dispatch":
        return "dispatcher slice"
    if ph == "C" and name in ("memory in use", "ops in flight"):
        return "memory counter" if name == "memory in use" else "ops-in-flight counter"
    return None


def _event_problem(event: dict) -> str | None:
    """What is wrong with one event object (``(kind): problem``), or None."""
    kind = _kind(event)
    for field, check, required in _FIELDS.get(kind, ()):
        problem = _field_problem(event, field, check, required)
        if problem is not None:
            return f"({kind}): {problem}"
    return None


def _field_problem(event: dict, field: str, check, required: bool) -> str | None:
    """What is wrong with ``event``'s dotted ``field``, or None."""
    value, parts = event, field.split(".")
    for depth, part in enumerate(parts):
        if not isinstance(value, dict):
            return f"{'.'.join(parts[:depth])!r} must be an object, got {_type(value)}"
        if part not in value:
            return f"{field!r} is missing" if required else None
        value = value[part]
    problem = check(value)
    return None if problem is None else f"{field!r} {problem}, got {_type(value)}"


def _metadata(data) -> tuple[dict, str | None]:
    """``(otherData.minerva or {}, what is wrong with it or None)``."""
    if not isinstance(data, dict):
        return {}, None
    other = data.get("otherData", {})
    if not isinstance(other, dict):
        return {}, f"'otherData' must be an object, got {_type(other)}"
    meta = other.get("minerva", {})
    if not isinstance(meta, dict):
        return {}, f"'otherData.minerva' must be an object, got {_type(meta)}"
    if _time_or_null(meta.get("recorded_us")) is not None:
        return {}, ("'otherData.minerva.recorded_us' must be a number of microseconds, "
                    f"got {_type(meta['recorded_us'])}")
    return meta, None


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
               int: "a number", float: "a number"}


def _type(value) -> str:
    """A short description of a JSON value: its type and, for scalars, its clipped text."""
    if value is None:
        return "null"
    kind = _JSON_TYPES.get(type(value), type(value).__name__)
    if isinstance(value, (dict, list)):
        return kind
    text = json.dumps(value)
    return f"{kind} {text if len(text) <= 40 else text[:37] + '...'}"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return lines[0] if lines else ""
