"""One row per recall call: what was asked, how long each stage took, what came back."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from memories.models import ApiToken, Namespace


class RecallEvent(models.Model):
    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="recalls")
    token = models.ForeignKey(ApiToken, on_delete=models.SET_NULL, null=True, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    query = models.TextField()
    filters = models.JSONField(default=dict, blank=True)
    stage_timings = models.JSONField(default=dict, blank=True)  # stage -> {"ms":, "hits":}
    result_ids = models.JSONField(default=list, blank=True)
    session_id = models.CharField(max_length=100, blank=True)
    duration_ms = models.FloatField(default=0.0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["namespace", "created_at"], name="recall_ns_created")]

    def __str__(self) -> str:
        return f"{self.query[:60]!r} at {self.created_at:%Y-%m-%d %H:%M}"


class TermStat(models.Model):
    """How many memories of a namespace hold a stemmed word (PostgreSQL's lexeme).

    Refreshed by the worker (recall.termstats) for large namespaces only, so that recall
    reads document frequencies with one indexed look-up instead of counting matches in
    the full-text index per query. Only words in at least RECALL_TERM_STATS_MIN_DOCUMENTS
    memories are kept: rarer ones are cheap to count live. The row with an empty lexeme
    holds the namespace's number of memories when the statistics were taken.
    """

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="term_stats")
    lexeme = models.CharField(max_length=200, blank=True)
    documents = models.PositiveIntegerField()
    refreshed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["lexeme", "namespace"], name="termstat_unique")
        ]

    def __str__(self) -> str:
        return f"{self.lexeme or '(memories)'}: {self.documents}"
