"""minerva's logging: loggers of our own, so a user's logging setup and ours never clobber
each other. ``MINERVA_LOG`` sets the level (``debug``, ``info``, ``warning``, ``error``,
``critical``) or ``json`` for JSON lines at level info; events go to stderr.

structlog renders the events where it is installed; without it the standard ``logging``
module does, with the same event names, fields, levels and line formats (a console line
``<time> [<level>] <event> [<logger>] key=value ...`` or one JSON object per line), so the
library never fails to import over its logger."""
from __future__ import annotations

import datetime
import json
import logging
import os
import sys

try:
    import structlog
except ImportError:  # documented: the standard logging module stands in
    structlog = None

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR, "critical": logging.CRITICAL}
_current: dict = {}


def configure_logging(setting: str | None) -> None:
    """Route minerva's events to stderr at the level ``setting`` names (unknown names:
    ``warning``); ``json`` renders one JSON object per line at level info."""
    name = (setting or "warning").strip().lower()
    as_json = name == "json"
    level = logging.INFO if as_json else _LEVELS.get(name, logging.WARNING)
    make = _structlog_logger if structlog is not None else _stdlib_logger
    _current["logger"] = make(level, as_json)


def logging_backend() -> str:
    """``"structlog"`` or ``"logging"``: which one renders minerva's events here."""
    return "structlog" if structlog is not None else "logging"


def _structlog_logger(level: int, as_json: bool):
    processors = [structlog.processors.add_log_level,
                  structlog.processors.TimeStamper(fmt="iso")]
    if as_json:  # a failure's traceback as the field "exception"
        processors += [structlog.processors.format_exc_info,
                       structlog.processors.JSONRenderer()]
    else:
        processors.append(structlog.dev.ConsoleRenderer(colors=False))
    return structlog.wrap_logger(
        structlog.PrintLogger(file=sys.stderr), processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(level))


def _stdlib_logger(level: int, as_json: bool) -> "_StdlibEvents":
    logger = logging.Logger("minerva", level)  # not in logging's registry: ours alone
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter() if as_json else _ConsoleFormatter())
    logger.addHandler(handler)
    return _StdlibEvents(logger)


class _StdlibEvents:
    """structlog's filtering bound logger's methods over a ``logging.Logger``: each call
    logs ``event`` with its keyword fields."""

    __slots__ = ("_logger",)

    def __init__(self, logger: logging.Logger):
        self._logger = logger

    def _log(self, level: int, event: str, fields: dict, exc_info=None) -> None:
        if self._logger.isEnabledFor(level):
            self._logger.log(level, "%s", event, exc_info=exc_info,
                             extra={"minerva_fields": fields})

    def debug(self, event, **fields):
        self._log(logging.DEBUG, event, fields)

    def info(self, event, **fields):
        self._log(logging.INFO, event, fields)

    def warning(self, event, **fields):
        self._log(logging.WARNING, event, fields)

    warn = warning

    def error(self, event, **fields):
        self._log(logging.ERROR, event, fields, fields.pop("exc_info", None))

    def exception(self, event, **fields):
        fields.pop("exc_info", None)
        self._log(logging.ERROR, event, fields, exc_info=True)

    def critical(self, event, **fields):
        self._log(logging.CRITICAL, event, fields)


def _timestamp(record: logging.LogRecord) -> str:
    when = datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _console_value(value) -> str:
    text = str(value) if isinstance(value, str) else repr(value)
    return repr(value) if isinstance(value, str) and (not text or " " in text) else text


class _ConsoleFormatter(logging.Formatter):
    """``<time> [<level>] <event> [<logger>] key=value ...`` as structlog's console
    renderer writes it, the traceback below when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        fields = dict(getattr(record, "minerva_fields", {}))
        logger = fields.pop("logger", None)
        parts = [_timestamp(record), f"[{record.levelname.lower():<9}]",
                 f"{record.getMessage():<30}"]
        if logger is not None:
            parts.append(f"[{logger}]")
        parts += [f"{key}={_console_value(fields[key])}" for key in sorted(fields)]
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class _JsonFormatter(logging.Formatter):
    """One JSON object per event: its fields, ``event``, ``level``, ``timestamp`` (and
    ``exception``, the traceback, when there is one)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = dict(getattr(record, "minerva_fields", {}))
        entry.update(event=record.getMessage(), level=record.levelname.lower(),
                     timestamp=_timestamp(record))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=repr)


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
