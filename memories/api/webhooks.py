"""Webhook endpoints: a namespace's subscriptions, their delivery log, redelivery.

Reads need the namespace in the caller's scope, writes a session or a write token over
it. A subscription above the caller's ceiling answers 404 like a missing one (its log
describes data up to its own ceiling), and a caller cannot create one above its own.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.serializers import (
    StrictBooleanField,
    StrictCharField,
    StrictSerializer,
    require_no_body,
)
from memories.api.common import ERROR_EXAMPLE, LIST_PARAMETERS, paginate
from memories.auth import Scope
from memories.models import WEBHOOK_EVENTS, WebhookDelivery, WebhookSubscription
from memories.serializers import ClassificationField, page_of
from memories.services import webhooks as services


def _subscriptions(scope: Scope) -> QuerySet[WebhookSubscription]:
    return WebhookSubscription.objects.visible_to(
        namespace_ids=scope.namespace_ids, ceiling=scope.ceiling
    ).select_related("namespace")


def _validated(serializer: StrictSerializer) -> dict:
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _service(call, **kwargs):
    """A service's field errors as the API's 400 naming each field."""
    try:
        return call(**kwargs)
    except DjangoValidationError as error:
        raise serializers.ValidationError(error.message_dict) from None


class SubscriptionOutput(serializers.ModelSerializer):
    namespace = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    ceiling = ClassificationField()
    events = serializers.ListField(child=serializers.CharField())

    class Meta:
        model = WebhookSubscription
        fields = [
            "id",
            "namespace",
            "url",
            "description",
            "events",
            "ceiling",
            "enabled",
            "consecutive_failures",
            "disabled_reason",
            "disabled_at",
            "created_at",
            "updated_at",
        ]


class SubscriptionCreatedOutput(SubscriptionOutput):
    secret = serializers.CharField(help_text="Shown in this response only.")

    class Meta(SubscriptionOutput.Meta):
        fields = [*SubscriptionOutput.Meta.fields, "secret"]


class SubscriptionInput(StrictSerializer):
    url = StrictCharField(max_length=2000)
    description = StrictCharField(max_length=200, required=False, allow_blank=True)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=WEBHOOK_EVENTS),
        min_length=1,
        max_length=len(WEBHOOK_EVENTS),
        required=False,
        help_text="Default: every event.",
    )
    ceiling = ClassificationField(
        required=False, help_text="Default: internal, or your ceiling if lower."
    )
    enabled = StrictBooleanField(required=False)


class SubscriptionUpdateInput(SubscriptionInput):
    url = StrictCharField(max_length=2000, required=False)


class DeliveryOutput(serializers.ModelSerializer):
    """The log of one delivery (its payload is shown on the dashboard, not here)."""

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "event_type",
            "webhook_id",
            "memory_ref",
            "status",
            "attempts",
            "last_response_code",
            "last_duration_ms",
            "last_error",
            "next_attempt_at",
            "last_attempt_at",
            "delivered_at",
            "created_at",
        ]


class NamespaceWebhookListView(APIView):
    @extend_schema(
        responses=SubscriptionOutput(many=True),
        operation_id="namespace_webhooks_list",
        tags=["webhooks"],
        summary="List a namespace's webhook subscriptions",
    )
    def get(self, request: Request, slug: str) -> Response:
        scope = Scope.of(request)
        namespace = get_object_or_404(scope.namespaces(), slug=slug)
        subscriptions = _subscriptions(scope).filter(namespace=namespace).order_by("id")
        return Response(SubscriptionOutput(subscriptions, many=True).data)

    @extend_schema(
        request=SubscriptionInput,
        responses={201: SubscriptionCreatedOutput},
        tags=["webhooks"],
        summary="Subscribe a URL to a namespace's events; the secret is in this response only",
        examples=[
            OpenApiExample(
                "Created and forgotten memories",
                request_only=True,
                value={
                    "url": "https://example.com/hooks/engram",
                    "events": ["memory.created", "memory.forgotten"],
                    "ceiling": "internal",
                },
            ),
            ERROR_EXAMPLE,
        ],
    )
    def post(self, request: Request, slug: str) -> Response:
        scope = Scope.of(request)
        namespace = get_object_or_404(scope.namespaces(), slug=slug)
        fields = _validated(SubscriptionInput(data=request.data))
        subscription = _service(
            services.webhook_subscription_create,
            namespace=namespace,
            max_ceiling=scope.ceiling,
            **fields,
        )
        return Response(
            SubscriptionCreatedOutput(subscription).data, status=status.HTTP_201_CREATED
        )


class WebhookDetailView(APIView):
    @extend_schema(
        responses=SubscriptionOutput, tags=["webhooks"], summary="Get a webhook subscription"
    )
    def get(self, request: Request, pk: int) -> Response:
        subscription = get_object_or_404(_subscriptions(Scope.of(request)), pk=pk)
        return Response(SubscriptionOutput(subscription).data)

    @extend_schema(
        request=SubscriptionUpdateInput,
        responses=SubscriptionOutput,
        tags=["webhooks"],
        summary="Change a subscription (enabling it again clears its failures)",
    )
    def patch(self, request: Request, pk: int) -> Response:
        scope = Scope.of(request)
        subscription = get_object_or_404(_subscriptions(scope), pk=pk)
        changes = _validated(SubscriptionUpdateInput(data=request.data))
        subscription = _service(
            services.webhook_subscription_update,
            subscription=subscription,
            changes=changes,
            max_ceiling=scope.ceiling,
        )
        return Response(SubscriptionOutput(subscription).data)

    @extend_schema(
        responses={204: None}, tags=["webhooks"], summary="Delete a subscription and its log"
    )
    def delete(self, request: Request, pk: int) -> Response:
        require_no_body(request)
        subscription = get_object_or_404(_subscriptions(Scope.of(request)), pk=pk)
        services.webhook_subscription_delete(subscription=subscription)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookDeliveryListView(APIView):
    @extend_schema(
        parameters=LIST_PARAMETERS,
        responses=page_of(DeliveryOutput),
        tags=["webhooks"],
        summary="A subscription's delivery log, newest first",
    )
    def get(self, request: Request, pk: int) -> Response:
        subscription = get_object_or_404(_subscriptions(Scope.of(request)), pk=pk)
        deliveries = WebhookDelivery.objects.filter(subscription=subscription).order_by("-id")
        return paginate(request, self, deliveries, DeliveryOutput)


class WebhookRedeliverView(APIView):
    @extend_schema(
        request=None,
        responses=DeliveryOutput,
        tags=["webhooks"],
        summary="Send a delivery again, with the same webhook-id",
    )
    def post(self, request: Request, pk: int) -> Response:
        require_no_body(request)
        scope = Scope.of(request)
        delivery = get_object_or_404(
            WebhookDelivery.objects.filter(subscription__in=_subscriptions(scope)), pk=pk
        )
        delivery = services.webhook_delivery_redeliver(delivery=delivery)
        return Response(DeliveryOutput(delivery).data)
