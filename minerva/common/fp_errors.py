"""NumPy's floating-point error handling (``numpy.errstate``, ``seterr``) for kernels that
run after the user's line, on another thread.

The error state of the user's thread is captured when an op is issued (``capture``: in
NumPy 2 one context-variable read) and the op's kernel runs under it (``run_under``),
whichever thread runs it and whatever its size. Modes that report (``warn``,
``call``, ``print``, ``log``) are turned into ``call`` of a recorder while the kernel runs
(``run_under``), which then reports what was met as NumPy would, but naming the user's line: a
``RuntimeWarning`` ("divide by zero encountered in divide") issued at the line that built
the op, the user's ``seterrcall`` function called, the message printed or logged. ``raise``
stays ``raise``: the kernel fails with ``FloatingPointError``, which the engine stores and
raises as an ``OpError`` at the next wait. Each kind of error is reported once per op, as
NumPy reports it once per call, also when the op ran as row ranges on several threads
(``active`` and ``run_range`` carry the state to the helper threads).
"""
from __future__ import annotations

import os
import sys
import threading
import warnings

import numpy as np

try:  # NumPy 2: the error state is a context variable holding an opaque object
    from numpy._core._ufunc_config import _extobj_contextvar as _EXTOBJ
except ImportError:  # pragma: no cover - another NumPy: decoded through np.geterr
    _EXTOBJ = None

_KINDS = {"divide by zero": "divide", "overflow": "over", "underflow": "under",
          "invalid value": "invalid"}
_REPORTING = ("warn", "call", "print", "log")


class _Thread(threading.local):
    """Per thread: the errors the running kernel met, and the state it runs under."""

    records: list | None = None
    state: "ErrState | None" = None


_THREAD = _Thread()


def _record(errtype: str, flag: int) -> None:
    """The ``errcall`` of every kernel's error state: note the error for ``leave``."""
    records = _THREAD.records
    if records is None:
        _THREAD.records = [(errtype, flag)]
    else:
        records.append((errtype, flag))


class ErrState:
    """One error state of the user's, decoded: its mode per kind of error, its
    ``errcall``, and ``kernel``: the state a kernel runs under (reporting modes turned
    into ``call`` of the recorder)."""

    __slots__ = ("modes", "call", "kernel", "direct", "quiet")

    def __init__(self, modes: dict, call):
        self.modes = modes
        self.call = call
        self.quiet = not any(mode in _REPORTING for mode in modes.values())
        kernel_modes = {kind: "call" if mode in _REPORTING else mode
                        for kind, mode in modes.items()}
        if _EXTOBJ is None:
            self.kernel = self.direct = kernel_modes
            return
        with np.errstate(call=_record, **kernel_modes):
            self.kernel = _EXTOBJ.get()
        with np.errstate(call=_record_direct, **kernel_modes):
            self.direct = _EXTOBJ.get()


_DIRECT: list = []
"""What the kernel of a direct op met (``caller_state``; callers are serialized by the
engine's lock, so one list serves every thread)."""


def _record_direct(errtype: str, flag: int) -> None:
    """The ``errcall`` of a direct op's kernel (``ErrState.direct``)."""
    _DIRECT.append((errtype, flag))


_DECODED: dict = {}
"""Captured error state -> its ErrState (the captured objects are kept alive with it, so
their identities stay unique)."""
_MAX_DECODED = 256


def capture():
    """The floating-point error state of the calling thread, for a kernel run later."""
    if _EXTOBJ is not None:
        return _EXTOBJ.get()
    return (tuple(sorted(np.geterr().items())), np.geterrcall())


def _decode(captured) -> ErrState:
    state = _DECODED.get(captured)
    if state is None:
        if len(_DECODED) >= _MAX_DECODED:
            _DECODED.clear()
        if _EXTOBJ is None:
            state = ErrState(dict(captured[0]), captured[1])
        else:
            token = _EXTOBJ.set(captured)
            try:
                state = ErrState(np.geterr(), np.geterrcall())
            finally:
                _EXTOBJ.reset(token)
        _DECODED[captured] = (state, captured)
        return state
    return state[0]


_NO_KWARGS: dict = {}
CURRENT = object()
"""For ``run_under``: the calling thread's own error state (a direct op, run at once)."""


def run_under(captured, function, args, name: str, created_at, kwargs=_NO_KWARGS) -> None:
    """``function(*args, **kwargs)`` under the error state ``captured`` (from ``capture``,
    or ``CURRENT``), then report the errors it met (op ``name``, built at ``created_at``);
    warnings turned into errors by the warnings filters are raised here. An exception of
    ``function`` propagates unreported."""
    if captured is CURRENT:
        captured = _EXTOBJ.get() if _EXTOBJ is not None else capture()
    known = _DECODED.get(captured)
    state = _decode(captured) if known is None else known[0]
    thread = _THREAD
    outer = thread.state, thread.records
    thread.state, thread.records = state, None
    applied = _EXTOBJ.set(state.kernel) if _EXTOBJ is not None else _apply(state.kernel)
    try:
        function(*args, **kwargs)
    finally:
        if _EXTOBJ is not None:
            _EXTOBJ.reset(applied)
        else:
            _restore(applied)
        records = thread.records
        thread.state, thread.records = outer
    if records:
        _report(state, records, name, created_at)


def caller_state() -> ErrState:
    """The calling thread's own error state, decoded, for the kernel of a direct op (run
    whole on this thread; callers are serialized by the engine's lock): run the kernel as
    it is when the state is ``quiet``, else between ``token = DIRECT.set(state.direct)``
    and ``DIRECT.reset(token)``, which collect what it meets into ``DIRECT_RECORDS``
    (``take_direct_records``)."""
    captured = _EXTOBJ.get() if _EXTOBJ is not None else capture()
    known = _DECODED.get(captured)
    return _decode(captured) if known is None else known[0]


class _LegacyDirect:  # pragma: no cover - another NumPy: the state set through np.seterr
    """``DIRECT`` where NumPy has no error-state context variable."""

    @staticmethod
    def set(modes):
        return np.seterr(**modes), np.seterrcall(_record_direct)

    @staticmethod
    def reset(token) -> None:
        np.seterr(**token[0])
        np.seterrcall(token[1])


DIRECT = _EXTOBJ if _EXTOBJ is not None else _LegacyDirect
"""Sets (``set(state.direct)`` → token) and resets (``reset(token)``) the error state of
a direct op's kernel (see ``caller_state``)."""
DIRECT_RECORDS = _DIRECT


EXTOBJ = _EXTOBJ
"""NumPy's error-state context variable (None on a NumPy without one), for the C lean
path (``minerva.api.core.lean``), which sets it around a kernel as ``DIRECT`` does."""
DECODED = _DECODED
"""Captured error states and their ``ErrState`` (``caller_state``'s cache), which the C
lean path reads; a state not in it yet is decoded by the Python path."""


def take_direct_records() -> list:
    """What the last direct op's kernel met (for ``report``); the list is emptied."""
    records = _DIRECT[:]
    _DIRECT.clear()
    return records


def report(state: "ErrState", records: list, name: str, created_at) -> None:
    """Report what a direct op's kernel met (``take_direct_records``; op ``name``, built
    at ``created_at``)."""
    _report(state, records, name, created_at)


def active() -> "ErrState | None":
    """The state the kernel running on this thread runs under (for its helper threads)."""
    return _THREAD.state


def run_range(state: "ErrState | None", function, *args) -> list | None:
    """``function(*args)`` on a helper thread under ``state``; the errors it met, for the
    thread that runs the op to report (``add``)."""
    if state is None:
        function(*args)
        return None
    applied = _apply(state.kernel)
    _THREAD.records = None
    try:
        function(*args)
    finally:
        _restore(applied)
    records, _THREAD.records = _THREAD.records, None
    return records


def add(records: list | None) -> None:
    """Count a helper thread's errors as this thread's kernel's own."""
    if records:
        for errtype, flag in records:
            _record(errtype, flag)


def _apply(kernel):
    if _EXTOBJ is not None:
        return _EXTOBJ.set(kernel)
    return np.seterr(**kernel), np.seterrcall(_record)


def _restore(applied) -> None:
    if _EXTOBJ is not None:
        _EXTOBJ.reset(applied)
    else:
        np.seterr(**applied[0])
        np.seterrcall(applied[1])


def _report(state: ErrState, records: list, name: str, created_at) -> None:
    """Each kind of error met, once, as the user's mode for it says."""
    seen = set()
    for errtype, flag in records:
        if errtype in seen:
            continue
        seen.add(errtype)
        mode = state.modes.get(_KINDS.get(errtype, "invalid"), "warn")
        message = f"{errtype} encountered in {name.removesuffix('_scalar')}"
        if mode == "warn":
            _warn(message, created_at)
        elif mode == "call":
            state.call(errtype, flag)
        elif mode == "log":
            state.call.write(f"Warning: {message}\n")
        elif mode == "print":
            sys.stderr.write(f"Warning: {message}\n")


_REGISTRIES: dict = {}
"""File name -> the warnings registry of the user's lines in it (a warning shown once per
line under the ``default`` action, as for a warning issued from that line)."""


def _warn(message: str, created_at) -> None:
    filename, lineno = created_at if created_at else ("<minerva>", 0)
    module = os.path.splitext(os.path.basename(filename))[0]
    registry = _REGISTRIES.setdefault(filename, {})
    warnings.warn_explicit(message, RuntimeWarning, filename, lineno, module, registry)
