"""API plumbing shared by every app: one JSON error shape, body limits, pagination.

Every 4xx and 5xx under /api/ answers

    {"error": {"status": 400, "code": "invalid", "message": "...", "fields": {"content": [...]}}}

never an HTML page.
"""

from __future__ import annotations

import binascii
import logging
import sys
import tempfile
from base64 import b64decode
from typing import Any
from urllib.parse import parse_qs

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig, ValidationError
from django.db import DatabaseError, DataError, IntegrityError, InterfaceError, OperationalError
from django.db.backends.signals import connection_created
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import bad_request, page_not_found, permission_denied, server_error
from rest_framework import exceptions, negotiation, pagination, parsers, renderers
from rest_framework.response import Response

from config import jsonparse
from config.dberrors import integrity_kind, is_statement_timeout

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"


class ApiError(Exception):
    """A domain error with its HTTP status, for services' callers to raise."""

    status = 400
    code = "invalid"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        status: int | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code


def error_body(
    status: int, code: str, message: str, fields: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    error: dict[str, Any] = {"status": status, "code": code, "message": message}
    if fields:
        error["fields"] = fields
    error.update(extra)
    return {"error": error}


def _as_lists(detail: Any) -> Any:
    if isinstance(detail, dict):
        return {str(key): _as_lists(value) for key, value in detail.items()}
    if isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            return [str(item) for item in detail]
        return [_as_lists(item) for item in detail]
    return [str(detail)]


def _domain_error(exc: Exception) -> tuple[int, str, str, str | None] | None:
    """Map known domain exceptions of the apps to (status, code, message, field)."""
    if isinstance(exc, ApiError):
        return exc.status, exc.code, exc.message, exc.field
    status = getattr(exc, "api_status", None)
    if status is not None:
        code = getattr(exc, "api_code", None) or getattr(exc, "code", None) or "invalid"
        return status, code, str(exc), getattr(exc, "field", None)
    return None


def database_error(exc: BaseException) -> tuple[int, dict[str, Any]] | None:
    """The answer to a database error that reached the API: never a 500.

    A unique violation the services did not turn into a field error (a race they do not
    guard yet) is a conflict; a check, not-null or data error is invalid input; an
    unreachable database, a lock timeout or a cancelled statement is temporary (503).
    """
    if isinstance(exc, IntegrityError):
        kind = integrity_kind(exc)
        logger.warning("API integrity error (%s) answered without a 500", kind, exc_info=exc)
        if kind in ("check", "not_null"):
            message = "A value is out of range or missing."
            return 400, error_body(400, "invalid", message)
        if kind == "foreign_key":
            message = "Something this refers to does not exist (any more)."
            return 409, error_body(409, "conflict", message)
        message = "This conflicts with an existing object (perhaps created at the same time)."
        return 409, error_body(409, "conflict", message)
    if isinstance(exc, DataError):
        logger.warning("API data error answered 400", exc_info=exc)
        return 400, error_body(400, "invalid", "A value does not fit its field.")
    if isinstance(exc, OperationalError | InterfaceError):
        logger.error("API request failed on the database", exc_info=exc)
        if is_statement_timeout(exc):
            message = (
                "The query took longer than DATABASE_STATEMENT_TIMEOUT_MS and was cancelled; "
                "narrow the request."
            )
            return 503, error_body(503, "timeout", message, limit="DATABASE_STATEMENT_TIMEOUT_MS")
        message = "The database is unavailable; try again shortly."
        return 503, error_body(503, "unavailable", message)
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DatabaseError):
        answer = database_error(exc)
        if answer is not None:
            return Response(answer[1], status=answer[0])
    if isinstance(exc, JsonBodyError) and exc.path:
        body = error_body(400, "parse_error", str(exc.detail), {exc.path: [exc.reason]})
        return Response(body, status=400)
    if isinstance(exc, ValidationError):
        fields = _as_lists(exc.message_dict) if hasattr(exc, "error_dict") else None
        message = "Invalid input." if fields else "; ".join(exc.messages)
        return Response(error_body(400, "invalid", message, fields), status=400)
    if isinstance(exc, RequestDataTooBig):
        return Response(_too_big(settings.API_MAX_BODY_BYTES, "API_MAX_BODY_BYTES"), status=413)
    domain = _domain_error(exc)
    if domain is not None:
        status, code, message, field = domain
        fields = {field: [message]} if field else None
        return Response(error_body(status, code, message, fields), status=status)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()

    # Imported here: rest_framework.views reads the parser setting, which names this module.
    from rest_framework.views import exception_handler as drf_exception_handler

    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # unexpected: Django's handler500 answers with the JSON shape
    code = exc.get_codes() if isinstance(exc, exceptions.APIException) else "error"
    if isinstance(exc, exceptions.ValidationError):
        fields = _as_lists(
            exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        )
        body = error_body(response.status_code, "invalid", "Invalid input.", fields)
    else:
        message = str(exc.detail) if isinstance(exc, exceptions.APIException) else str(exc)
        body = error_body(response.status_code, code if isinstance(code, str) else "error", message)
        if isinstance(exc, exceptions.Throttled):
            body["error"]["limit"] = "API_RATE_LIMIT"
            body["error"]["retry_after"] = exc.wait
    response.data = body
    return response


def _too_big(limit: int, setting: str) -> dict[str, Any]:
    return error_body(
        413,
        "too_large",
        f"The request body is larger than {limit} bytes ({setting}).",
        limit=setting,
    )


class JsonBodyError(exceptions.ParseError):
    """A body config.jsonparse refused; `path` names where, as in a field error."""

    def __init__(self, error: jsonparse.JsonInputError) -> None:
        where = f" (at {error.path})" if error.path else ""
        super().__init__(f"The body is not acceptable JSON: {error.message}{where}.")
        self.path = error.path
        self.reason = error.message


class StrictJSONParser(parsers.BaseParser):
    """application/json through config.jsonparse: what no write path can store (NaN, NUL,
    lone surrogates, invalid UTF-8, nesting past 64 levels) is a 400 naming the field,
    never a 500 later. JSON is UTF-8 (RFC 8259), whatever charset the header names."""

    media_type = "application/json"
    renderer_class = renderers.JSONRenderer

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        try:
            return jsonparse.loads(stream.read())
        except jsonparse.JsonInputError as error:
            raise JsonBodyError(error) from None


class JsonNegotiation(negotiation.DefaultContentNegotiation):
    """The view's first renderer when none matches Accept: an API client asking for
    text/html gets JSON (errors included), not a 406."""

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except exceptions.NotAcceptable:
            return renderers[0], renderers[0].media_type


class ApiNotFoundMiddleware:
    """A URL under the API that matches no route is a JSON 404 in the API's error shape,
    with DEBUG on too (Django then answers with its HTML page of URL patterns instead of
    calling handler404): an agent's client reads JSON from every API address."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code == 404
            and request.path.startswith(API_PREFIX)
            and response.get("Content-Type", "").startswith("text/html")
        ):
            return handler404(request)
        return response


class ApiBodyLimitMiddleware:
    """Refuse oversized API bodies before anything reads them (DRF's parsers don't check).

    A chunked body (Transfer-Encoding, no Content-Length) is read here, up to the limit,
    when the server ends the input at the body's end (gunicorn says so in
    wsgi.input_terminated); Django alone would see it as empty. Other servers give no
    safe way to find the end: 411.
    """

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        is_import = request.path.endswith("/import")
        limit = settings.API_IMPORT_MAX_BYTES if is_import else settings.API_MAX_BODY_BYTES
        setting = "API_IMPORT_MAX_BYTES" if is_import else "API_MAX_BODY_BYTES"
        chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not request.META.get("CONTENT_LENGTH"):
            return self._unsized(request, limit, setting)
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return JsonResponse(
                error_body(400, "invalid", "Content-Length is not a number."), status=400
            )
        if length > limit:
            return JsonResponse(_too_big(limit, setting), status=413)
        return self.get_response(request)

    def _unsized(self, request: HttpRequest, limit: int, setting: str) -> HttpResponse:
        if not request.META.get("wsgi.input_terminated"):
            message = "A chunked body is not supported by this server; send Content-Length."
            return JsonResponse(error_body(411, "length_required", message), status=411)
        source = request.META["wsgi.input"]
        # In memory up to the ordinary limit, on disk beyond (imports).
        with tempfile.SpooledTemporaryFile(max_size=settings.API_MAX_BODY_BYTES) as body:
            size = 0
            while chunk := source.read(64 * 1024):
                size += len(chunk)
                if size > limit:
                    return JsonResponse(_too_big(limit, setting), status=413)
                body.write(chunk)
            body.seek(0)
            # From here on the request reads like one sent with Content-Length.
            request.META["CONTENT_LENGTH"] = str(size)
            request._stream = body
            return self.get_response(request)


def _set_statement_timeout(sender, connection, **kwargs) -> None:
    timeout = settings.DATABASE_STATEMENT_TIMEOUT_MS
    if connection.vendor == "postgresql" and timeout:
        with connection.cursor() as cursor:
            cursor.execute(f"SET statement_timeout = {int(timeout)}")


class DatabaseGuardMiddleware:
    """Database failures of API requests answer in the JSON shape (503, 409, 400), and the
    web process's PostgreSQL connections get DATABASE_STATEMENT_TIMEOUT_MS.

    Only web handlers build middleware, so the timeout reaches request connections and
    never the worker's or a management command's, whose long statements are legitimate.
    Failures raised before the view (authentication, the throttle's cache) reach
    handler500, which answers the same way.
    """

    def __init__(self, get_response) -> None:
        self.get_response = get_response
        connection_created.connect(_set_statement_timeout, dispatch_uid="engram-statement-timeout")

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if request.path.startswith(API_PREFIX) and isinstance(exception, DatabaseError):
            answer = database_error(exception)
            if answer is not None:
                return JsonResponse(answer[1], status=answer[0])
        return None


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse(error_body(404, "not_found", "Not found."), status=404)
    return page_not_found(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        # Django calls this inside its `except`: a database failure raised by middleware
        # (before any view) is still answered as the views answer it.
        exc = sys.exc_info()[1]
        answer = database_error(exc) if isinstance(exc, DatabaseError) else None
        if answer is not None:
            return JsonResponse(answer[1], status=answer[0])
        return JsonResponse(
            error_body(500, "server_error", "Internal server error; it has been logged."),
            status=500,
        )
    return server_error(request)


def handler400(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        if isinstance(exception, RequestDataTooBig):
            return JsonResponse(
                _too_big(settings.API_MAX_BODY_BYTES, "API_MAX_BODY_BYTES"), status=413
            )
        return JsonResponse(error_body(400, "bad_request", "Bad request."), status=400)
    return bad_request(request, exception)


def handler403(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse(error_body(403, "permission_denied", "Forbidden."), status=403)
    return permission_denied(request, exception)


def _invalid_cursor() -> exceptions.ValidationError:
    return exceptions.ValidationError(
        {"cursor": ["Not a cursor of this list: pass `next` or `previous` as given."]}
    )


class CursorPagination(pagination.CursorPagination):
    """Newest first, stable under inserts; `limit` above the maximum is an error, not a cap."""

    ordering = ("-created_at", "-id")
    page_size_query_param = "limit"

    def __init__(self) -> None:
        # Read per request so the settings (and tests overriding them) take effect.
        self.page_size = settings.API_DEFAULT_PAGE_SIZE
        self.max_page_size = settings.API_MAX_PAGE_SIZE

    def decode_cursor(self, request):
        """DRF's decoding, held to what encode_cursor writes: anything else (text that is
        not base64, keys it never writes, a key twice) is a 400 naming `cursor`, where DRF
        answered 404 or silently gave the first page. An empty cursor is the first page."""
        encoded = request.query_params.get(self.cursor_query_param)
        if not encoded:
            return None
        try:
            text = b64decode(encoded.encode("ascii"), validate=True).decode("ascii")
            fields = parse_qs(text, keep_blank_values=True, strict_parsing=True)
        except (ValueError, binascii.Error):
            raise _invalid_cursor() from None
        if not fields or set(fields) - {"o", "r", "p"} or any(len(v) > 1 for v in fields.values()):
            raise _invalid_cursor()
        try:
            return super().decode_cursor(request)
        except exceptions.NotFound:
            raise _invalid_cursor() from None

    def paginate_queryset(self, queryset, request, view=None):
        try:
            return super().paginate_queryset(queryset, request, view)
        except (ValidationError, ValueError, OverflowError):
            # A position the ordering's column cannot hold ("p=2026" for a time).
            if request.query_params.get(self.cursor_query_param):
                raise _invalid_cursor() from None
            raise

    def get_page_size(self, request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return settings.API_DEFAULT_PAGE_SIZE
        try:
            size = int(raw)
        except ValueError:
            raise exceptions.ValidationError({"limit": ["Must be an integer."]}) from None
        if size < 1:
            raise exceptions.ValidationError({"limit": ["Must be at least 1."]})
        if size > self.max_page_size:
            raise exceptions.ValidationError(
                {"limit": [f"At most {self.max_page_size} (API_MAX_PAGE_SIZE)."]}
            )
        return size


ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["status", "code", "message"],
            "properties": {
                "status": {"type": "integer"},
                "code": {"type": "string"},
                "message": {"type": "string"},
                "fields": {
                    "type": "object",
                    "description": "Field name -> messages (nested for list items).",
                    "additionalProperties": True,
                },
                "limit": {"type": "string", "description": "The setting that was exceeded."},
                "retry_after": {"type": "number", "nullable": True},
            },
        }
    },
}
ERROR_STATUSES = {
    "400": "Invalid input; `fields` names each field at fault.",
    "401": "Missing, invalid, revoked or expired token.",
    "403": "Authenticated but not allowed (read-only token, token managing tokens).",
    "404": "No such object within your namespaces and classification ceiling.",
    "413": "Body over API_MAX_BODY_BYTES (or API_IMPORT_MAX_BYTES for imports).",
    "409": "Conflicts with the object's state (`code` says which: `not_live`, a use of a "
    "forgotten or archived memory; `grade_conflict`, a stale card `version`; "
    "`nothing_to_undo`; `session_finished`) or with an object created at the same time "
    "(`conflict`, a unique constraint).",
    "411": "A chunked body this server cannot read; send Content-Length.",
    "415": "Unsupported media type.",
    "429": "Over API_RATE_LIMIT; retry after `retry_after` seconds.",
    "503": "Database unavailable or query over DATABASE_STATEMENT_TIMEOUT_MS; retry later.",
}


def add_error_responses(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: every operation documents the error shape."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    ref = {"$ref": "#/components/schemas/Error"}
    for path in result.get("paths", {}).values():
        for operation in path.values():
            responses = operation.setdefault("responses", {})
            for code, description in ERROR_STATUSES.items():
                responses.setdefault(
                    code,
                    {"description": description, "content": {"application/json": {"schema": ref}}},
                )
    return result
