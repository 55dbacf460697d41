"""Memory endpoints: list, store (one or in bulk), read, change, forget, restore, touch,
purge, a memory's history, what to reinforce, the about-to-forget digest and actions on
memories named by id. Every lookup goes through the caller's Scope, so ids outside it 404
(400 naming `ids` in an action's body)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import CursorPagination
from config.serializers import require_no_body
from memories import selectors, services
from memories import serializers as s
from memories.api.common import ERROR_EXAMPLE, LIST_PARAMETERS, paginate
from memories.auth import Scope
from memories.models import ApiToken, Classification, Memory, MemoryEvent

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


def _superseded(scope: Scope, ids: list[int] | None) -> list[Memory]:
    """The memories `supersedes` names, among those the caller can see (any other id is
    "No such memory.", as for a memory of another user)."""
    if not ids:
        return []
    found = {m.pk: m for m in scope.memories().filter(pk__in=ids)}
    if len(found) != len(set(ids)):
        raise serializers.ValidationError({"supersedes": ["No such memory."]})
    return [found[pk] for pk in dict.fromkeys(ids)]


def _source(request: Request) -> str:
    return "api" if isinstance(request.auth, ApiToken) else "dashboard"


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
        filters = dict(params.validated_data)
        if "namespace" in filters:
            filters["namespace"] = scope.namespace(filters["namespace"])  # unknown: a 400
        # No ordering here: the cursor paginator sorts newest first.
        memories = selectors.memory_list(scope=scope, filters=filters)
        return paginate(request, self, memories, s.MemoryOutput, now=timezone.now())

    @extend_schema(
        request=s.MemoryCreateInput,
        responses={201: s.MemoryWritten, 200: s.MemoryWritten},
        tags=["memories"],
        summary="Store a memory",
        description="201 with the new memory; 200 with the memory that already holds the "
        "same text when the namespace dedupes (`deduplicated: true`, counted as a use).",
        examples=[MEMORY_EXAMPLE, ERROR_EXAMPLE],
    )
    def post(self, request: Request) -> Response:
        scope = Scope.of(request)
        fields = s.validate_memory_input(request.data)
        namespace = scope.namespace(fields.pop("namespace"))
        fields.setdefault("classification", scope.default_classification)
        _check_ceiling(scope, fields["classification"])
        fields["supersedes"] = _superseded(scope, fields.pop("supersedes", None))
        memory = services.memory_create(
            namespace=namespace,
            actor=request.user,
            source=_source(request),
            prevalidated=True,  # MemoryCreateInput holds every model field rule
            dedupe_ceiling=scope.ceiling,
            **fields,
        )
        body = s.memory_representation(memory) | {"deduplicated": memory.deduplicated}
        return Response(
            body, status=status.HTTP_200_OK if memory.deduplicated else status.HTTP_201_CREATED
        )


class MemoryBulkView(APIView):
    @extend_schema(
        request=s.BulkCreateInput,
        responses={201: s.MemoryWritten(many=True)},
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
        errors: dict[str, Any] = {}
        validated: list[tuple[int, dict[str, Any]]] = []
        for index, raw in enumerate(envelope.validated_data["memories"]):
            raw = dict(raw)
            if default_ns is not None:
                raw.setdefault("namespace", default_ns)
            elif "namespace" not in raw:
                # Not "may not be null": the caller sent no null, it left both out.
                errors[str(index)] = {
                    "namespace": ["This field is required, in the item or for the request."]
                }
                continue
            try:
                # One serializer for every item: a new one per item would deep-copy its
                # twenty declared fields each time, more work than the validation itself.
                validated.append((index, s.validate_memory_input(raw)))
            except serializers.ValidationError as exc:
                errors[str(index)] = exc.detail
        namespaces = scope.namespaces_named(fields["namespace"] for _, fields in validated)
        items: list[dict[str, Any]] = []
        for index, fields in validated:
            namespace = namespaces.get(fields.pop("namespace"))
            if namespace is None:
                errors[str(index)] = {"namespace": ["No such namespace."]}
                continue
            fields.setdefault("classification", scope.default_classification)
            if fields["classification"] > scope.ceiling:
                errors[str(index)] = {"classification": ["Above this token's ceiling."]}
                continue
            try:
                fields["supersedes"] = _superseded(scope, fields.pop("supersedes", None))
            except serializers.ValidationError as exc:
                errors[str(index)] = exc.detail
                continue
            items.append({"namespace": namespace, **fields})
        if errors:
            ordered = dict(sorted(errors.items(), key=lambda item: int(item[0])))
            raise serializers.ValidationError({"memories": ordered})
        try:
            created = services.memory_bulk_create(
                items=items,
                actor=request.user,
                source=_source(request),
                prevalidated=True,  # MemoryCreateInput holds every model field rule
                dedupe_ceiling=scope.ceiling,
            )
        except DjangoValidationError as exc:
            # The service names "<index>.<field>"; answer in this endpoint's shape.
            nested: dict[str, dict[str, list[str]]] = {}
            for key, messages in exc.message_dict.items():
                index, _, field = key.partition(".")
                nested.setdefault(index, {})[field or "non_field_errors"] = messages
            raise serializers.ValidationError({"memories": nested}) from exc
        body = s.MemoryOutput(created, many=True).data
        for item, memory in zip(body, created, strict=True):
            item["deduplicated"] = memory.deduplicated
        return Response(body, status=status.HTTP_201_CREATED)


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
        require_no_body(request)
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
        require_no_body(request)
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


class MemoryReinforceView(APIView):
    @extend_schema(
        parameters=[s.ReinforceFilter],
        responses=s.ReinforceOutput(many=True),
        operation_id="memories_reinforce",
        tags=["memories"],
        summary="Memories fading toward forgetting that are worth revisiting",
        description="First the memories decay will forget within FORGET_DIGEST_DAYS unless "
        "they are used (forget_at says when, soonest first), then seed 003's review "
        "candidates: live, current memories whose decay score is in the review danger zone, "
        "the most urgent first. Recalling or touching one strengthens it.",
    )
    def get(self, request: Request) -> Response:
        scope = Scope.of(request)
        params = s.ReinforceFilter(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        slug = params.validated_data.get("namespace")
        found = selectors.reinforce_candidates(
            scope=scope,
            namespace=scope.namespace(slug) if slug else None,
            limit=params.validated_data["limit"],
        )
        items = [
            {"memory": memory, "score": round(score, 6), "forget_at": forget_at}
            for memory, score, forget_at in found
        ]
        context = {"request": request, "now": timezone.now()}
        return Response(s.ReinforceOutput(items, many=True, context=context).data)


class MemoryForgettingView(APIView):
    @extend_schema(
        parameters=[s.ForgettingFilter],
        responses=s.ForgettingOutput,
        operation_id="memories_forgetting",
        tags=["memories"],
        summary="The about-to-forget digest: what decay will forget within FORGET_DIGEST_DAYS",
        description="The dashboard's digest (/memories/forgetting/): how many active "
        "short-term memories within the caller's reach decay will forget by `by` unless they "
        "are used, and the first `limit` of them, soonest first, each with `forget_at` and "
        "its score now. Keep (`keep`), Review now (`review_now`) and Let go (`forget` with a "
        "reason) are POST /memories/actions.",
    )
    def get(self, request: Request) -> Response:
        scope = Scope.of(request)
        params = s.ForgettingFilter(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        slug = params.validated_data.get("namespace")
        now = timezone.now()
        digest = selectors.about_to_forget(
            scope=scope,
            now=now,
            days=settings.FORGET_DIGEST_DAYS,
            namespace=scope.namespace(slug) if slug else None,
            limit=params.validated_data["limit"],
        )
        body = {
            "count": digest.count,
            "days": digest.days,
            "by": digest.by,
            "memories": [
                {"memory": memory, "score": round(score, 6), "forget_at": forget_at}
                for memory, forget_at, score in digest.memories
            ],
        }
        context = {"request": request, "now": now}
        return Response(s.ForgettingOutput(body, context=context).data)


class MemoryActionView(APIView):
    @extend_schema(
        request=s.MemoryActionInput,
        responses=s.MemoryActionOutput,
        operation_id="memories_act",
        tags=["memories"],
        summary="Act on memories named by id (keep, review_now, forget...), all or nothing",
        description="The dashboard's bulk actions on up to 500 memories: `keep` (a use with "
        "the boost, as POST /memories/{id}/touch with boost_strength), `review_now` (their "
        "cards due now; a memory without one gets one), `forget` (with `reason`), "
        "`restore`, `move` (with `topic`), `classify` (with `classification`), `suspend`, "
        "`unsuspend`, `bury`, `unbury`. An id outside the caller's reach is a 400 naming "
        "`ids` and nothing is written.",
        examples=[
            OpenApiExample(
                "Let go",
                request_only=True,
                value={"action": "forget", "ids": [12, 14], "reason": "let go"},
            )
        ],
    )
    def post(self, request: Request) -> Response:
        scope = Scope.of(request)
        data = s.MemoryActionInput(data=request.data)
        data.is_valid(raise_exception=True)
        ids = list(dict.fromkeys(data.validated_data["ids"]))
        memories = scope.memories().filter(pk__in=ids)
        if memories.count() != len(ids):
            raise serializers.ValidationError({"ids": ["No such memory."]})
        action, values, changed = services.memories_bulk_apply(
            action=data.validated_data["action"],
            memories=memories,
            params={
                name: data.validated_data.get(name)
                for name in ("reason", "topic", "classification")
            },
            actor=request.user,
            source=_source(request),
            ceiling=scope.ceiling,
        )
        text = services.bulk_action_text(action, values, count=changed, selected=len(ids))
        body = {"action": action.name, "selected": len(ids), "changed": changed, "message": text}
        return Response(s.MemoryActionOutput(body).data)
