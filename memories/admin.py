from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from memories import services
from memories.models import (
    WEBHOOK_EVENTS,
    ApiToken,
    Association,
    BackgroundRun,
    Consolidation,
    Entity,
    Memory,
    MemoryEvent,
    Namespace,
    Relation,
    WebhookDelivery,
    WebhookSubscription,
)
from memories.services import webhooks as webhook_services
from memories.webhook_targets import target_refusal


class ViewOnlyAdmin(admin.ModelAdmin):
    """Shown, never added or edited in the admin: rows whose rules hold across tables (a
    link's ends, a relation's memory and a card's namespace are the row's own namespace's;
    a level is never below its memories'; a revoked token stays revoked) are written by
    the services alone, which the API, import, dashboard and worker share. Deleting stays
    where the model's own cascade keeps those rules."""

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class ServiceSaveAdmin(admin.ModelAdmin):
    """An admin whose save_model writes through a service: a ValidationError the service
    raises at the write (a concurrent writer took the slug between the form's check and the
    insert: memories.services.namespace_create turns the unique violation into one) comes
    back as the form's errors, as the API and the dashboard answer it, not as a 500.

    The refused attempt's transaction is rolled back (changeform_view runs in one); the
    page is then made again from the same POST, with the service's errors on the form, so
    nothing is saved twice."""

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ValidationError as error:
            if request.method != "POST" or hasattr(request, "_service_refusal"):
                raise
            request._service_refusal = error  # type: ignore[attr-defined]
            return super().changeform_view(request, object_id, form_url, extra_context)

    def get_form(self, request: HttpRequest, obj=None, change: bool = False, **kwargs: Any):
        form = super().get_form(request, obj, change, **kwargs)
        refusal = getattr(request, "_service_refusal", None)
        if refusal is None:
            return form

        class Refused(form):  # type: ignore[valid-type,misc]
            def _post_clean(self) -> None:
                super()._post_clean()
                # The form's own check may now see the clash too: each message once.
                refused = (
                    refusal.message_dict
                    if hasattr(refusal, "error_dict")
                    else {NON_FIELD_ERRORS: refusal.messages}
                )
                unsaid = {
                    field: [words for words in said if words not in self.errors.get(field, [])]
                    for field, said in refused.items()
                }
                if any(unsaid.values()):
                    self._update_errors(ValidationError({f: w for f, w in unsaid.items() if w}))

        return Refused


class NamespaceAdminForm(forms.ModelForm):
    """A new namespace is checked by memories.services.namespace_validate_new, as the API
    and the dashboard's are (the slug made from the name when left empty, a taken slug said
    in the service's words); a change by namespace_update, in save_model."""

    class Meta:
        model = Namespace
        fields = ["owner", "slug", *services.NAMESPACE_EDITABLE_FIELDS]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is None and "slug" in self.fields:
            self.fields["slug"].required = False  # the service makes it from the name

    def _adding(self) -> bool:
        return self.instance.pk is None

    def values(self) -> dict[str, Any]:
        """The new namespace's fields, as namespace_create takes them."""
        data = self.cleaned_data
        fields = {
            name: data[name]
            for name in services.NAMESPACE_EDITABLE_FIELDS
            if name in data and name not in ("name", "mode")
        }
        return {
            "owner": data.get("owner"),
            "name": data.get("name", ""),
            "slug": data.get("slug") or None,
            "mode": data.get("mode") or Namespace.Mode.PERSONAL,
            **fields,
        }

    def _get_validation_exclusions(self) -> set[str]:
        exclude = super()._get_validation_exclusions()
        if self._adding():
            # (owner, slug) is the service's check, in its words: not Django's first.
            exclude.add("owner")
        return exclude

    def _post_clean(self) -> None:
        super()._post_clean()
        if self.errors or not self._adding():
            return
        try:
            services.namespace_validate_new(**self.values())
        except ValidationError as error:
            self._update_errors(error)


@admin.register(Namespace)
class NamespaceAdmin(ServiceSaveAdmin):
    form = NamespaceAdminForm
    list_display = ["name", "slug", "owner", "mode", "scheduler", "new_cards_per_day", "created_at"]
    list_filter = ["mode", "scheduler", "decay_model"]
    search_fields = ["name", "slug", "owner__username"]
    list_select_related = ["owner"]
    prepopulated_fields = {"slug": ["name"]}
    fieldsets = [
        (None, {"fields": ["owner", "name", "slug", "description", "mode"]}),
        (
            "Ranking weights (empty: the mode's default)",
            {
                "fields": [
                    "weight_similarity",
                    "weight_recency",
                    "weight_utility",
                    "weight_confidence",
                ]
            },
        ),
        (
            "Decay (empty: the global setting)",
            {
                "fields": [
                    "decay_model",
                    "decay_half_life_days",
                    "decay_beta",
                    "decay_power_alpha",
                    "decay_fast_half_life_days",
                    "decay_slow_half_life_days",
                    "decay_fast_weight",
                ]
            },
        ),
        ("Review", {"fields": ["scheduler", "desired_retention", "new_cards_per_day"]}),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Namespace | None = None) -> list[str]:
        # A namespace's owner and slug never change: tokens, exports and URLs name them.
        return ["owner", "slug"] if obj else []

    def get_prepopulated_fields(self, request: HttpRequest, obj: Namespace | None = None) -> dict:
        return {} if obj else self.prepopulated_fields

    def save_model(self, request: HttpRequest, obj: Namespace, form, change: bool) -> None:
        if not change:
            # Through the service, as the API and dashboard create one.
            created = services.namespace_create(**form.values())
            obj.pk = created.pk
            obj.refresh_from_db()
            return
        # Through the service, as the API and dashboard change settings (a decay_fit mode
        # applies its fit there).
        changes = {
            name: form.cleaned_data[name]
            for name in form.changed_data
            if name in services.NAMESPACE_EDITABLE_FIELDS
        }
        services.namespace_update(namespace=obj, changes=changes)


class MemoryEventInline(admin.TabularInline):
    model = MemoryEvent
    fk_name = "memory"
    extra = 0
    can_delete = False
    fields = ["created_at", "kind", "source", "actor", "before", "after"]
    readonly_fields = fields
    ordering = ["-created_at"]

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


# The memory form's sections: the editable fields (memories.services.EDITABLE_FIELDS) in
# three, in their declared order, then what the server owns, read-only (all of
# SERVER_FIELDS but storage, a list column and filter, and stability, which the form has
# never shown; updated_at last).
_TEXT = frozenset({"content", "content_original", "language", "keywords"})
_CLASSIFICATION = frozenset(
    {"topic", "cue", "memory_type", "tier", "classification", "expires_at", "valid_until"}
)
_SIGNALS = frozenset(services.EDITABLE_FIELDS) - _TEXT - _CLASSIFICATION
_STATE = [
    "current_decay_score",
    *(n for n in services.SERVER_FIELDS if n not in {"storage", "stability", "updated_at"}),
    "search_text",
    "updated_at",
]


def _editable(names: frozenset[str]) -> list[str]:
    return [name for name in services.EDITABLE_FIELDS if name in names]


class MemoryAdminForm(forms.ModelForm):
    """The admin's memory form refuses what the services refuse, as form errors: the same
    validation (memories.services.memory_validate) the API, import and dashboard run."""

    class Meta:
        model = Memory
        fields = ["namespace", *services.EDITABLE_FIELDS]

    def _post_clean(self) -> None:
        super()._post_clean()
        if self.errors:
            return
        try:
            services.memory_validate(self.instance)
        except ValidationError as error:
            self._update_errors(error)


@admin.register(Memory)
class MemoryAdmin(ServiceSaveAdmin):
    form = MemoryAdminForm
    list_display = [
        "id",
        "short_content",
        "namespace",
        "topic",
        "tier",
        "status",
        "storage",
        "classification",
        "use_count",
        "current_decay_score",
        "created_at",
    ]
    list_filter = ["status", "tier", "storage", "memory_type", "classification", "namespace"]
    search_fields = ["content", "topic", "=id"]
    list_select_related = ["namespace"]
    date_hierarchy = "created_at"
    readonly_fields = [*_STATE, "search_original", "search_pairs"]
    inlines = [MemoryEventInline]
    fieldsets = [
        (None, {"fields": ["namespace", *_editable(_TEXT)]}),
        ("Classification", {"fields": _editable(_CLASSIFICATION)}),
        ("Signals", {"fields": _editable(_SIGNALS)}),
        ("State (owned by the server)", {"fields": _STATE}),
    ]
    # review/admin.py adds "review_now": cards are review's, and memories does not import it.
    actions = ["forget_selected", "restore_selected", "promote_selected"]

    def get_readonly_fields(self, request: HttpRequest, obj: Memory | None = None) -> list[str]:
        # A memory never moves between namespaces.
        return [*self.readonly_fields, "namespace"] if obj else list(self.readonly_fields)

    @admin.display(description="content")
    def short_content(self, memory: Memory) -> str:
        return str(memory)

    @admin.display(description="decay score")
    def current_decay_score(self, memory: Memory) -> str:
        return f"{memory.decay_score(timezone.now()):.3f}"

    def save_model(self, request: HttpRequest, obj: Memory, form, change: bool) -> None:
        # Admin edits go through the services so derived fields and history stay right.
        fields = {
            name: form.cleaned_data[name]
            for name in services.EDITABLE_FIELDS
            if name in form.cleaned_data
        }
        if change:
            changes = {name: value for name, value in fields.items() if name in form.changed_data}
            services.memory_update(memory=obj, changes=changes, actor=request.user, source="admin")
            obj.refresh_from_db()
        else:
            content = fields.pop("content")
            keywords = fields.pop("keywords", None)
            created = services.memory_create(
                namespace=form.cleaned_data["namespace"],
                content=content,
                keywords=keywords,
                actor=request.user,
                source="admin",
                **fields,
            )
            obj.pk = created.pk
            obj.refresh_from_db()

    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        services.memory_purge(memory=obj, actor=request.user, source="admin")

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        for memory in queryset:
            services.memory_purge(memory=memory, actor=request.user, source="admin")

    @admin.action(description="Forget selected memories")
    def forget_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        for memory in queryset:
            services.memory_forget(
                memory=memory, reason="forgotten in the admin", actor=request.user, source="admin"
            )
        self.message_user(request, f"Forgot {queryset.count()} memories.", messages.SUCCESS)

    @admin.action(description="Restore selected memories")
    def restore_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        for memory in queryset:
            services.memory_restore(memory=memory, actor=request.user, source="admin")
        self.message_user(request, f"Restored {queryset.count()} memories.", messages.SUCCESS)

    @admin.action(description="Promote selected memories to long-term")
    def promote_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        for memory in queryset:
            services.memory_promote(memory=memory, actor=request.user, source="admin")
        self.message_user(request, "Promoted the selected short-term memories.", messages.SUCCESS)


@admin.register(MemoryEvent)
class MemoryEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "memory_ref", "kind", "source", "actor", "namespace"]
    list_filter = ["kind", "source"]
    search_fields = ["=memory_ref"]
    list_select_related = ["namespace", "actor"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Association)
class AssociationAdmin(ViewOnlyAdmin):
    list_display = ["source", "target", "weight", "kind", "namespace"]
    list_filter = ["kind"]
    raw_id_fields = ["source", "target"]
    list_select_related = ["source", "target", "namespace"]


@admin.register(Entity)
class EntityAdmin(ViewOnlyAdmin):
    list_display = ["name", "display_name", "kind", "namespace"]
    list_filter = ["kind"]
    search_fields = ["name", "display_name"]
    list_select_related = ["namespace"]


@admin.register(Relation)
class RelationAdmin(ViewOnlyAdmin):
    list_display = ["subject", "predicate", "object", "weight", "namespace"]
    list_filter = ["predicate"]
    search_fields = ["subject__name", "object__name", "predicate"]
    raw_id_fields = ["subject", "object", "memory"]
    list_select_related = ["subject", "object", "namespace"]


@admin.register(Consolidation)
class ConsolidationAdmin(ViewOnlyAdmin):
    list_display = ["period", "period_start", "topic", "namespace", "created_at"]
    list_filter = ["period"]
    search_fields = ["topic", "text"]
    list_select_related = ["namespace"]


@admin.register(ApiToken)
class ApiTokenAdmin(ViewOnlyAdmin):
    list_display = [
        "name",
        "prefix",
        "owner",
        "access",
        "ceiling",
        "all_namespaces",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["access", "ceiling", "all_namespaces"]
    search_fields = ["name", "prefix", "owner__username"]
    list_select_related = ["owner"]
    readonly_fields = ["prefix", "secret_hash", "last_used_at", "created_at"]
    # Tokens are created from the dashboard or the API, where the secret is shown once, and
    # changed only by revoking (the action below): an owner, scope or revocation edited
    # here would give a secret a user holds powers the user never granted it.
    actions = ["revoke_selected"]

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        # Revoked, not deleted: revocation takes effect on the next request (the token
        # cache's generation), and the row keeps when it was used.
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        live = list(queryset.filter(revoked_at__isnull=True))
        now = timezone.now()  # one revocation time for the batch, as one UPDATE would give
        for token in live:
            services.token_revoke(token=token, now=now)
        self.message_user(request, f"Revoked {len(live)} tokens.", messages.SUCCESS)


# --- Webhooks (issue 16) ----------------------------------------------------------------


class WebhookSubscriptionForm(forms.ModelForm):
    """The services' checks as form errors, so a refused URL is shown beside the field."""

    url = forms.URLField(max_length=2000, assume_scheme="https")

    class Meta:
        model = WebhookSubscription
        fields = ["namespace", "url", "description", "events", "ceiling", "enabled"]

    def clean_url(self) -> str:
        url = self.cleaned_data["url"]
        refusal = target_refusal(url)
        if refusal:
            raise forms.ValidationError(refusal)
        return url

    def clean_events(self) -> list[str]:
        events = self.cleaned_data["events"] or list(WEBHOOK_EVENTS)
        if not isinstance(events, list) or set(events) - set(WEBHOOK_EVENTS):
            raise forms.ValidationError(f"A list of: {', '.join(WEBHOOK_EVENTS)}.")
        return events


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(ServiceSaveAdmin):
    form = WebhookSubscriptionForm
    list_display = [
        "url",
        "namespace",
        "ceiling",
        "enabled",
        "consecutive_failures",
        "disabled_reason",
        "created_at",
    ]
    list_filter = ["enabled", "ceiling"]
    search_fields = ["url", "description", "namespace__slug", "namespace__owner__username"]
    list_select_related = ["namespace", "namespace__owner"]
    fields = ["namespace", "url", "description", "events", "ceiling", "enabled"]
    readonly_fields = ["consecutive_failures", "disabled_reason", "disabled_at"]
    raw_id_fields = ["namespace"]
    actions = ["enable_selected", "disable_selected"]

    def get_fields(self, request: HttpRequest, obj=None) -> list[str]:
        return self.fields + (self.readonly_fields if obj else [])

    def save_model(self, request: HttpRequest, obj: WebhookSubscription, form, change) -> None:
        """Through the services (the form ran their checks): a new secret is shown once."""
        if change:
            changes = {name: getattr(obj, name) for name in form.changed_data}
            webhook_services.webhook_subscription_update(subscription=obj, changes=changes)
            return
        created = webhook_services.webhook_subscription_create(
            namespace=obj.namespace,
            url=obj.url,
            events=obj.events or list(WEBHOOK_EVENTS),
            ceiling=obj.ceiling,
            description=obj.description,
            enabled=obj.enabled,
        )
        obj.pk = created.pk
        self.message_user(
            request,
            f"The signing secret, shown this once: {created.secret}",
            messages.WARNING,
        )

    @admin.action(description="Enable selected subscriptions (clears their failures)")
    def enable_selected(self, request: HttpRequest, queryset) -> None:
        for subscription in queryset:
            webhook_services.webhook_subscription_update(
                subscription=subscription, changes={"enabled": True}
            )

    @admin.action(description="Disable selected subscriptions")
    def disable_selected(self, request: HttpRequest, queryset) -> None:
        for subscription in queryset:
            webhook_services.webhook_subscription_update(
                subscription=subscription, changes={"enabled": False}
            )


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = [
        "webhook_id",
        "event_type",
        "subscription",
        "status",
        "attempts",
        "last_response_code",
        "last_duration_ms",
        "next_attempt_at",
        "created_at",
    ]
    list_filter = ["status", "event_type", "last_response_code"]
    search_fields = ["webhook_id", "subscription__url"]
    list_select_related = ["subscription", "subscription__namespace"]
    actions = ["redeliver_selected"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.action(description="Redeliver selected (same webhook-id)")
    def redeliver_selected(self, request: HttpRequest, queryset) -> None:
        count = 0
        for delivery in queryset:
            webhook_services.webhook_delivery_redeliver(delivery=delivery)
            count += 1
        self.message_user(request, f"Queued {count} deliveries again.", messages.SUCCESS)


# --- Background work (issue 6) ----------------------------------------------------------


@admin.register(BackgroundRun)
class BackgroundRunAdmin(admin.ModelAdmin):
    """What each background run did; written by the tasks, read-only here."""

    list_display = [
        "started_at",
        "kind",
        "namespace",
        "status",
        "duration",
        "summary",
        "attempt",
    ]
    list_filter = ["kind", "status", "started_at"]
    search_fields = ["error", "task_id", "namespace__slug"]
    list_select_related = ["namespace"]
    date_hierarchy = "started_at"
    readonly_fields = [
        "kind",
        "namespace",
        "status",
        "started_at",
        "finished_at",
        "duration",
        "counts",
        "error",
        "task_id",
        "attempt",
    ]
    fields = readonly_fields

    SUMMARY_KEYS = (
        "promoted",
        "core",
        "forgotten",
        "cold",
        "archived",
        "merged",
        "purged",
        "reviewed",
        "cards_created",
        "digests_written",
        "embedded",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.display(description="duration")
    def duration(self, run: BackgroundRun) -> str:
        seconds = run.duration_seconds
        return "—" if seconds is None else f"{seconds:.2f} s"

    @admin.display(description="what it did")
    def summary(self, run: BackgroundRun) -> str:
        if run.status == BackgroundRun.Status.FAILED:
            return (run.error.splitlines() or [""])[0][:120]
        counts = run.counts or {}
        parts = [f"{key} {counts[key]}" for key in self.SUMMARY_KEYS if counts.get(key)]
        return ", ".join(parts) or "nothing to do"
