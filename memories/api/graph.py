"""Entity and relation endpoints: the knowledge graph drawn from memories."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.serializers import require_no_body
from memories import serializers as s
from memories import services
from memories.api.common import (
    LIST_PARAMETERS,
    NAMESPACE_PARAMETER,
    link_filters,
    namespace_filter,
    paginate,
)
from memories.auth import Scope
from memories.models import Entity, Relation
from memories.text import fold


class EntityListView(APIView):
    @extend_schema(
        parameters=[NAMESPACE_PARAMETER, *LIST_PARAMETERS],
        responses=s.page_of(s.EntityOutput),
        operation_id="entities_list",
        tags=["entities"],
        summary="List known entities",
    )
    def get(self, request: Request) -> Response:
        scope = Scope.of(request)
        entities = namespace_filter(
            request,
            scope,
            Entity.objects.filter(namespace_id__in=scope.namespace_ids).within_ceiling(
                scope.ceiling
            ),
        ).select_related("namespace")
        return paginate(request, self, entities, s.EntityOutput)

    @extend_schema(
        request=s.EntityInput,
        responses={201: s.EntityOutput},
        tags=["entities"],
        summary="Declare an entity (returns the existing one if known)",
        examples=[
            OpenApiExample(
                "Person",
                request_only=True,
                value={"namespace": "work", "name": "Alice", "kind": "person"},
            )
        ],
    )
    def post(self, request: Request) -> Response:
        scope = Scope.of(request)
        data = s.EntityInput(data=request.data)
        data.is_valid(raise_exception=True)
        namespace = scope.namespace(data.validated_data["namespace"])
        entity = services.entity_get_or_create(
            namespace=namespace,
            name=data.validated_data["name"],
            kind=data.validated_data["kind"],
            classification=scope.default_classification,
        )
        return Response(s.EntityOutput(entity).data, status=status.HTTP_201_CREATED)


def _visible_relations(scope: Scope) -> QuerySet[Relation]:
    """Relations of the caller's namespaces recorded within its ceiling."""
    return (
        Relation.objects.filter(namespace_id__in=scope.namespace_ids)
        .within_ceiling(scope.ceiling)
        .select_related("namespace", "subject", "object")
    )


class RelationListView(APIView):
    @extend_schema(
        parameters=[
            NAMESPACE_PARAMETER,
            OpenApiParameter("entity", str, description="Relations of this entity."),
            *LIST_PARAMETERS,
        ],
        responses=s.page_of(s.RelationOutput),
        operation_id="relations_list",
        tags=["entities"],
        summary="List relations",
    )
    def get(self, request: Request) -> Response:
        scope = Scope.of(request)
        relations = namespace_filter(request, scope, _visible_relations(scope))
        entity = link_filters(request).get("entity")
        if entity:
            key = fold(entity)
            relations = relations.filter(Q(subject__name=key) | Q(object__name=key))
        return paginate(request, self, relations, s.RelationOutput)

    @extend_schema(
        request=s.RelationInput,
        responses={201: s.RelationOutput},
        tags=["entities"],
        summary="Record subject -[predicate]-> object",
        examples=[
            OpenApiExample(
                "Works with",
                request_only=True,
                value={
                    "namespace": "work",
                    "subject": "alice",
                    "predicate": "works_with",
                    "object": "bob",
                },
            )
        ],
    )
    def post(self, request: Request) -> Response:
        scope = Scope.of(request)
        data = s.RelationInput(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        namespace = scope.namespace(fields.pop("namespace"))
        memory_id = fields.pop("memory", None)
        memory = None
        if memory_id is not None:
            memory = scope.memories().filter(pk=memory_id).first()
            if memory is None:
                raise serializers.ValidationError({"memory": ["No such memory."]})
        relation = services.relation_create(
            namespace=namespace,
            memory=memory,
            classification=scope.default_classification if memory is None else None,
            **fields,
        )
        return Response(s.RelationOutput(relation).data, status=status.HTTP_201_CREATED)


class RelationDetailView(APIView):
    @extend_schema(responses={204: None}, tags=["entities"], summary="Remove a relation")
    def delete(self, request: Request, pk: int) -> Response:
        require_no_body(request)
        relation = get_object_or_404(_visible_relations(Scope.of(request)), pk=pk)
        relation.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
