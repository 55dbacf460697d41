"""A memory's fields by who writes them: the one declaration every list of memory fields is
built from (tests/memories/test_field_lists.py pins every list)."""

from __future__ import annotations

from collections.abc import Iterable

from memories.models import Memory

# A memory's fields by who writes them: the one declaration every list of memory fields is
# built from (the API's input and output, the admin, the export, the dashboard form), each
# list as these groups plus or minus named sets; tests/memories/test_field_lists.py pins
# every list and checks that the groups are exactly Memory's fields.
#
# Set by a caller on create and changed on update.
EDITABLE_FIELDS = (
    "content",
    "content_original",
    "language",
    "keywords",
    "topic",
    "cue",
    "memory_type",
    "tier",
    "classification",
    "strength",
    "utility",
    "confidence",
    "emotion_score",
    "emotion_tags",
    "trust",
    "credibility",
    "relevance_score",
    "importance_flags",
    "expires_at",
    "valid_until",
)
# Set once, on create: the id and namespace by the server, created_at by a caller or now.
IDENTITY_FIELDS = ("id", "namespace", "created_at")
# Set once, on create, by a caller: the conversation it was written in and its place there,
# and since when what it says is true (default: created_at).
CREATE_ONLY_FIELDS = ("session_id", "position", "valid_from")
# The server's: lifecycle, reinforcement counters and their times.
SERVER_FIELDS = (
    "storage",
    "status",
    "status_changed_at",
    "promoted_at",
    "forgotten_at",
    "forgotten_reason",
    "forgotten_score",
    "stability",
    "use_count",
    "last_used_at",
    "access_count",
    "last_accessed_at",
    "recall_count",
    "last_recalled_at",
    "recall_timestamps",
    "session_ids",
    "updated_at",
)
# Computed from the text by every write of it (_derive), never supplied.
DERIVED_FIELDS = (
    "search_text",
    "search_original",
    "search_pairs",
    "signature",
    "content_key",
)
# The vector: written by the embedding backfill, carried by exports.
EMBEDDING_FIELDS = ("embedding", "embedding_model")


def in_model_order(names: Iterable[str]) -> tuple[str, ...]:
    """The named memory fields in Memory's order (the order of exports and the API output)."""
    wanted = set(names)
    return tuple(field.name for field in Memory._meta.concrete_fields if field.name in wanted)


# What history records of a memory: everything a person could want to see change.
SNAPSHOT_FIELDS = (
    *EDITABLE_FIELDS,
    "status",
    "storage",
    "stability",
    "use_count",
    "forgotten_reason",
)

TEXT_FIELDS = (
    "content",
    "content_original",
    "language",
    "topic",
    "embedding_model",
    "session_id",
)
