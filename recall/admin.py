from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from recall.models import RecallEvent


@admin.register(RecallEvent)
class RecallEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "query", "namespace", "duration_ms", "result_count", "token"]
    search_fields = ["query"]
    list_filter = ["namespace"]
    list_select_related = ["namespace", "token"]
    date_hierarchy = "created_at"
    readonly_fields = [
        "namespace",
        "token",
        "user",
        "query",
        "filters",
        "stage_timings",
        "result_ids",
        "session_id",
        "duration_ms",
        "created_at",
    ]

    @admin.display(description="results")
    def result_count(self, event: RecallEvent) -> int:
        return len(event.result_ids)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
