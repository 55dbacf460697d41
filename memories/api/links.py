"""Association endpoints: the links between memories of one namespace."""

from __future__ import annotations

from django.db.models import Q
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.serializers import require_no_body
from memories import serializers as s
from memories import services
from memories.api.common import LIST_PARAMETERS, link_filters, paginate
from memories.auth import Scope
from memories.models import Association


class AssociationListView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("memory", int, description="Links from or to a memory."),
            *LIST_PARAMETERS,
        ],
        responses=s.page_of(s.AssociationOutput),
        operation_id="associations_list",
        tags=["links"],
        summary="List associations between memories you can see",
    )
    def get(self, request: Request) -> Response:
        scope = Scope.of(request)
        visible = scope.memories().values("pk")
        links = Association.objects.filter(
            source__in=visible, target__in=visible, classification__lte=scope.ceiling
        )
        memory = link_filters(request).get("memory")
        if memory is not None:
            links = links.filter(Q(source_id=memory) | Q(target_id=memory))
        return paginate(request, self, links, s.AssociationOutput)

    @extend_schema(
        request=s.AssociationInput,
        responses={201: s.AssociationOutput},
        tags=["links"],
        summary="Link two memories of one namespace",
        examples=[
            OpenApiExample(
                "Link", request_only=True, value={"source": 1, "target": 2, "weight": 0.6}
            )
        ],
    )
    def post(self, request: Request) -> Response:
        scope = Scope.of(request)
        data = s.AssociationInput(data=request.data)
        data.is_valid(raise_exception=True)
        ends = {
            m.pk: m
            for m in scope.memories().filter(
                pk__in=[data.validated_data["source"], data.validated_data["target"]]
            )
        }
        for end in ("source", "target"):
            if data.validated_data[end] not in ends:
                raise serializers.ValidationError({end: ["No such memory."]})
        link = services.association_create(
            source=ends[data.validated_data["source"]],
            target=ends[data.validated_data["target"]],
            weight=data.validated_data["weight"],
            kind=data.validated_data["kind"],
        )
        return Response(s.AssociationOutput(link).data, status=status.HTTP_201_CREATED)


class AssociationDetailView(APIView):
    @extend_schema(responses={204: None}, tags=["links"], summary="Remove an association")
    def delete(self, request: Request, pk: int) -> Response:
        require_no_body(request)
        scope = Scope.of(request)
        visible = scope.memories().values("pk")
        link = get_object_or_404(
            Association.objects.filter(
                source__in=visible, target__in=visible, classification__lte=scope.ceiling
            ),
            pk=pk,
        )
        link.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
