"""Each request's id, its latency metric and its access log line (docs/metrics.md).

RequestIdMiddleware, first in MIDDLEWARE, so every answer passes through it (pages, the
API, redirects, errors raised anywhere below it):

- the id is the client's X-Request-ID when it is a plain token (at most 64 letters,
  digits, `.`, `_`, `-`: it ends up in logs, so nothing that could forge a line), else a
  new uuid4 hex; it is on request.request_id, in config.logs.request_id_var while the
  request runs (every log record gets it) and in the response's X-Request-ID header;
- the time to the response is observed in engram_http_request_duration_seconds, labelled
  by the route's name (config.metrics);
- one line on the "engram.request" logger: method, path, route, status, duration, user
  id. Never a query string, a header or a body, so never a token;
- a 4xx or 5xx answer's "django.request" record ("Not Found: /x") written here, while
  the id is set: Django's handler would write it after the whole chain returned, once
  this middleware had reset the id.
"""

from __future__ import annotations

import logging
import re
import time
import uuid

from django.http import HttpRequest, HttpResponse
from django.utils.encoding import escape_uri_path
from django.utils.functional import SimpleLazyObject, empty
from django.utils.log import log_response

from config.logs import request_id_var
from config.metrics import observe_request, route_of

HEADER = "X-Request-ID"
_VALID = re.compile(r"[A-Za-z0-9._-]{1,64}")

access_log = logging.getLogger("engram.request")


def request_id_from(incoming: str | None) -> str:
    """The client's id when it is acceptable, else a new one."""
    if incoming and _VALID.fullmatch(incoming):
        return incoming
    return uuid.uuid4().hex


def _user_id(request: HttpRequest) -> int | None:
    """The authenticated user's id, if authentication ran: never a query of its own."""
    user = request.__dict__.get("user")
    if isinstance(user, SimpleLazyObject):  # the session's user, looked up only if asked
        user = None if user._wrapped is empty else user._wrapped
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return user.pk


class RequestIdMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        request_id = request_id_from(request.META.get("HTTP_X_REQUEST_ID"))
        request.request_id = request_id
        # Reset afterwards: a server's thread serves request after request.
        token = request_id_var.set(request_id)
        try:
            response = self.get_response(request)
            if response.status_code >= 400:
                # As BaseHandler.get_response words it; log_response marks the response
                # logged, so the handler (and an exception's record, already written
                # below) does not write it again.
                log_response(
                    "%s: %s",
                    response.reason_phrase,
                    request.path,
                    response=response,
                    request=request,
                )
            response[HEADER] = request_id
            seconds = time.perf_counter() - started
            route = route_of(request)
            observe_request(route, request.method, response.status_code, seconds)
            duration_ms = round(seconds * 1000, 1)
            user_id = _user_id(request)
            path = escape_uri_path(request.path)  # a decoded %0A must not start a new line
            access_log.info(
                "%s %s %s %.1fms route=%s user=%s request_id=%s",
                request.method,
                path,
                response.status_code,
                duration_ms,
                route,
                user_id if user_id is not None else "-",
                request_id,
                extra={
                    "method": request.method,
                    "path": path,
                    "route": route,
                    "status": response.status_code,
                    "duration_ms": duration_ms,
                    "user_id": user_id,
                },
            )
            return response
        finally:
            request_id_var.reset(token)
