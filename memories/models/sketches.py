"""The keys of each memory's near-duplicate sketch (memories.near_duplicates)."""

from __future__ import annotations

from django.db import models

from memories.models.memories import Memory
from memories.models.namespaces import Namespace


class MemorySketch(models.Model):
    """One band key of a memory's MinHash sketch. Two memories of a namespace sharing a key
    are near-duplicate candidates; the write path compares only those. Derived from the
    memory's content (rewritten with it), never shown: it reveals nothing on its own."""

    pk = models.CompositePrimaryKey("memory_id", "key")
    # The primary key's index serves the memory; sketch_ns_key the namespace.
    memory = models.ForeignKey(
        Memory, on_delete=models.CASCADE, related_name="sketch", db_index=False
    )
    namespace = models.ForeignKey(
        Namespace, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    key = models.BigIntegerField()

    class Meta:
        indexes = [models.Index(fields=["namespace", "key"], name="sketch_ns_key")]

    def __str__(self) -> str:
        return f"{self.memory_id}: {self.key}"
