"""The strict serializers' fast path (only the keys present are visited; surrogates looked
for with a regex) validates exactly as DRF's own loop does, values and errors alike."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from memories import serializers as s

VALUES: dict[str, list[Any]] = {
    "namespace": ["work", "bad slug!", "", None, 7],
    "content": ["x", "  padded  ", "", "   ", 5, 2.5, True, None, [], "a\x00b", "\ud800z", "é" * 9],
    "content_original": ["", "Original", None, "a\udfffb"],
    "language": ["en", "", "x" * 17, 3],
    "keywords": [[], ["a"], ["a", ""], ["a" * 101], "notalist", None, [1, 2], ["\x00"], ["a"] * 51],
    "topic": ["t", "t" * 101, "", None, 3, " spaced "],
    "cue": ["Why?", "", "q" * 301],
    "memory_type": ["episodic", "semantic", "nope", "", None, 1],
    "tier": ["core", "short_term", "CORE"],
    "classification": ["public", "restricted", "secret", 2, None],
    "strength": [0, 1, 2, 2.5, -0.1, "1.5", "abc", True, None, 1e308],
    "utility": [0.5, 1.0001, "0.2"],
    "credibility": [1, 5, 6, 0, 3.0, 3.5, "4", True],
    "emotion_tags": [["joy"], ["x" * 51], [None]],
    "relevance_score": [-1e6, 1e7, 0],
    "expires_at": ["2030-01-01T00:00:00Z", "not a date", None, 5],
    "created_at": ["2020-01-01T00:00:00+02:00", "2999-01-01T00:00:00Z", "bad"],
    "status": ["active"],
    "bogus": [1],
}


class _Reference(s.MemoryCreateInput):
    """MemoryCreateInput validated by DRF's own Serializer.to_internal_value."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = set(data) - {n for n, f in self.fields.items() if not f.read_only}
            if unknown:
                return super().to_internal_value(data)  # the same unknown-field error
        return serializers.Serializer.to_internal_value(self, data)


class _PartialReference(s.MemoryUpdateInput):
    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = set(data) - {n for n, f in self.fields.items() if not f.read_only}
            if unknown:
                return super().to_internal_value(data)
        return serializers.Serializer.to_internal_value(self, data)


def _outcome(serializer: serializers.Serializer, data: dict) -> tuple[str, Any]:
    try:
        return "ok", dict(serializer.run_validation(data))
    except serializers.ValidationError as exc:
        return "error", exc.detail


_ITEMS = st.dictionaries(
    st.sampled_from(sorted(VALUES)), st.integers(min_value=0, max_value=20), max_size=8
).map(lambda picks: {k: VALUES[k][i % len(VALUES[k])] for k, i in picks.items()})


@settings(max_examples=400, deadline=None)
@given(data=_ITEMS)
def test_create_input_validates_as_drf_does(data):
    fast = s.MemoryCreateInput()
    assert _outcome(fast, data) == _outcome(_Reference(), data)
    assert _outcome(fast, data) == _outcome(_Reference(), data)  # the instance is reusable


@settings(max_examples=200, deadline=None)
@given(data=_ITEMS)
def test_update_input_validates_as_drf_does(data):
    data.pop("namespace", None)
    data.pop("created_at", None)
    assert _outcome(s.MemoryUpdateInput(), data) == _outcome(_PartialReference(), data)


@pytest.mark.parametrize(
    "data",
    [
        {"namespace": "work", "content": "Plain"},
        {"namespace": "work", "content": "  Trim me  ", "keywords": [" a ", "b"], "topic": "t"},
        {"namespace": "work", "content": "x", "classification": "confidential", "credibility": 2},
        {"namespace": "work", "content": "Surrogate \ud83d here"},
        {"content": "No namespace"},
        ["not", "a", "dict"],
    ],
)
def test_examples_validate_as_drf_does(data):
    assert _outcome(s.MemoryCreateInput(), data) == _outcome(_Reference(), data)
