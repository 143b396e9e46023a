"""structlog configuration from ``MINERVA_LOG`` (a level name, or ``json`` for JSON lines)."""
from __future__ import annotations

import logging
import sys

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR, "critical": logging.CRITICAL}


def configure_logging(setting: str) -> None:
    """Route minerva's structlog events to stderr at the level ``setting`` names.

    ``json`` prints every event at level info and above as one JSON object per line.
    Unknown names fall back to ``warning``.
    """
    name = (setting or "warning").strip().lower()
    as_json = name == "json"
    level = logging.INFO if as_json else _LEVELS.get(name, logging.WARNING)
    renderer = (structlog.processors.JSONRenderer() if as_json
                else structlog.dev.ConsoleRenderer(colors=False))
    structlog.configure(
        processors=[structlog.processors.add_log_level,
                    structlog.processors.TimeStamper(fmt="iso"), renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str):
    """A structlog logger named ``name`` (``minerva.<layer>``)."""
    return structlog.get_logger(name)
