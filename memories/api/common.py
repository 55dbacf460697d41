"""What several of memories' API modules share: schema pieces, pagination, list filters."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiExample, OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import CursorPagination
from memories import serializers as s
from memories.auth import Scope

ERROR_EXAMPLE = OpenApiExample(
    "Validation error",
    value={
        "error": {
            "status": 400,
            "code": "invalid",
            "message": "Invalid input.",
            "fields": {"content": ["This field may not be blank."]},
        }
    },
    response_only=True,
    status_codes=["400"],
)
LIST_PARAMETERS = [
    OpenApiParameter("limit", int, description="Page size (API_MAX_PAGE_SIZE at most)."),
    OpenApiParameter("cursor", str, description="Opaque cursor from `next` or `previous`."),
]
NAMESPACE_PARAMETER = OpenApiParameter("namespace", str, description="Namespace slug.")


def paginate(
    request: Request, view: APIView, queryset: QuerySet, serializer, **context: Any
) -> Response:
    paginator = CursorPagination()
    page = paginator.paginate_queryset(queryset, request, view=view)
    data = serializer(page, many=True, context={"request": request, **context}).data
    return paginator.get_paginated_response(data)


def link_filters(request: Request) -> dict[str, Any]:
    """The query parameters of the association, entity, relation and digest lists."""
    params = s.LinkListFilter(data=request.query_params.dict())
    params.is_valid(raise_exception=True)
    return params.validated_data


def namespace_filter(request: Request, scope: Scope, queryset: QuerySet) -> QuerySet:
    """The queryset narrowed to the `namespace` parameter's namespace, if one is named."""
    slug = link_filters(request).get("namespace")
    if slug:
        return queryset.filter(namespace=scope.namespace(slug))
    return queryset
