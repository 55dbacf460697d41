"""One row per recall call: what was asked, how long each stage took, what came back."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone

from config.bounds import (
    FLOAT_LIMIT,
    datetime_checks,
    float_check,
    validate_datetime,
    validate_finite,
)
from config.db import is_postgres
from memories.models import ApiToken, Memory, Namespace, derived_level


class RecallEvent(models.Model):
    # Indexed by recall_ns_created, which leads with it.
    namespace = models.ForeignKey(
        Namespace, on_delete=models.CASCADE, related_name="recalls", db_index=False
    )
    token = models.ForeignKey(ApiToken, on_delete=models.SET_NULL, null=True, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    query = models.TextField()
    filters = models.JSONField(default=dict, blank=True)
    stage_timings = models.JSONField(default=dict, blank=True)  # stage -> {"ms":, "hits":}
    result_ids = models.JSONField(default=list, blank=True)
    session_id = models.CharField(max_length=100, blank=True)
    duration_ms = models.FloatField(
        default=0.0, validators=[validate_finite, MinValueValidator(0.0)]
    )
    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["namespace", "created_at"], name="recall_ns_created")]
        constraints = [
            float_check("recallevent", "duration_ms", 0.0, FLOAT_LIMIT),
            *datetime_checks("recallevent", "created_at"),
        ]

    def __str__(self) -> str:
        return f"{self.query[:60]!r} at {self.created_at:%Y-%m-%d %H:%M}"


class TermStat(models.Model):
    """How many memories of a namespace hold a stemmed word (PostgreSQL's lexeme).

    Refreshed by the worker (recall.termstats) for large namespaces only, so that recall
    reads document frequencies with one indexed look-up instead of counting matches in
    the full-text index per query. Only words in at least RECALL_TERM_STATS_MIN_DOCUMENTS
    memories are kept: rarer ones are cheap to count live. The row with an empty lexeme
    holds the namespace's number of memories when the statistics were taken. Counts are of
    live memories, one row per classification level, so that a recall adds up only the
    levels within its ceiling.
    """

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="term_stats")
    classification = derived_level()
    lexeme = models.CharField(max_length=200, blank=True)
    documents = models.PositiveIntegerField()
    refreshed_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["lexeme", "namespace", "classification"], name="termstat_unique"
            ),
            *datetime_checks("termstat", "refreshed_at"),
        ]

    def __str__(self) -> str:
        return f"{self.lexeme or '(memories)'}: {self.documents}"


class BitCodeField(models.Field):
    """A fixed-length bit string: bytes in Python, `bit varying` on PostgreSQL (so XOR and
    bit_count run in SQL), a blob on SQLite."""

    description = "Bit string"

    def db_type(self, connection) -> str:
        if is_postgres(connection):
            return "bit varying"
        return connection.data_types["BinaryField"]

    def get_internal_type(self) -> str:
        # Not "BinaryField": bulk writers pass a BinaryField's bytes to the driver as they
        # are, and PostgreSQL wants the bit string.
        return "BitCodeField"

    def get_db_prep_value(self, value, connection, prepared=False):
        if value is None:
            return None
        value = bytes(value)
        if is_postgres(connection):
            return "".join(f"{byte:08b}" for byte in value)
        return value

    def from_db_value(self, value, expression, connection):
        if value is None:
            return None
        if isinstance(value, str):  # PostgreSQL's bit string
            return int(value, 2).to_bytes(len(value) // 8, "big") if value else b""
        return bytes(value)

    def to_python(self, value):
        return value if value is None else bytes(value)


class EmbeddingCode(models.Model):
    """The sign code of a memory's embedding (recall.vectorcodes): Se's coarse step.

    One row per memory with a vector, kept apart from memories_memory so that ranking a
    namespace's codes reads 48 bytes a memory instead of its whole row. namespace and
    model are copies of the memory's, for the namespace-first index.
    """

    memory = models.OneToOneField(
        Memory, on_delete=models.CASCADE, primary_key=True, related_name="embedding_code"
    )
    namespace = models.ForeignKey(
        Namespace, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    model = models.CharField(max_length=100)
    code = BitCodeField()

    class Meta:
        indexes = [models.Index(fields=["namespace", "model"], name="embcode_ns_model")]

    def __str__(self) -> str:
        return f"code of memory {self.memory_id} ({self.model})"
