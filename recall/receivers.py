"""Recall's reactions to what memories does (memories.hooks), connected in RecallConfig.ready()."""

from __future__ import annotations

from typing import Any

from memories import hooks
from memories.models import Memory
from recall.vectorcodes import write_codes


def codes_for_imported_memories(*, memories: list[Memory], **_: Any) -> None:
    """Imported vectors get their sign codes, which the embedding stage ranks first."""
    write_codes(
        (memory.pk, memory.namespace_id, memory.embedding_model, memory.embedding)
        for memory in memories
        if memory.embedding is not None and memory.embedding_model
    )


def connect() -> None:
    hooks.memories_imported.connect(
        codes_for_imported_memories, sender=Memory, dispatch_uid="recall.codes_for_imported"
    )
