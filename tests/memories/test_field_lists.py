"""Every list of memory fields is built from one declaration (memories.services): each is
pinned to the value it had when it was declared by hand (the API schema, the exports and
the pages depend on them), and each stays tied to the declaration."""

from __future__ import annotations

from memories import admin as memories_admin
from memories import forms, services, transfer
from memories import serializers as s
from memories.import_records import MemoryRecord
from memories.models import Memory

GROUPS = (
    services.EDITABLE_FIELDS,
    services.IDENTITY_FIELDS,
    services.CREATE_ONLY_FIELDS,
    services.SERVER_FIELDS,
    services.DERIVED_FIELDS,
    services.EMBEDDING_FIELDS,
)


def test_the_groups_are_exactly_the_fields_of_a_memory_each_once():
    names = [name for group in GROUPS for name in group]
    assert len(names) == len(set(names))
    assert set(names) == {field.name for field in Memory._meta.concrete_fields}


def test_the_editable_fields_are_as_declared():
    assert services.EDITABLE_FIELDS == (
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
        "valid_until",  # issue 15
    )


def test_the_api_inputs_take_the_editable_fields():
    assert tuple(s.MemoryFieldsMixin._declared_fields) == services.EDITABLE_FIELDS
    assert tuple(s.MemoryUpdateInput().fields) == services.EDITABLE_FIELDS
    assert tuple(s.MemoryCreateInput().fields) == (
        *services.EDITABLE_FIELDS,
        "namespace",
        "created_at",
        "session_id",  # set on create only (issue 15)
        "position",
        "valid_from",
        "supersedes",  # not a field: the memories this one replaces
    )


def test_the_api_output_fields_are_unchanged_and_built_from_the_groups():
    expected = (
        "id",
        "namespace",
        "content",
        "content_original",
        "language",
        "keywords",
        "topic",
        "cue",
        "memory_type",
        "tier",
        "storage",
        "status",
        "classification",
        "strength",
        "stability",
        "utility",
        "confidence",
        "emotion_score",
        "emotion_tags",
        "trust",
        "credibility",
        "relevance_score",
        "importance_flags",
        "use_count",
        "last_used_at",
        "access_count",
        "last_accessed_at",
        "recall_count",
        "last_recalled_at",
        "recall_timestamps",
        "session_ids",
        "session_id",  # issue 15
        "position",  # issue 15
        "created_at",
        "updated_at",
        "expires_at",
        "valid_from",  # issue 15
        "valid_until",
        "promoted_at",
        "forgotten_at",
        "forgotten_reason",
        "has_embedding",
        "decay_score",
        "superseded",  # issue 15
    )
    assert expected == s.MEMORY_OUTPUT_FIELDS
    assert tuple(s.MemoryOutput().fields) == expected
    shown = set(expected) - {"has_embedding", "decay_score", "superseded"}
    assert shown <= {
        *services.EDITABLE_FIELDS,
        *services.SERVER_FIELDS,
        *services.CREATE_ONLY_FIELDS,
        "id",
        "namespace",
        "created_at",
    }
    assert set(services.EDITABLE_FIELDS) <= shown  # whatever a caller writes, it reads back


def test_the_read_only_names_are_unchanged():
    assert {
        "id",
        "storage",
        "status",
        "stability",
        "use_count",
        "last_used_at",
        "access_count",
        "last_accessed_at",
        "recall_count",
        "last_recalled_at",
        "recall_timestamps",
        "session_ids",
        "session_id",  # set on create only (issue 15)
        "position",
        "valid_from",
        "superseded",
        "updated_at",
        "forgotten_at",
        "forgotten_reason",
        "promoted_at",
        "decay_score",
        "has_embedding",
        "search_text",
        "signature",
        "embedding",
    } == s.MEMORY_SERVER_FIELDS
    assert not s.MEMORY_SERVER_FIELDS & set(services.EDITABLE_FIELDS)


def test_the_export_columns_are_unchanged_and_the_import_takes_each():
    assert transfer.MEMORY_FIELDS == (
        "content",
        "content_original",
        "language",
        "keywords",
        "topic",
        "cue",
        "memory_type",
        "tier",
        "storage",
        "status",
        "status_changed_at",
        "promoted_at",
        "forgotten_at",
        "forgotten_reason",
        "forgotten_score",
        "classification",
        "strength",
        "stability",
        "utility",
        "confidence",
        "emotion_score",
        "emotion_tags",
        "trust",
        "credibility",
        "relevance_score",
        "importance_flags",
        "use_count",
        "last_used_at",
        "access_count",
        "last_accessed_at",
        "recall_count",
        "last_recalled_at",
        "recall_timestamps",
        "session_ids",
        "session_id",  # issue 15
        "position",
        "created_at",
        "expires_at",
        "valid_from",  # issue 15
        "valid_until",
        "embedding",
        "embedding_model",
    )
    assert set(transfer.MEMORY_FIELDS) >= {*services.EDITABLE_FIELDS, *services.EMBEDDING_FIELDS}
    # The import's memory line takes exactly what the export writes, and the exporter's id.
    assert set(MemoryRecord().fields) == {"id", *transfer.MEMORY_FIELDS}


def test_the_edit_form_fields_are_unchanged_and_editable():
    assert forms.MemoryEditForm.FIELDS == (
        "content",
        "topic",
        "cue",
        "keywords",
        "memory_type",
        "tier",
        "classification",
        "strength",
        "utility",
        "confidence",
        "trust",
        "credibility",
        "expires_at",
        "valid_until",  # issue 15
        "content_original",
        "language",
    )
    assert set(forms.MemoryEditForm.FIELDS) <= set(services.EDITABLE_FIELDS)


def test_the_admin_form_is_unchanged_and_edits_exactly_the_editable_fields():
    admin = memories_admin.MemoryAdmin
    sections = {name: options["fields"] for name, options in admin.fieldsets}
    assert sections == {
        None: ["namespace", "content", "content_original", "language", "keywords"],
        "Classification": [
            "topic",
            "cue",
            "memory_type",
            "tier",
            "classification",
            "expires_at",
            "valid_until",  # issue 15
        ],
        "Signals": [
            "strength",
            "utility",
            "confidence",
            "emotion_score",
            "emotion_tags",
            "trust",
            "credibility",
            "relevance_score",
            "importance_flags",
        ],
        "State (owned by the server)": [
            "current_decay_score",
            "status",
            "status_changed_at",
            "promoted_at",
            "forgotten_at",
            "forgotten_reason",
            "forgotten_score",
            "use_count",
            "last_used_at",
            "access_count",
            "last_accessed_at",
            "recall_count",
            "last_recalled_at",
            "recall_timestamps",
            "session_ids",
            "search_text",
            "updated_at",
        ],
    }
    # Order does not matter to readonly_fields (the fieldsets place them).
    assert set(admin.readonly_fields) == {
        "search_text",
        "search_original",
        "search_pairs",
        "use_count",
        "last_used_at",
        "access_count",
        "last_accessed_at",
        "recall_count",
        "last_recalled_at",
        "recall_timestamps",
        "session_ids",
        "status",
        "status_changed_at",
        "promoted_at",
        "forgotten_at",
        "forgotten_reason",
        "forgotten_score",
        "updated_at",
        "current_decay_score",
    }
    shown = [name for fields in sections.values() for name in fields]
    editable = [name for name in shown if name not in admin.readonly_fields]
    assert sorted(editable) == sorted(["namespace", *services.EDITABLE_FIELDS])  # each once
    assert not set(admin.readonly_fields) & set(services.EDITABLE_FIELDS)


def test_the_namespace_output_is_the_editable_settings_and_what_the_server_adds():
    assert tuple(s.NamespaceOutput.Meta.fields) == (
        "id",
        "name",
        "slug",
        "description",
        "mode",
        "weights",
        "weight_similarity",
        "weight_recency",
        "weight_utility",
        "weight_confidence",
        "decay_model",
        "decay_half_life_days",
        "decay_beta",
        "decay_power_alpha",
        "decay_fast_half_life_days",
        "decay_slow_half_life_days",
        "decay_fast_weight",
        "scheduler",
        "sm2_modifiers",  # issue 17
        "desired_retention",
        "new_cards_per_day",
        "card_front",  # issue 17
        "leech_threshold",  # issue 17
        "session_links",  # issue 15
        "dedupe",
        "decay_fit",  # issue 19
        "memory_count",
        "created_at",
    )
    assert set(services.NAMESPACE_EDITABLE_FIELDS) <= set(s.NamespaceOutput.Meta.fields)
