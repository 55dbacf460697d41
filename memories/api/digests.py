"""Consolidation digest endpoints."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import CursorPagination
from memories import serializers as s
from memories.api.common import (
    LIST_PARAMETERS,
    NAMESPACE_PARAMETER,
    link_filters,
    namespace_filter,
)
from memories.auth import Scope
from memories.models import Consolidation, quotes_hidden


class ConsolidationListView(APIView):
    @extend_schema(
        parameters=[
            NAMESPACE_PARAMETER,
            OpenApiParameter("period", str, enum=Consolidation.Period.values),
            *LIST_PARAMETERS,
        ],
        responses=s.page_of(s.ConsolidationOutput),
        operation_id="consolidations_list",
        tags=["digests"],
        summary="List consolidation digests (only those built from memories you can see)",
    )
    def get(self, request: Request) -> Response:
        scope = Scope.of(request)
        digests = namespace_filter(
            request,
            scope,
            Consolidation.objects.filter(namespace_id__in=scope.namespace_ids).within_ceiling(
                scope.ceiling
            ),
        ).select_related("namespace")
        period = link_filters(request).get("period")
        if period:
            digests = digests.filter(period=period)
        paginator = CursorPagination()
        page = paginator.paginate_queryset(digests.order_by("-created_at", "-id"), request, self)
        hidden = quotes_hidden(page, scope.ceiling)
        page = [digest for digest in page if digest.pk not in hidden]
        return paginator.get_paginated_response(s.ConsolidationOutput(page, many=True).data)
