"""manage.py recall prints the seed's per-stage report."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memories.models import Memory

pytestmark = pytest.mark.django_db


def test_it_prints_each_stage_and_the_results(make_memory, namespace):
    memory = make_memory("The project uses SQLite for local runs", topic="work")
    make_memory("Holiday plans for August", topic="home")
    out = StringIO()
    call_command(
        "recall",
        "what database does the project use?",
        "--namespace",
        namespace.slug,
        "--topic",
        "work",
        "--limit",
        "5",
        stdout=out,
    )
    text = out.getvalue()
    assert text.startswith('Query: "what database does the project use?"')
    assert "Stage Sf: 1 hit (" in text
    assert "Stage Se: skipped (embeddings disabled)" in text
    assert "Stage S8: 0 hits (" in text
    assert "→ 1 candidates → MMR rerank → top 1 returned" in text
    assert f"#{memory.pk} (work, Sf)" in text
    memory.refresh_from_db()
    assert memory.recall_count == 0  # the CLI does not track unless --track


def test_it_tracks_when_asked(make_memory, namespace):
    memory = make_memory("The project uses SQLite for local runs")
    call_command("recall", "sqlite", "--namespace", namespace.slug, "--track", stdout=StringIO())
    assert Memory.objects.get(pk=memory.pk).recall_count == 1


def test_it_rejects_an_unknown_namespace(db):
    with pytest.raises(CommandError):
        call_command("recall", "x", "--namespace", "nope", stdout=StringIO())
