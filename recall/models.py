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
