"""API token endpoints, for a logged-in session only: a token cannot manage tokens."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.serializers import require_no_body
from memories import serializers as s
from memories import services
from memories.auth import SessionOnly
from memories.models import ApiToken, Classification, Namespace


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
        require_no_body(request)
        token = get_object_or_404(ApiToken.objects.filter(owner=request.user), pk=pk)
        services.token_revoke(token=token)
        token.refresh_from_db()
        return Response(s.TokenOutput(token).data)
