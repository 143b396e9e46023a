"""minerva's logging: structlog loggers of our own, so a user's structlog setup and ours
never clobber each other. ``MINERVA_LOG`` sets the level (``debug``, ``info``, ``warning``,
``error``) or ``json`` for JSON lines at level info; events go to stderr."""
from __future__ import annotations

import logging
import os
import sys

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR, "critical": logging.CRITICAL}
_current: dict = {}


def configure_logging(setting: str | None) -> None:
    """Route minerva's events to stderr at the level ``setting`` names (unknown names:
    ``warning``); ``json`` renders one JSON object per line at level info."""
    name = (setting or "warning").strip().lower()
    as_json = name == "json"
    level = logging.INFO if as_json else _LEVELS.get(name, logging.WARNING)
    renderer = (structlog.processors.JSONRenderer() if as_json
                else structlog.dev.ConsoleRenderer(colors=False))
    _current["logger"] = structlog.wrap_logger(
        structlog.PrintLogger(file=sys.stderr),
        processors=[structlog.processors.add_log_level,
                    structlog.processors.TimeStamper(fmt="iso"), renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level))


def _bound():
    if "logger" not in _current:
        configure_logging(os.environ.get("MINERVA_LOG"))
    return _current["logger"]


class MinervaLogger:
    """A named logger whose events carry ``logger=<name>``; it follows the latest
    ``configure_logging``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __getattr__(self, method: str):
        bound_method = getattr(_bound(), method)

        def log(event, **fields):
            return bound_method(event, logger=self.name, **fields)
        return log


def get_logger(name: str) -> MinervaLogger:
    """The logger named ``name`` (``minerva.<layer>``)."""
    return MinervaLogger(name)
