"""REST endpoints for namespaces, memories and their links. Each view: validate, call one
service, serialize. Every lookup goes through the caller's Scope, so ids outside it 404."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Count, Q, QuerySet
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied, UnsupportedMediaType
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import CursorPagination, error_body
from memories import importer, services, transfer
from memories import serializers as s
from memories.auth import Scope, SessionOnly
from memories.models import (
    ApiToken,
    Association,
    BackgroundRun,
    Classification,
    Consolidation,
    Entity,
    Memory,
    MemoryEvent,
    Namespace,
    Relation,
    quotes_hidden,
)
from memories.text import fold

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
MEMORY_EXAMPLE = OpenApiExample(
    "A memory",
    value={
        "namespace": "work",
        "content": "The project uses PostgreSQL 15 in production.",
        "topic": "project",
        "keywords": ["database", "postgresql"],
        "memory_type": "semantic",
        "classification": "internal",
    },
    request_only=True,
)


def _memory(scope: Scope, pk: int) -> Memory:
    return get_object_or_404(scope.memories().select_related("namespace"), pk=pk)


def _check_ceiling(scope: Scope, classification: int | None) -> None:
    if classification is not None and classification > scope.ceiling:
        raise serializers.ValidationError(
            {
                "classification": [
                    "Above this token's ceiling "
                    f"({Classification(scope.ceiling).label}); it could not be read back."
                ]
            }
        )


def _source(request: Request) -> str:
    return "api" if isinstance(request.auth, ApiToken) else "dashboard"


def _paginate(request: Request, view: APIView, queryset: QuerySet, serializer, **context):
    paginator = CursorPagination()
    page = paginator.paginate_queryset(queryset, request, view=view)
    data = serializer(page, many=True, context={"request": request, **context}).data
    return paginator.get_paginated_response(data)


# --- Namespaces -----------------------------------------------------------------------


class NamespaceListView(APIView):
    @extend_schema(
        responses=s.NamespaceOutput(many=True),
        operation_id="namespaces_list",
        tags=["namespaces"],
        summary="List the namespaces this caller may use",
    )
    def get(self, request: Request) -> Response:
        scope = Scope.of(request)
        namespaces = (
            scope.namespaces()
            .annotate(
                memory_count=Count(
                    "memories", filter=Q(memories__classification__lte=scope.ceiling)
                )
            )
            .order_by("name")
        )
        return Response(s.NamespaceOutput(namespaces, many=True).data)

    @extend_schema(
        request=s.NamespaceInput,
        responses={201: s.NamespaceOutput},
        tags=["namespaces"],
        summary="Create a namespace",
        examples=[
            OpenApiExample(
                "Agent namespace",
                request_only=True,
                value={"name": "agent-42", "mode": "agent_memory"},
            ),
            ERROR_EXAMPLE,
        ],
    )
    def post(self, request: Request) -> Response:
        scope = Scope.of(request)
        if not scope.manages_namespaces:
            raise PermissionDenied("Creating namespaces needs a write token for all namespaces.")
        data = s.NamespaceInput(data=request.data)
        data.is_valid(raise_exception=True)
        namespace = services.namespace_create(owner=request.user, **data.validated_data)
        return Response(s.NamespaceOutput(namespace).data, status=status.HTTP_201_CREATED)


class NamespaceDetailView(APIView):
    @extend_schema(responses=s.NamespaceOutput, tags=["namespaces"], summary="Get a namespace")
    def get(self, request: Request, slug: str) -> Response:
        namespace = get_object_or_404(Scope.of(request).namespaces(), slug=slug)
        return Response(s.NamespaceOutput(namespace).data)

    @extend_schema(
        request=s.NamespaceUpdateInput,
        responses=s.NamespaceOutput,
        tags=["namespaces"],
        summary="Change a namespace's name or settings",
        examples=[
            OpenApiExample(
                "Switch to FSRS",
                request_only=True,
                value={"scheduler": "fsrs", "desired_retention": 0.9},
            )
        ],
    )
    def patch(self, request: Request, slug: str) -> Response:
        namespace = get_object_or_404(Scope.of(request).namespaces(), slug=slug)
        data = s.NamespaceUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        namespace = services.namespace_update(namespace=namespace, changes=data.validated_data)
        return Response(s.NamespaceOutput(namespace).data)


# --- Memories -------------------------------------------------------------------------

LIST_PARAMETERS = [
    OpenApiParameter("limit", int, description="Page size (API_MAX_PAGE_SIZE at most)."),
    OpenApiParameter("cursor", str, description="Opaque cursor from `next` or `previous`."),
]


class MemoryListView(APIView):
    @extend_schema(
        parameters=[s.MemoryListFilter],
        responses=s.page_of(s.MemoryOutput),
        operation_id="memories_list",
        tags=["memories"],
        summary="List memories, newest first, with filters and cursor pagination",
    )
    def get(self, request: Request) -> Response:
        scope = Scope.of(request)
        params = s.MemoryListFilter(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        f = params.validated_data
        memories = scope.memories().select_related("namespace")
        if "namespace" in f:
            memories = memories.filter(namespace=scope.namespace(f["namespace"]))
        memories = (
            memories.filter(status=f["status"])
            if "status" in f
            else memories.exclude(status=Memory.Status.FORGOTTEN)
        )
        for name in ("topic", "tier", "memory_type", "classification"):
            if name in f:
                memories = memories.filter(**{name: f[name]})
        if "created_after" in f:
            memories = memories.filter(created_at__gte=f["created_after"])
        if "created_before" in f:
            memories = memories.filter(created_at__lt=f["created_before"])
        if f.get("q"):
            memories = memories.containing(f["q"])
        return _paginate(request, self, memories, s.MemoryOutput, now=timezone.now())

    @extend_schema(
        request=s.MemoryCreateInput,
        responses={201: s.MemoryOutput},
        tags=["memories"],
        summary="Store a memory",
        examples=[MEMORY_EXAMPLE, ERROR_EXAMPLE],
    )
    def post(self, request: Request) -> Response:
        scope = Scope.of(request)
        fields = s.validate_memory_input(request.data)
        namespace = scope.namespace(fields.pop("namespace"))
        fields.setdefault("classification", scope.default_classification)
        _check_ceiling(scope, fields["classification"])
        memory = services.memory_create(
            namespace=namespace,
            actor=request.user,
            source=_source(request),
            prevalidated=True,  # MemoryCreateInput holds every model field rule
            **fields,
        )
        return Response(s.memory_representation(memory), status=status.HTTP_201_CREATED)


class MemoryBulkView(APIView):
    @extend_schema(
        request=s.BulkCreateInput,
        responses={201: s.MemoryOutput(many=True)},
        tags=["memories"],
        summary="Store up to API_BULK_MAX memories, all or nothing",
        description="Every item is validated first. If any item is invalid nothing is "
        "written and `error.fields.memories` maps each bad item's index to its errors.",
        examples=[
            OpenApiExample(
                "Two memories",
                request_only=True,
                value={
                    "namespace": "work",
                    "memories": [
                        {"content": "Deploys happen on Tuesdays."},
                        {"content": "The staging database is db2.", "topic": "ops"},
                    ],
                },
            ),
            OpenApiExample(
                "One bad item",
                response_only=True,
                status_codes=["400"],
                value={
                    "error": {
                        "status": 400,
                        "code": "invalid",
                        "message": "Invalid input.",
                        "fields": {"memories": {"1": {"content": ["This field is required."]}}},
                    }
                },
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        scope = Scope.of(request)
        envelope = s.BulkCreateInput(data=request.data)
        envelope.is_valid(raise_exception=True)
        default_ns = envelope.validated_data.get("namespace")
        namespaces = {ns.slug: ns for ns in scope.namespaces()}
        items: list[dict[str, Any]] = []
        errors: dict[str, Any] = {}
        for index, raw in enumerate(envelope.validated_data["memories"]):
            raw = dict(raw)
            raw.setdefault("namespace", default_ns)
            try:
                # One serializer for every item: a new one per item would deep-copy its
                # twenty declared fields each time, more work than the validation itself.
                fields = s.validate_memory_input(raw)
            except serializers.ValidationError as exc:
                errors[str(index)] = exc.detail
                continue
            namespace = namespaces.get(fields.pop("namespace"))
            if namespace is None:
                errors[str(index)] = {"namespace": ["No such namespace."]}
                continue
            fields.setdefault("classification", scope.default_classification)
            if fields["classification"] > scope.ceiling:
                errors[str(index)] = {"classification": ["Above this token's ceiling."]}
                continue
            items.append({"namespace": namespace, **fields})
        if errors:
            raise serializers.ValidationError({"memories": errors})
        try:
            created = services.memory_bulk_create(
                items=items,
                actor=request.user,
                source=_source(request),
                prevalidated=True,  # MemoryCreateInput holds every model field rule
            )
        except DjangoValidationError as exc:
            # The service names "<index>.<field>"; answer in this endpoint's shape.
            nested: dict[str, dict[str, list[str]]] = {}
            for key, messages in exc.message_dict.items():
                index, _, field = key.partition(".")
                nested.setdefault(index, {})[field or "non_field_errors"] = messages
            raise serializers.ValidationError({"memories": nested}) from exc
        return Response(s.MemoryOutput(created, many=True).data, status=status.HTTP_201_CREATED)


class MemoryDetailView(APIView):
    @extend_schema(responses=s.MemoryOutput, tags=["memories"], summary="Get a memory")
    def get(self, request: Request, pk: int) -> Response:
        return Response(s.MemoryOutput(_memory(Scope.of(request), pk)).data)

    @extend_schema(
        request=s.MemoryUpdateInput,
        responses=s.MemoryOutput,
        tags=["memories"],
        summary="Change a memory's editable fields (history records before and after)",
        examples=[
            OpenApiExample(
                "Correct a fact",
                request_only=True,
                value={"content": "Deploys happen on Thursdays."},
            ),
            ERROR_EXAMPLE,
        ],
    )
    def patch(self, request: Request, pk: int) -> Response:
        scope = Scope.of(request)
        memory = _memory(scope, pk)
        data = s.MemoryUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        _check_ceiling(scope, data.validated_data.get("classification"))
        memory = services.memory_update(
            memory=memory,
            changes=data.validated_data,
            actor=request.user,
            source=_source(request),
        )
        return Response(s.MemoryOutput(memory).data)

    @extend_schema(
        responses={204: None},
        tags=["memories"],
        summary="Purge a memory for good (history keeps a 'purged' event)",
    )
    def delete(self, request: Request, pk: int) -> Response:
        memory = _memory(Scope.of(request), pk)
        services.memory_purge(memory=memory, actor=request.user, source=_source(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemoryForgetView(APIView):
    @extend_schema(
        request=s.ForgetInput,
        responses=s.MemoryOutput,
        tags=["memories"],
        summary="Forget a memory (hidden, restorable until purged)",
        examples=[
            OpenApiExample("Obsolete", request_only=True, value={"reason": "superseded by #42"})
        ],
    )
    def post(self, request: Request, pk: int) -> Response:
        memory = _memory(Scope.of(request), pk)
        data = s.ForgetInput(data=request.data)
        data.is_valid(raise_exception=True)
        memory = services.memory_forget(
            memory=memory,
            reason=data.validated_data["reason"],
            actor=request.user,
            source=_source(request),
        )
        return Response(s.MemoryOutput(memory).data)


class MemoryRestoreView(APIView):
    @extend_schema(
        request=None,
        responses=s.MemoryOutput,
        tags=["memories"],
        summary="Restore a forgotten or archived memory",
    )
    def post(self, request: Request, pk: int) -> Response:
        memory = _memory(Scope.of(request), pk)
        memory = services.memory_restore(memory=memory, actor=request.user, source=_source(request))
        return Response(s.MemoryOutput(memory).data)


class MemoryTouchView(APIView):
    @extend_schema(
        request=s.TouchInput,
        responses=s.MemoryOutput,
        tags=["memories"],
        summary="Record a use; optionally boost strength x1.1 (capped at 2.0)",
        examples=[OpenApiExample("Boost", request_only=True, value={"boost_strength": True})],
    )
    def post(self, request: Request, pk: int) -> Response:
        memory = _memory(Scope.of(request), pk)
        data = s.TouchInput(data=request.data)
        data.is_valid(raise_exception=True)
        memory = services.memory_touch(
            memory=memory,
            boost_strength=data.validated_data["boost_strength"],
            actor=request.user,
            source=_source(request),
        )
        memory = _memory(Scope.of(request), pk)
        return Response(s.MemoryOutput(memory).data)


REDACTED = {"redacted": "above this token's classification ceiling"}


def redact_above_ceiling(events: list[MemoryEvent], ceiling: int) -> None:
    """Hide the values of events written while the memory sat above the ceiling (each
    event stores the level it was written at); the kind and time stay."""
    for event in events:
        if event.classification > ceiling:
            event.before, event.after = dict(REDACTED), dict(REDACTED)


class MemoryHistoryView(APIView):
    @extend_schema(
        parameters=LIST_PARAMETERS,
        responses=s.page_of(s.EventOutput),
        operation_id="memory_history",
        tags=["memories"],
        summary="A memory's history, newest first",
    )
    def get(self, request: Request, pk: int) -> Response:
        scope = Scope.of(request)
        memory = _memory(scope, pk)
        events = MemoryEvent.objects.filter(memory_ref=memory.pk).select_related("actor")
        paginator = CursorPagination()
        page = paginator.paginate_queryset(events, request, view=self)
        redact_above_ceiling(page, scope.ceiling)
        return paginator.get_paginated_response(s.EventOutput(page, many=True).data)


# --- Associations, entities, relations, digests ----------------------------------------


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
        links = Association.objects.filter(source__in=visible, target__in=visible)
        memory = _params(request).get("memory")
        if memory is not None:
            links = links.filter(Q(source_id=memory) | Q(target_id=memory))
        return _paginate(request, self, links, s.AssociationOutput)

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
        visible = Scope.of(request).memories().values("pk")
        link = get_object_or_404(
            Association.objects.filter(source__in=visible, target__in=visible), pk=pk
        )
        link.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


def _params(request: Request) -> dict[str, Any]:
    params = s.LinkListFilter(data=request.query_params.dict())
    params.is_valid(raise_exception=True)
    return params.validated_data


def _ns_filter(request: Request, scope: Scope, queryset: QuerySet) -> QuerySet:
    slug = _params(request).get("namespace")
    if slug:
        return queryset.filter(namespace=scope.namespace(slug))
    return queryset


NAMESPACE_PARAMETER = OpenApiParameter("namespace", str, description="Namespace slug.")


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
        entities = _ns_filter(
            request,
            scope,
            Entity.objects.filter(namespace_id__in=scope.namespace_ids).within_ceiling(
                scope.ceiling
            ),
        ).select_related("namespace")
        return _paginate(request, self, entities, s.EntityOutput)

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
        relations = _ns_filter(request, scope, _visible_relations(scope))
        entity = _params(request).get("entity")
        if entity:
            key = fold(entity)
            relations = relations.filter(Q(subject__name=key) | Q(object__name=key))
        return _paginate(request, self, relations, s.RelationOutput)

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
        relation = get_object_or_404(_visible_relations(Scope.of(request)), pk=pk)
        relation.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


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
        digests = _ns_filter(
            request,
            scope,
            Consolidation.objects.filter(namespace_id__in=scope.namespace_ids).within_ceiling(
                scope.ceiling
            ),
        ).select_related("namespace")
        period = _params(request).get("period")
        if period:
            digests = digests.filter(period=period)
        paginator = CursorPagination()
        page = paginator.paginate_queryset(digests.order_by("-created_at", "-id"), request, self)
        hidden = quotes_hidden(page, scope.ceiling)
        page = [digest for digest in page if digest.pk not in hidden]
        return paginator.get_paginated_response(s.ConsolidationOutput(page, many=True).data)


# --- Tokens ---------------------------------------------------------------------------


class TokenListView(APIView):
    permission_classes = [SessionOnly]

    @extend_schema(
        responses=s.TokenOutput(many=True),
        operation_id="tokens_list",
        tags=["tokens"],
        summary="List your API tokens (logged-in session only)",
    )
    def get(self, request: Request) -> Response:
        tokens = ApiToken.objects.filter(owner=request.user).prefetch_related("namespaces")
        return Response(s.TokenOutput(tokens, many=True).data)

    @extend_schema(
        request=s.TokenInput,
        responses={201: s.TokenCreatedOutput},
        tags=["tokens"],
        summary="Create a token; its secret is in this response only",
        examples=[
            OpenApiExample(
                "Agent token",
                request_only=True,
                value={
                    "name": "agent-42",
                    "namespaces": ["agent-42"],
                    "access": "write",
                    "ceiling": "internal",
                },
            )
        ],
    )
    def post(self, request: Request) -> Response:
        data = s.TokenInput(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        slugs = fields.pop("namespaces", [])
        namespaces = list(Namespace.objects.filter(owner=request.user, slug__in=slugs))
        missing = sorted(set(slugs) - {ns.slug for ns in namespaces})
        if missing:
            raise serializers.ValidationError(
                {"namespaces": [f"No such namespace: {', '.join(missing)}."]}
            )
        fields.setdefault("ceiling", Classification.INTERNAL)
        token, secret = services.token_create(owner=request.user, namespaces=namespaces, **fields)
        token.secret = secret
        return Response(s.TokenCreatedOutput(token).data, status=status.HTTP_201_CREATED)


class TokenRevokeView(APIView):
    permission_classes = [SessionOnly]

    @extend_schema(
        request=None,
        responses=s.TokenOutput,
        tags=["tokens"],
        summary="Revoke a token (refused from the next request on)",
    )
    def post(self, request: Request, pk: int) -> Response:
        token = get_object_or_404(ApiToken.objects.filter(owner=request.user), pk=pk)
        services.token_revoke(token=token)
        token.refresh_from_db()
        return Response(s.TokenOutput(token).data)


# --- Export and import ----------------------------------------------------------------


class NamespaceExportView(APIView):
    @extend_schema(
        responses={(200, "application/x-ndjson"): OpenApiTypes.STR},
        tags=["namespaces"],
        summary="Export a namespace as streamed JSON Lines (within this caller's ceiling)",
        description="See docs/api.md for the record types. Ends with an `end` record counting "
        "the lines, so a truncated copy is detected on import.",
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        scope = Scope.of(request)
        namespace = get_object_or_404(scope.namespaces(), slug=slug)
        response = StreamingHttpResponse(
            transfer.namespace_export(namespace=namespace, ceiling=scope.ceiling),
            content_type="application/x-ndjson",
        )
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response["Content-Disposition"] = f'attachment; filename="{slug}-{stamp}.jsonl"'
        return response


class JSONLinesParser(BaseParser):
    """Leaves the body unread: the import view streams its lines itself."""

    media_type = "application/x-ndjson"

    def parse(self, stream, media_type=None, parser_context=None):
        return stream


class NamespaceImportView(APIView):
    parser_classes = [JSONLinesParser]

    @extend_schema(
        request={"application/x-ndjson": OpenApiTypes.STR},
        parameters=[
            OpenApiParameter(
                "settings",
                str,
                enum=["keep", "apply"],
                description="`apply` copies the header's namespace settings; default `keep`.",
            )
        ],
        responses={201: OpenApiTypes.OBJECT, 202: OpenApiTypes.OBJECT},
        tags=["namespaces"],
        summary="Import a JSON Lines export into this namespace, all or nothing",
        description="Memories get new ids; the response maps old ids to new. A malformed, "
        "truncated or out-of-scope line writes nothing and the error names the line "
        "(`fields` maps `line N` to its fields' errors). A body over API_MAX_BODY_BYTES is "
        "imported in the background: 202 with a job to poll at `url`.",
        examples=[
            OpenApiExample(
                "Result",
                response_only=True,
                status_codes=["201"],
                value={
                    "counts": {"memory": 2, "association": 1},
                    "memory_ids": {"17": 301, "18": 302},
                },
            ),
            OpenApiExample(
                "A refused line",
                response_only=True,
                status_codes=["400"],
                value={
                    "error": {
                        "status": 400,
                        "code": "invalid_import",
                        "message": "line 7: keywords.0: Not a valid string.",
                        "fields": {"line 7": ["keywords.0: Not a valid string."]},
                    }
                },
            ),
            OpenApiExample(
                "Queued",
                response_only=True,
                status_codes=["202"],
                value={
                    "job": 12,
                    "status": "running",
                    "url": "https://engram.example.com/api/v1/namespaces/work/import/12",
                },
            ),
        ],
    )
    def post(self, request: Request, slug: str) -> Response:
        scope = Scope.of(request)
        namespace = get_object_or_404(scope.namespaces(), slug=slug)
        mode = request.query_params.get("settings", "keep")
        if mode not in ("keep", "apply"):
            raise serializers.ValidationError({"settings": ["Either keep or apply."]})
        content_type = request.content_type.split(";")[0].strip()
        if content_type not in ("application/x-ndjson", "application/jsonl", "text/plain"):
            raise UnsupportedMediaType(content_type)
        options = {
            "namespace": namespace,
            "ceiling": scope.ceiling,
            "actor": request.user,
            "apply_settings": mode == "apply",
        }
        # ApiBodyLimitMiddleware has checked the header against API_IMPORT_MAX_BYTES.
        if int(request.META.get("CONTENT_LENGTH") or 0) > settings.API_MAX_BODY_BYTES:
            # More than any other request may send: more than a web worker's timeout
            # allows to import (docs/api.md has the rates), so the worker does it.
            run = importer.import_job_create(body=request._request, **options)
            url = request.build_absolute_uri(
                reverse("api-import-job", kwargs={"slug": slug, "job": run.pk})
            )
            return Response(
                {"job": run.pk, "status": run.status, "url": url},
                status=status.HTTP_202_ACCEPTED,
                headers={"Location": url},
            )
        try:
            result = importer.namespace_import(lines=request._request, **options)
        except importer.ImportFailed as refused:
            fields = {refused.field: refused.messages}
            return Response(error_body(400, refused.api_code, str(refused), fields), status=400)
        return Response(result.as_dict(), status=status.HTTP_201_CREATED)


class NamespaceImportJobView(APIView):
    @extend_schema(
        responses={200: OpenApiTypes.OBJECT},
        tags=["namespaces"],
        summary="The state of a background import: running, ok (counts, ids) or failed",
        examples=[
            OpenApiExample(
                "Refused",
                response_only=True,
                status_codes=["200"],
                value={
                    "job": 12,
                    "status": "failed",
                    "started_at": "2026-11-24T09:00:00Z",
                    "finished_at": "2026-11-24T09:00:41Z",
                    "error": {
                        "status": 400,
                        "code": "invalid_import",
                        "message": "line 70412: embedding: Not valid base64.",
                        "fields": {"line 70412": ["embedding: Not valid base64."]},
                    },
                },
            )
        ],
    )
    def get(self, request: Request, slug: str, job: int) -> Response:
        namespace = get_object_or_404(Scope.of(request).namespaces(), slug=slug)
        jobs = BackgroundRun.objects.filter(kind=importer.IMPORT_KIND, namespace=namespace)
        return Response(importer.import_job_state(get_object_or_404(jobs, pk=job)))
