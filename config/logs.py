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

NO_REQUEST = "-"

# Set for the duration of a request by config.request_id.RequestIdMiddleware.
request_id_var: ContextVar[str] = ContextVar("engram_request_id", default=NO_REQUEST)

# The attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "request_id",
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
