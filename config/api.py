"""API plumbing shared by every app: one JSON error shape, body limits, pagination.

Every 4xx and 5xx under /api/ answers

    {"error": {"status": 400, "code": "invalid", "message": "...", "fields": {"content": [...]}}}

never an HTML page.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions, pagination
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

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


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
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


class ApiBodyLimitMiddleware:
    """Refuse oversized API bodies before anything reads them (DRF's parsers don't check)."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(API_PREFIX):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return JsonResponse(
                    error_body(400, "invalid", "Content-Length is not a number."), status=400
                )
            is_import = request.path.endswith("/import")
            limit = settings.API_IMPORT_MAX_BYTES if is_import else settings.API_MAX_BODY_BYTES
            setting = "API_IMPORT_MAX_BYTES" if is_import else "API_MAX_BODY_BYTES"
            if length > limit:
                return JsonResponse(_too_big(limit, setting), status=413)
        return self.get_response(request)


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse(error_body(404, "not_found", "Not found."), status=404)
    from django.views.defaults import page_not_found

    return page_not_found(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse(
            error_body(500, "server_error", "Internal server error; it has been logged."),
            status=500,
        )
    from django.views.defaults import server_error

    return server_error(request)


def handler400(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        if isinstance(exception, RequestDataTooBig):
            return JsonResponse(
                _too_big(settings.API_MAX_BODY_BYTES, "API_MAX_BODY_BYTES"), status=413
            )
        return JsonResponse(error_body(400, "bad_request", "Bad request."), status=400)
    from django.views.defaults import bad_request

    return bad_request(request, exception)


def handler403(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return JsonResponse(error_body(403, "permission_denied", "Forbidden."), status=403)
    from django.views.defaults import permission_denied

    return permission_denied(request, exception)


class CursorPagination(pagination.CursorPagination):
    """Newest first, stable under inserts; `limit` above the maximum is an error, not a cap."""

    ordering = ("-created_at", "-id")
    page_size_query_param = "limit"

    def __init__(self) -> None:
        # Read per request so the settings (and tests overriding them) take effect.
        self.page_size = settings.API_DEFAULT_PAGE_SIZE
        self.max_page_size = settings.API_MAX_PAGE_SIZE

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
    "415": "Unsupported media type.",
    "429": "Over API_RATE_LIMIT; retry after `retry_after` seconds.",
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
