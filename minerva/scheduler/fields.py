"""The engine's fields the C lean path reads by offset (``minerva._lean``): a base of
``Engine`` holding its slots alone, so the accelerator's configuration does not import the
scheduler above it."""
from __future__ import annotations


class EngineFields:
    """Slots of every engine: its DAG and device table, the bound on ops in flight and
    the count of them, whether it is closed, the queue of releases to apply and whether a
    RELEASE task is posted (``Engine`` sets them)."""

    __slots__ = ("dag", "devices", "max_pending", "n_inflight", "closed", "_releases",
                 "_release_posted")
