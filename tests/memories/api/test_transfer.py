from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.utils import timezone

from memories import services
from memories.importer import ImportFailed, namespace_import
from memories.models import Association, Classification, Memory, MemoryEvent, Relation
from memories.transfer import namespace_export
from review.models import Card, ReviewLog

pytestmark = pytest.mark.django_db


@pytest.fixture
def populated(namespace, make_memory):
    a = make_memory(
        "Alice works with Bob",
        topic="people",
        keywords=["alice"],
        classification=Classification.PUBLIC,
        emotion_score=1.5,
    )
    b = make_memory("Bob prefers written updates", topic="people", tier="long_term")
    secret = make_memory("Restricted salary note", classification=Classification.RESTRICTED)
    services.memory_forget(memory=b, reason="obsolete")
    services.association_create(source=a, target=b, weight=0.7)
    services.association_create(source=a, target=secret, weight=0.2)
    services.relation_create(
        namespace=namespace, subject="Alice", predicate="works_with", object="Bob", memory=a
    )
    Memory.objects.filter(pk=a.pk).update(
        embedding=b"\x00\x00\x80?" * 4, use_count=3, session_ids=["s1", "s2"]
    )
    Card.objects.filter(memory=a).update(
        easiness=2.36, interval_days=6, repetitions=2, next_review=timezone.now(), last_quality=3
    )
    return a, b, secret


def _memory_fields(memory: Memory) -> dict:
    skip = {"id", "namespace", "updated_at", "signature"}
    return {
        f.name: (bytes(v) if isinstance(v := getattr(memory, f.name), memoryview) else v)
        for f in Memory._meta.concrete_fields
        if f.name not in skip
    }


def test_export_then_import_round_trips_every_field(user, namespace, populated):
    lines = list(namespace_export(namespace=namespace, ceiling=Classification.RESTRICTED))
    assert json.loads(lines[0])["type"] == "header"
    assert json.loads(lines[-1]) == {"type": "end", "lines": len(lines)}

    copy = services.namespace_create(owner=user, name="Copy")
    result = namespace_import(namespace=copy, lines=lines)
    assert result.counts["memory"] == 3
    for old in populated:
        new = Memory.objects.get(pk=result.memories[old.pk])
        old.refresh_from_db()
        assert _memory_fields(new) == _memory_fields(old)
        assert new.namespace_id == copy.pk
    new_a = result.memories[populated[0].pk]
    assert Association.objects.filter(namespace=copy, source_id=new_a).count() == 2
    relation = Relation.objects.get(namespace=copy)
    assert (relation.subject.name, relation.memory_id) == ("alice", new_a)
    card = Card.objects.get(memory_id=new_a)
    assert (card.easiness, card.interval_days, card.repetitions) == (2.36, 6, 2)
    kinds = sorted(MemoryEvent.objects.filter(namespace=copy).values_list("kind", flat=True))
    assert kinds == ["created", "created", "created", "forgotten"]

    # Exporting the copy gives the same records, ids aside.
    again = list(namespace_export(namespace=copy, ceiling=Classification.RESTRICTED))
    assert len(again) == len(lines)


def test_export_stays_under_the_ceiling(namespace, populated):
    lines = [
        json.loads(x)
        for x in namespace_export(namespace=namespace, ceiling=Classification.INTERNAL)
    ]
    contents = [r["content"] for r in lines if r["type"] == "memory"]
    assert "Restricted salary note" not in contents and len(contents) == 2
    links = [r for r in lines if r["type"] == "association"]
    assert len(links) == 1  # the link to the restricted memory is not exported


@pytest.mark.parametrize(
    ("mutate", "line", "message"),
    [
        (lambda ls: ls[:-1], None, "end record"),
        (
            lambda ls: ls[:2] + ['{"type": "memory", "id": 9, "content": "x"'] + ls[2:],
            3,
            "not valid JSON",
        ),
        (
            lambda ls: ls[:2] + ['{"type": "memory", "id": 9, "content": "", "x": 1}\n'] + ls[2:],
            3,
            "unknown field",
        ),
        (
            lambda ls: (
                ls[:2] + ['{"type": "memory", "id": 99, "content": "y", "strength": 7}\n'] + ls[2:]
            ),
            3,
            "strength",
        ),
        (lambda ls: ls[1:], 1, "header"),
        (lambda ls: ls[:-2] + ls[-1:], None, "counts"),
        (lambda ls: ls[:3] + ls[4:], 5, "not earlier in the file"),
    ],
)
def test_a_malformed_or_truncated_file_writes_nothing_and_names_the_line(
    user, namespace, populated, mutate, line, message
):
    lines = mutate(list(namespace_export(namespace=namespace, ceiling=Classification.RESTRICTED)))
    copy = services.namespace_create(owner=user, name="Copy")
    with pytest.raises(ImportFailed) as error:
        namespace_import(namespace=copy, lines=lines)
    assert message.lower() in str(error.value).lower()
    if line is not None:
        assert error.value.line == line
    assert not Memory.objects.filter(namespace=copy).exists()
    assert not MemoryEvent.objects.filter(namespace=copy).exists()


def test_the_api_streams_the_export_and_imports_it(
    user, namespace, populated, make_token, api, nothing_written
):
    _, secret = make_token(user)
    client = api(secret)
    response = client.get(f"/api/v1/namespaces/{namespace.slug}/export")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    body = b"".join(response.streaming_content)
    records = [json.loads(x) for x in body.decode().splitlines()]
    # The token's ceiling is internal: the restricted memory stays home.
    assert sum(r["type"] == "memory" for r in records) == 2

    copy = services.namespace_create(owner=user, name="Copy", mode="agent_memory")
    response = client.post(
        f"/api/v1/namespaces/{copy.slug}/import?settings=apply",
        body,
        content_type="application/x-ndjson",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["counts"]["memory"] == 2
    copy.refresh_from_db()
    assert copy.mode == "personal"  # settings applied from the header

    broken = body[: len(body) // 2]
    with nothing_written():
        response = client.post(
            f"/api/v1/namespaces/{copy.slug}/import", broken, content_type="application/x-ndjson"
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_import" and error["message"].startswith("line ")
    assert Memory.objects.filter(namespace=copy).count() == 2


def test_import_refuses_lines_above_the_token_ceiling(
    user, namespace, populated, make_token, api, nothing_written
):
    lines = "".join(namespace_export(namespace=namespace, ceiling=Classification.RESTRICTED))
    copy = services.namespace_create(owner=user, name="Copy")
    _, secret = make_token(user, ceiling=Classification.INTERNAL)
    with nothing_written():
        response = api(secret).post(
            f"/api/v1/namespaces/{copy.slug}/import",
            lines.encode(),
            content_type="application/x-ndjson",
        )
    assert response.status_code == 400
    assert "ceiling" in response.json()["error"]["message"]
    assert not Memory.objects.filter(namespace=copy).exists()


def test_management_commands_round_trip(user, namespace, populated, tmp_path):
    path = tmp_path / "export.jsonl"
    call_command("export_namespace", f"{user.username}/{namespace.slug}", output=str(path))
    copy = services.namespace_create(owner=user, name="Copy")
    call_command("import_namespace", f"{user.username}/{copy.slug}", str(path))
    assert Memory.objects.filter(namespace=copy).count() == 3


def test_a_digest_quoting_a_purged_memory_still_round_trips(user, namespace, make_memory):
    """A digest keeps the ids of what it quoted; once one of them is purged it is in no line
    of the export, and the import refused the whole file ("memory 1 is not earlier in the
    file"). The export names only the memories it holds."""
    from memories.consolidation import consolidation_build
    from memories.models import Consolidation

    kept = make_memory("zebra crossing repainted")
    gone = make_memory("zebra sighting at the pier")
    consolidation_build(namespace=namespace, period="daily", start=timezone.localdate())
    digest = Consolidation.objects.get(namespace=namespace)
    assert set(digest.memory_ids) == {kept.pk, gone.pk}
    gone.delete()
    lines = list(namespace_export(namespace=namespace, ceiling=Classification.RESTRICTED))
    (line,) = [json.loads(x) for x in lines if json.loads(x)["type"] == "consolidation"]
    assert line["memory_ids"] == [kept.pk]

    copy = services.namespace_create(owner=user, name="Copy")
    result = namespace_import(namespace=copy, lines=lines)
    (imported,) = Consolidation.objects.filter(namespace=copy)
    assert imported.memory_ids == [result.memories[kept.pk]]
    assert imported.text == digest.text


def test_a_grade_given_above_the_ceiling_stays_out_after_declassifying(
    user, namespace, make_memory
):
    # A review log kept no level: graded while restricted, then declassified, the memory's
    # grade, answer time and card states were in an internal export and its statistics,
    # while its history already hid the 'graded' event.
    from review.selectors.statistics import counted_logs
    from review.services import card_grade

    memory = make_memory("Restricted launch plan", classification=Classification.RESTRICTED)
    card = Card.objects.get(memory=memory)
    card_grade(card=card, grade=4, source="human", user=user, duration_ms=1234)
    services.memory_update(memory=memory, changes={"classification": Classification.INTERNAL})
    card.refresh_from_db()
    card_grade(card=card, grade=5, source="human", user=user)

    def logs(ceiling):
        lines = [json.loads(x) for x in namespace_export(namespace=namespace, ceiling=ceiling)]
        return [r for r in lines if r["type"] == "review_log"]

    internal = logs(Classification.INTERNAL)
    assert [(r["grade"], r["classification"]) for r in internal] == [(5, "internal")]
    assert len(logs(Classification.RESTRICTED)) == 2
    counted = counted_logs(namespace=namespace, ceiling=Classification.INTERNAL)
    assert list(counted.values_list("grade", flat=True)) == [5]

    # Imported, each log keeps its level (never below its memory's).
    copy = services.namespace_create(owner=user, name="Copy")
    lines = list(namespace_export(namespace=namespace, ceiling=Classification.RESTRICTED))
    namespace_import(namespace=copy, lines=lines)
    levels = sorted(ReviewLog.objects.filter(namespace=copy).values_list("grade", "classification"))
    assert levels == [(4, Classification.RESTRICTED), (5, Classification.INTERNAL)]
