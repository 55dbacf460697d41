"""Background runs (one row per run of a task) and the spooled pieces of a queued import."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from config.bounds import datetime_checks, validate_datetime
from memories.models.namespaces import Namespace


class BackgroundRun(models.Model):
    """One run of a background task (sweep, simulated recall, digests, embedding backfill)."""

    class Kind(models.TextChoices):
        SWEEP = "sweep", "Decay sweep"
        SIMULATED_RECALL = "simulated_recall", "Simulated recall"
        DIGESTS = "digests", "Consolidation digests"
        EMBEDDING_BACKFILL = "embedding_backfill", "Embedding backfill"
        TERM_STATS = "term_stats", "Full-text term statistics"
        IMPORT = "import", "Namespace import"
        DECAY_FIT = "decay_fit", "Decay fit"
        ABOUT_TO_FORGET = "about_to_forget", "About-to-forget notices"

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        OK = "ok", "OK"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    namespace = models.ForeignKey(
        Namespace,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="background_runs",
        help_text="Empty: the run covered every namespace.",
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])
    finished_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    # What the run did: {"promoted": 3, "forgotten": 12, ...}; keys depend on the kind.
    counts = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    # The django-q2 task id (empty when run from a command), and which attempt this was.
    task_id = models.CharField(max_length=64, blank=True)
    attempt = models.PositiveSmallIntegerField(default=1)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [
            models.Index(fields=["kind", "started_at"], name="bgrun_kind_started"),
            models.Index(fields=["status", "started_at"], name="bgrun_status_started"),
        ]
        constraints = datetime_checks("backgroundrun", "started_at", "finished_at")

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.started_at:%Y-%m-%d %H:%M} {self.status}"

    @property
    def duration_seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class ImportChunk(models.Model):
    """A piece of a queued import's body (POST .../import over API_MAX_BODY_BYTES), kept in
    the database so that any machine's worker can read it; deleted when the import ends.

    Pieces are cut by size, not by line: the reader joins them (memories.import_jobs).
    """

    run = models.ForeignKey(BackgroundRun, on_delete=models.CASCADE, related_name="import_chunks")
    position = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "position"], name="importchunk_unique_position")
        ]

    def __str__(self) -> str:
        return f"import #{self.run_id} piece {self.position}"
