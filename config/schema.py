"""The OpenAPI schema's view inspector: drf-spectacular's, but a DELETE that declares a
request body (extend_schema(request=...): unsuspend's `clear_leech`) shows it, since the
view reads it; drf-spectacular describes bodies of POST, PUT and PATCH only."""

from __future__ import annotations

from typing import Any

from drf_spectacular import openapi


class AutoSchema(openapi.AutoSchema):
    _declared_only = False

    def get_request_serializer(self) -> Any:
        # While _declared_only, only what extend_schema declares for the method counts:
        # drf-spectacular's guess from the view would warn for every plain DELETE.
        if self._declared_only:
            return None
        return super().get_request_serializer()

    def _get_request_body(self, direction: str = "request") -> Any:
        if self.method != "DELETE":
            return super()._get_request_body(direction)
        self._declared_only = True
        try:
            declared = self.get_request_serializer()
        finally:
            self._declared_only = False
        if declared is None:
            return None  # what drf-spectacular gives a DELETE
        self.method = "POST"  # described as the same body would be on a POST
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = "DELETE"
