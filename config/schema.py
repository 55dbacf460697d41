"""The OpenAPI schema's view inspector: drf-spectacular's, but a DELETE that declares a
request body (extend_schema(request=...): unsuspend's `clear_leech`) shows it, since the
view reads it; drf-spectacular describes bodies of POST, PUT and PATCH only."""

from __future__ import annotations

from typing import Any

from drf_spectacular import openapi


class AutoSchema(openapi.AutoSchema):
    def _get_request_body(self, direction: str = "request") -> Any:
        declared = type(self).get_request_serializer is not AutoSchema.get_request_serializer
        if self.method != "DELETE" or not declared or self.get_request_serializer() is None:
            return super()._get_request_body(direction)
        self.method = "POST"  # described as the same body would be on a POST
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = "DELETE"
