from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from memories.admin import MemoryAdmin, ViewOnlyAdmin
from memories.models import Memory
from review.models import Card, ReviewLog, StudySession, StudySessionItem
from review.services import card_reschedule_now


class ReviewMemoryAdmin(MemoryAdmin):
    """Memories' admin with review's action added: memories does not know about cards."""

    actions = [*MemoryAdmin.actions, "review_now"]

    @admin.action(description="Schedule selected memories for review now")
    def review_now(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        count = card_reschedule_now(memories=queryset)
        self.message_user(request, f"{count} cards are due now.", messages.SUCCESS)


admin.site.unregister(Memory)
admin.site.register(Memory, ReviewMemoryAdmin)


@admin.register(Card)
class CardAdmin(ViewOnlyAdmin):
    list_display = [
        "memory",
        "namespace",
        "scheduler",
        "easiness",
        "interval_days",
        "repetitions",
        "next_review",
        "last_quality",
        "total_reviews",
        "correct_reviews",
    ]
    list_filter = ["scheduler", "namespace"]
    search_fields = ["memory__content", "=memory__id"]
    list_select_related = ["memory", "namespace"]
    raw_id_fields = ["memory"]
    # Written by the review services only (a card's namespace is its memory's); the
    # action below reschedules through them. Never deleted here: every memory has its card.
    actions = ["review_now"]

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.action(description="Schedule selected cards for review now")
    def review_now(self, request: HttpRequest, queryset: QuerySet[Card]) -> None:
        count = card_reschedule_now(memories=Memory.objects.filter(card__in=queryset))
        self.message_user(request, f"{count} cards are due now.", messages.SUCCESS)


@admin.register(ReviewLog)
class ReviewLogAdmin(ViewOnlyAdmin):
    list_display = ["reviewed_at", "card", "grade", "source", "mode", "user", "namespace"]
    list_filter = ["source", "mode", "grade"]
    list_select_related = ["card__memory", "namespace", "user"]
    date_hierarchy = "reviewed_at"
    readonly_fields = [
        "card",
        "namespace",
        "grade",
        "source",
        "mode",
        "state_before",
        "state_after",
        "user",
        "reviewed_at",
    ]

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        # The history of a card: undo and the statistics read it.
        return False


class StudySessionItemInline(admin.TabularInline):
    model = StudySessionItem
    extra = 0
    can_delete = False
    fields = [
        "position",
        "card",
        "deck",
        "attempts",
        "first_grade",
        "last_grade",
        "correct",
        "done",
    ]
    readonly_fields = fields


@admin.register(StudySession)
class StudySessionAdmin(ViewOnlyAdmin):
    list_display = [
        "id",
        "namespace",
        "user",
        "mode",
        "deck",
        "status",
        "started_at",
        "finished_at",
    ]
    list_filter = ["mode", "status"]
    list_select_related = ["namespace", "user"]
    inlines = [StudySessionItemInline]
    readonly_fields = [
        "namespace",
        "user",
        "mode",
        "deck",
        "status",
        "started_at",
        "updated_at",
        "finished_at",
    ]
