"""Exceptions: one base class, one per kind of HTTP answer, and the transport's own.

Every 4xx and 5xx of the API is JSON of one shape (docs/api.md, "Errors"):

    {"error": {"status": 400, "code": "invalid", "message": "...", "fields": {...},
               "limit": "API_RATE_LIMIT", "retry_after": 12}}

`ApiError` carries each of those keys as an attribute, so a caller handles a refused
field or a limit without parsing anything; the subclass says the status, so `except
NotFound` reads like the rule it handles.
"""

from __future__ import annotations

import json
from typing import Any


class EngramError(Exception):
    """Anything this client raises."""


class ApiError(EngramError):
    """The server answered with an error status (4xx, 5xx)."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        code: str,
        fields: dict[str, Any] | None = None,
        limit: str | None = None,
        retry_after: float | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.fields: dict[str, Any] = fields or {}
        self.limit = limit
        self.retry_after = retry_after
        self.body = body
        self.headers: dict[str, str] = headers or {}

    def __str__(self) -> str:
        text = f"{self.status} {self.code}: {self.message}"
        if self.fields:
            text += f" {json.dumps(self.fields, ensure_ascii=False)}"
        return text


class InvalidInput(ApiError):
    """400: `fields` names each field at fault (nested for bulk items and import lines)."""


class Unauthorized(ApiError):
    """401: missing, invalid, revoked or expired token."""


class Forbidden(ApiError):
    """403: a read-only token writing, or a session-only operation."""


class NotFound(ApiError):
    """404: no such object within the token's namespaces and ceiling (another user's id
    answers exactly like a missing one)."""


class Conflict(ApiError):
    """409: a stale card version, nothing to undo, a unique constraint raced."""


class TooLarge(ApiError):
    """413: a body over API_MAX_BODY_BYTES (API_IMPORT_MAX_BYTES for imports); `limit`
    names the setting."""


class RateLimited(ApiError):
    """429 after the retries: over API_RATE_LIMIT; `retry_after` says for how long."""


class Unavailable(ApiError):
    """503 after the retries: the database is down, or a statement ran past
    DATABASE_STATEMENT_TIMEOUT_MS (`code` "timeout")."""


class ServerError(ApiError):
    """Another 5xx (or an unexpected status)."""


class TransportError(EngramError):
    """No HTTP answer: the connection failed or broke (after the retries)."""


class Timeout(TransportError):
    """No answer within the client's timeout; never retried, since the server may still be
    doing the work."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidInput,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
    429: RateLimited,
    503: Unavailable,
}


def _retry_after(headers: dict[str, str], error: dict[str, Any]) -> float | None:
    value = error.get("retry_after")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    header = headers.get("retry-after")
    try:
        return float(header) if header is not None else None
    except ValueError:
        return None  # an HTTP date: the retry policy reads it, the exception need not


def error_from_response(status: int, headers: dict[str, str], content: bytes) -> ApiError:
    """The exception for an error answer, read from the API's error shape; a body of
    another shape (a proxy's HTML page) still gives the status and a message."""
    lowered = {key.lower(): value for key, value in headers.items()}
    body: Any = None
    try:
        body = json.loads(content) if content else None
    except ValueError:
        body = content.decode("utf-8", "replace")
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        error = {}
    message = error.get("message")
    if not isinstance(message, str):
        snippet = body.strip()[:200] if isinstance(body, str) else ""
        message = snippet or f"HTTP {status}"
    fields = error.get("fields")
    limit = error.get("limit")
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    return cls(
        message,
        status=status,
        code=str(error.get("code") or "http_error"),
        fields=fields if isinstance(fields, dict) else None,
        limit=limit if isinstance(limit, str) else None,
        retry_after=_retry_after(lowered, error),
        body=body,
        headers=lowered,
    )
