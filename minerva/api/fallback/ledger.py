"""What a host fallback call does besides computing: the mode (``MINERVA_FALLBACK``:
``allow``; ``warn``, one RuntimeWarning per name naming the user's line; ``raise``, a
FallbackError), the count per name (``fallback_stats``) and the trace record (a slice on
the trace's ``host`` track, through the hook bus's ``host_op`` event).

Counts and warnings belong to one runtime: they start again when a new one starts
(``mv.init``, or the first use after ``mv.shutdown``).
"""
from __future__ import annotations

import threading
import time
import warnings
import weakref

from minerva.builder import current_device
from minerva.common.callsite import format_callsite, user_callsite
from minerva.common.errors import FallbackError
from minerva.current import get_system

_now = time.perf_counter_ns


class Ledger:
    """The fallback calls of one runtime; ``lock`` guards ``counts`` (name -> calls) and
    ``warned`` (the names a warning was given for)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts: dict = {}
        self.warned: set = set()


_LEDGERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LEDGERS_LOCK = threading.Lock()


def ledger_of(system) -> Ledger:
    """The Ledger of runtime ``system`` (made on first use)."""
    with _LEDGERS_LOCK:
        ledger = _LEDGERS.get(system)
        if ledger is None:
            ledger = _LEDGERS[system] = Ledger()
        return ledger


def admit(name: str) -> tuple:
    """Before the host runs ``name``: FallbackError under ``MINERVA_FALLBACK=raise``, a
    RuntimeWarning (once per name) under ``warn``. Returns ``(system, user's line,
    start time)`` for ``record``."""
    system = get_system()
    site = user_callsite()
    mode = system.config.fallback
    if mode == "raise":
        raise FallbackError(f"{name} has no native version in minerva, and "
                            "MINERVA_FALLBACK=raise forbids running it on the host "
                            f"(called at {format_callsite(site)}; MINERVA_FALLBACK=allow "
                            "or warn runs NumPy's code on host copies of the inputs)", name)
    if mode == "warn":
        _warn_once(ledger_of(system), name, site)
    return system, site, _now()


def _warn_once(ledger: Ledger, name: str, site: tuple) -> None:
    with ledger.lock:
        if name in ledger.warned:
            return
        ledger.warned.add(name)
    message = (f"minerva: {name} has no native version; it runs on the host (NumPy's "
               f"code on host copies of the inputs), called at {format_callsite(site)}")
    warnings.warn_explicit(message, RuntimeWarning, site[0], site[1])


def record(name: str, admitted: tuple) -> None:
    """After the host ran ``name`` (``admitted`` is what ``admit`` returned): count it
    and, while a trace records, announce the call as a host op."""
    system, site, t0_ns = admitted
    ledger = ledger_of(system)
    with ledger.lock:
        ledger.counts[name] = ledger.counts.get(name, 0) + 1
    hooks = system.hooks
    if hooks.active:
        hooks.host_op(name, current_device(), site, t0_ns, _now())


def fallback_stats() -> dict:
    """How many times each NumPy name ran through the host fallback in this runtime,
    ``{"numpy.fft.fft": 3, ...}`` (names as NumPy spells them)."""
    ledger = ledger_of(get_system())
    with ledger.lock:
        return dict(sorted(ledger.counts.items()))


def reset_fallback_stats() -> None:
    """Start the counts of ``fallback_stats`` again from zero (warnings already given are
    not given again)."""
    ledger = ledger_of(get_system())
    with ledger.lock:
        ledger.counts.clear()
