"""What every log record carries and how it is written (LOG_FORMAT, docs/metrics.md).

The request id of the request being served (config.request_id sets it) is put on every
record by RequestIdFilter, attached to the root handler in settings.LOGGING, so a record
from any logger (Django's, django-q2's, the apps') names the request it belongs to. Stdlib
only: settings.LOGGING names these classes, and logging is configured before the apps load.
"""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

NO_REQUEST = "-"

# Set for the duration of a request by config.request_id.RequestIdMiddleware.
request_id_var: ContextVar[str] = ContextVar("engram_request_id", default=NO_REQUEST)

# The attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "request_id",
    "color_message",  # uvicorn's: the message again, with terminal colour codes
}


class RequestIdFilter(logging.Filter):
    """Puts the current request's id (or "-" outside a request) on every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = request_id_var.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: timestamp (UTC), level, logger, message, request_id, the
    record's `extra=` fields, and the traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "timestamp": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or request_id_var.get(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        # default=str: an extra that JSON cannot hold (Django's `request`) is written as text.
        return json.dumps(entry, default=str, ensure_ascii=False)


def logging_config(log_format: str, level: str) -> dict[str, Any]:
    """settings.LOGGING: every record through one console handler on the root, in
    `log_format` ("plain" or "json"), each carrying its request id."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "config.logs.RequestIdFilter"}},
        "formatters": {
            "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
            "json": {"()": "config.logs.JsonFormatter"},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": log_format,
                "filters": ["request_id"],
            }
        },
        "root": {"handlers": ["console"], "level": level.upper()},
        "loggers": {
            # Django's defaults (django.utils.log.DEFAULT_LOGGING) give "django" a plain
            # console handler of its own under DEBUG (and mail_admins, inert without
            # ADMINS), and "django.server" one always: their records were written twice, or
            # only in plain text. Without handlers of their own they reach the root's once,
            # in LOG_FORMAT.
            "django": {"handlers": [], "level": "INFO", "propagate": True},
            "django.server": {"handlers": [], "level": "INFO", "propagate": True},
            # uvicorn (make run's server, and MCP's access lines) configures its loggers
            # with handlers of its own, in its own text format, before it loads the app;
            # loading the app applies this, so its records too reach the root's handler once.
            "uvicorn": {"handlers": [], "level": "INFO", "propagate": True},
            "uvicorn.error": {"handlers": [], "level": "INFO", "propagate": True},
            "uvicorn.access": {"handlers": [], "level": "INFO", "propagate": True},
            "django.db.backends": {"level": "WARNING"},
            "axes.apps": {"level": "WARNING"},  # its start-up banner, in every command
        },
    }


def gunicorn_logging(log_format: str, level: str) -> dict[str, Any]:
    """gunicorn's logconfig_dict (gunicorn.conf.py): under "json", the master's own lines
    (Starting gunicorn, Listening at, Booting worker, Handling signal) go through the same
    root handler and formatter as the app's; {} under "plain", which keeps gunicorn's own
    format. Its access log stays off (engram.request is the access log): gunicorn turns it
    on whenever a logging config is given, so it is held at WARNING."""
    if log_format != "json":
        return {}
    config = logging_config(log_format, level)
    config["loggers"] |= {
        "gunicorn.error": {"handlers": [], "level": "INFO", "propagate": True},
        "gunicorn.access": {"handlers": [], "level": "WARNING", "propagate": True},
    }
    return config
