"""Namespace endpoints: list, create, read and change the caller's namespaces, and their
decay fits."""

from __future__ import annotations

from django.db.models import Count, Q
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.serializers import require_no_body
from memories import serializers as s
from memories import services
from memories.api.common import ERROR_EXAMPLE
from memories.auth import Scope

# The most fits GET lists (one a day is half a year).
FITS_LISTED = 180


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


class NamespaceDecayFitsView(APIView):
    @extend_schema(
        responses=s.DecayFitOutput(many=True),
        operation_id="namespace_decay_fits_list",
        tags=["namespaces"],
        summary="The history of a namespace's decay fits, newest first",
        description="Each fit of the namespace's decay to its own uses (decay_fit suggest or "
        "auto: daily in the worker; or asked for with POST), with its data size, the "
        "validation log loss of the fitted and of the constant parameters, and whether it "
        "was accepted and applied. Fits learnt from memories above the caller's ceiling are "
        "left out.",
    )
    def get(self, request: Request, slug: str) -> Response:
        scope = Scope.of(request)
        namespace = get_object_or_404(scope.namespaces(), slug=slug)
        fits = services.decay_fits_visible(namespace, ceiling=scope.ceiling)[:FITS_LISTED]
        for fit in fits:
            fit.namespace = namespace
        return Response(s.DecayFitOutput(fits, many=True).data)

    @extend_schema(
        request=None,
        responses={
            202: inline_serializer("DecayFitQueued", {"queued": serializers.BooleanField()})
        },
        operation_id="namespace_decay_fits_create",
        tags=["namespaces"],
        summary="Fit the namespace's decay to its uses now, in the worker",
        description="Queues a fit whatever decay_fit says (under off it is only shown); the "
        "result appears in GET within seconds. Under auto, an accepted fit applies at once.",
    )
    def post(self, request: Request, slug: str) -> Response:
        require_no_body(request)
        namespace = get_object_or_404(Scope.of(request).namespaces(), slug=slug)
        services.decay_fit_request(namespace=namespace)
        return Response({"queued": True}, status=status.HTTP_202_ACCEPTED)
