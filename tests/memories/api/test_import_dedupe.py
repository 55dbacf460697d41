"""Duplicates on import (issue 15: "dedupe in single, bulk and import"): a memory line whose
text a live, current memory of the namespace within the importer's ceiling holds, or an
earlier line of the file, is that memory (a use of it, reported as `deduplicated`); every
created memory gets its sketch and its near_duplicate links, never refused."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories import import_jobs, importer, services
from memories.importer import namespace_import
from memories.models import (
    Association,
    Classification,
    Memory,
    MemoryEvent,
    MemorySketch,
    Namespace,
    Relation,
)
from memories.near_duplicates import BANDS
from memories.transfer import FORMAT, VERSION, namespace_export
from review.models import Card, ReviewLog
from tests.conftest import database_rows

pytestmark = pytest.mark.django_db

NOW = "2026-11-01T10:00:00+00:00"
PARIS = "User lives in Paris."
PARIS_AGAIN = "The user lives in Paris."


def _file(*records: dict[str, Any]) -> list[str]:
    """A hand-written export: the header, `records`, the end record."""
    lines = [{"type": "header", "format": FORMAT, "version": VERSION}, *records]
    return [json.dumps(r) + "\n" for r in [*lines, {"type": "end", "lines": len(lines) + 1}]]


def _memory(old: int, content: str, **fields: Any) -> dict[str, Any]:
    return {"type": "memory", "id": old, "content": content, **fields}


def _link(source: int, target: int, kind: str = "related") -> dict[str, Any]:
    return {"type": "association", "source": source, "target": target, "weight": 0.5, "kind": kind}


def _touches(memory: Memory) -> list[dict]:
    return list(
        MemoryEvent.objects.filter(memory_ref=memory.pk, kind="touched", source="import")
        .order_by("pk")
        .values_list("after", flat=True)
    )


def test_an_import_creates_only_the_texts_the_namespace_lacks(namespace, make_memory):
    held = make_memory("Alice works with Bob")
    result = namespace_import(
        namespace=namespace,
        lines=_file(
            _memory(11, "  alice WORKS with   bob "),  # the same text, folded
            _memory(12, "Bob prefers written updates"),
            _memory(13, "Carol runs the budget"),
        ),
    )
    assert result.counts["memory"] == 2 and result.counts["deduplicated"] == 1
    assert result.memories[11] == held.pk
    assert Memory.objects.filter(namespace=namespace).count() == 3
    held.refresh_from_db()
    assert held.use_count == 1  # counted as a use, as the API does
    assert _touches(held) == [{"use_count": 1, "deduplicated": 1}]


def test_a_file_with_one_text_twice_creates_it_once(namespace):
    result = namespace_import(
        namespace=namespace,
        lines=_file(
            _memory(1, "The deploy runs on Fridays", use_count=4),
            _memory(2, "the deploy runs on fridays"),
            _memory(3, "THE DEPLOY RUNS ON FRIDAYS"),
        ),
    )
    assert result.counts["memory"] == 1 and result.counts["deduplicated"] == 2
    assert result.memories[1] == result.memories[2] == result.memories[3]
    memory = Memory.objects.get(namespace=namespace)
    assert memory.content == "The deploy runs on Fridays"  # the first line's
    assert memory.use_count == 4 + 2


def test_a_namespace_that_does_not_dedupe_imports_every_line(namespace, make_memory):
    services.namespace_update(namespace=namespace, changes={"dedupe": Namespace.Dedupe.OFF})
    namespace.refresh_from_db()
    make_memory("Alice works with Bob")
    result = namespace_import(
        namespace=namespace,
        lines=_file(_memory(1, "Alice works with Bob"), _memory(2, "Alice works with Bob")),
    )
    assert result.counts == {"memory": 2, "deduplicated": 0}
    assert Memory.objects.filter(namespace=namespace, content="Alice works with Bob").count() == 3
    # Sketched all the same: switching dedupe on later finds them.
    assert MemorySketch.objects.filter(memory_id__in=result.memories.values()).count() == 2 * BANDS


def test_the_headers_dedupe_applies_when_settings_are_applied(namespace, make_memory):
    make_memory("Alice works with Bob")
    lines = _file(_memory(1, "Alice works with Bob"))
    header = json.loads(lines[0])
    header["namespace"] = {"dedupe": "off"}
    lines[0] = json.dumps(header) + "\n"
    kept = namespace_import(namespace=namespace, lines=lines)  # ?settings=keep: exact
    assert kept.counts["memory"] == 0 and kept.counts["deduplicated"] == 1
    applied = namespace_import(namespace=namespace, lines=lines, apply_settings=True)
    assert applied.counts["memory"] == 1 and applied.counts["deduplicated"] == 0


def test_a_memory_above_the_importers_ceiling_is_never_the_answer(namespace, make_memory):
    secret = make_memory("Salary review in March", classification=Classification.RESTRICTED)
    result = namespace_import(
        namespace=namespace,
        lines=_file(_memory(1, "Salary review in March", classification="internal")),
        ceiling=Classification.INTERNAL,
    )
    assert result.counts["memory"] == 1 and result.counts["deduplicated"] == 0
    assert result.memories[1] != secret.pk
    secret.refresh_from_db()
    assert secret.use_count == 0 and not _touches(secret)


def test_only_a_live_current_memory_answers_and_only_a_live_line_is_answered(
    namespace, make_memory
):
    gone = make_memory("Standup at nine")
    services.memory_forget(memory=gone, reason="obsolete")
    replaced = make_memory("The office is in Lyon")
    past = timezone.now() - timedelta(days=1)
    Memory.objects.filter(pk=replaced.pk).update(
        valid_from=past - timedelta(days=1), valid_until=past
    )
    held = make_memory("Alice works with Bob")
    result = namespace_import(
        namespace=namespace,
        lines=_file(
            _memory(1, "Standup at nine"),  # the stored copy is forgotten
            _memory(2, "The office is in Lyon"),  # the stored copy is superseded
            _memory(3, "Alice works with Bob", status="forgotten"),  # history: restored
        ),
    )
    assert result.counts == {"memory": 3, "deduplicated": 0}
    assert held.pk not in result.memories.values()


def test_a_duplicates_links_land_on_the_memory_it_is(namespace, make_memory):
    held = make_memory("Alice works with Bob")
    other = make_memory("Bob prefers written updates")
    services.association_create(source=held, target=other, weight=0.3)
    result = namespace_import(
        namespace=namespace,
        lines=_file(
            _memory(11, "Alice works with Bob"),
            _memory(12, "Carol runs the budget"),
            _memory(13, "alice works with bob"),
            _memory(14, "Bob prefers written updates"),
            _link(11, 12),
            _link(13, 12),  # the same link once mapped: written once
            _link(11, 13),  # a link to itself once mapped: left out
            _link(12, 11),
            _link(11, 14),  # between two stored memories, already there: left out
            {
                "type": "relation",
                "subject": "Carol",
                "predicate": "reports_to",
                "object": "Alice",
                "memory": 13,
            },
            {"type": "card", "memory": 11, "scheduler": "sm2", "created_at": NOW},
            {"type": "card", "memory": 12, "scheduler": "sm2", "created_at": NOW},
            {
                "type": "review_log",
                "memory": 11,
                "grade": 4,
                "source": "human",
                "mode": "normal",
                "reviewed_at": NOW,
            },
            {"type": "event", "memory": 11, "kind": "updated", "created_at": NOW},
            {"type": "event", "memory": 12, "kind": "updated", "created_at": NOW},
        ),
    )
    carol = result.memories[12]
    assert (result.memories[11], result.memories[13], result.memories[14]) == (
        held.pk,
        held.pk,
        other.pk,
    )
    pairs = set(
        Association.objects.filter(namespace=namespace, kind="related").values_list(
            "source_id", "target_id"
        )
    )
    assert pairs == {(held.pk, other.pk), (held.pk, carol), (carol, held.pk)}
    assert Relation.objects.get(namespace=namespace, predicate="reports_to").memory_id == held.pk
    # The duplicate's card, review log and history describe the other copy: left out.
    assert Card.objects.filter(memory_id=carol).exists()
    assert Card.objects.filter(memory=held).count() == 1
    assert not ReviewLog.objects.filter(namespace=namespace).exists()
    assert not MemoryEvent.objects.filter(memory_ref=held.pk, kind="updated").exists()
    assert MemoryEvent.objects.filter(memory_ref=carol, kind="updated").exists()
    assert result.counts == {
        "memory": 1,
        "deduplicated": 3,
        "association": 2,
        "relation": 1,
        "card": 1,
        "review_log": 0,
        "event": 1,
    }
    held.refresh_from_db()
    assert held.use_count == 2


def test_imported_memories_are_sketched_and_linked_to_their_near_duplicates(
    namespace, make_memory, committed
):
    with committed():
        stored = make_memory(PARIS)
    result = namespace_import(
        namespace=namespace,
        lines=_file(_memory(1, PARIS_AGAIN), _memory(2, "Carol runs the budget")),
    )
    new = list(result.memories.values())
    assert MemorySketch.objects.filter(memory_id__in=new).count() == BANDS * 2
    link = Association.objects.get(kind=services.NEAR_DUPLICATE)
    assert (link.source_id, link.target_id) == (result.memories[1], stored.pk)
    assert link.weight == pytest.approx(0.8333, abs=1e-3)


def test_under_dedupe_near_a_near_duplicate_is_imported_and_linked(namespace, make_memory):
    services.namespace_update(namespace=namespace, changes={"dedupe": Namespace.Dedupe.NEAR})
    namespace.refresh_from_db()
    stored = make_memory(PARIS)
    result = namespace_import(namespace=namespace, lines=_file(_memory(1, PARIS_AGAIN)))
    assert result.counts == {"memory": 1, "deduplicated": 0}
    assert Association.objects.filter(
        source_id=result.memories[1], target_id=stored.pk, kind=services.NEAR_DUPLICATE
    ).exists()


def test_near_duplicates_within_one_file_are_linked_across_batches(namespace, monkeypatch):
    monkeypatch.setattr(importer, "BATCH", 2)
    result = namespace_import(
        namespace=namespace,
        lines=_file(
            _memory(1, PARIS),
            _memory(2, "Carol runs the budget"),
            _memory(3, PARIS_AGAIN),  # another batch: compared with the first as stored
            _memory(4, "user lives in paris."),  # an exact copy of line 1, a batch later
        ),
    )
    assert result.counts == {"memory": 3, "deduplicated": 1}
    assert result.memories[4] == result.memories[1]
    assert MemorySketch.objects.filter(namespace=namespace).count() == 3 * BANDS
    assert Association.objects.filter(
        source_id=result.memories[3], target_id=result.memories[1], kind=services.NEAR_DUPLICATE
    ).exists()


def test_the_queries_do_not_grow_with_the_lines(namespace, make_memory):
    for index in range(3):
        make_memory(f"Stored fact {index} about the import")

    def queries(size: int) -> int:
        target = services.namespace_create(owner=namespace.owner, name=f"T{size}")
        for index in range(3):
            services.memory_create(namespace=target, content=f"Stored fact {index} about it")
        records = [_memory(i, f"Line {i} of {size}, a fact about imports") for i in range(size)]
        records += [_memory(size + i, f"stored fact {i} about it") for i in range(3)]
        records += [
            _memory(2 * size + i, f"line {i} of {size}, a fact about imports") for i in range(size)
        ]
        with CaptureQueriesContext(connection) as captured:
            result = namespace_import(namespace=target, lines=_file(*records))
        assert result.counts == {"memory": size, "deduplicated": size + 3}
        return len(captured.captured_queries)

    # The same few queries (a small insert and a COPY may differ by one), not one a line.
    assert queries(60) <= queries(5) + 2


def test_a_round_trip_into_the_same_namespace_creates_nothing(user, namespace, make_memory):
    a = make_memory("Alice works with Bob", session_id="chat", position=0)
    b = make_memory("Bob prefers written updates", session_id="chat", position=1)
    c = make_memory(PARIS)
    make_memory(PARIS_AGAIN)  # near c: a near_duplicate link
    services.association_create(source=a, target=c, weight=0.7)
    services.relation_create(
        namespace=namespace, subject="Alice", predicate="works_with", object="Bob", memory=a
    )
    services.memory_update(memory=b, changes={"topic": "people"})
    lines = list(namespace_export(namespace=namespace, ceiling=Classification.RESTRICTED))
    kinds = [json.loads(line)["type"] for line in lines]
    assert kinds.count("card") == 4 and kinds.count("event") >= 5  # a personal namespace's
    before = database_rows(ignore={"memories.Memory": {"use_count", "last_used_at"}})

    result = namespace_import(namespace=namespace, lines=lines)

    after = database_rows(ignore={"memories.Memory": {"use_count", "last_used_at"}})
    events = "memories.MemoryEvent"
    changed = {label for label in before if before[label] != after[label]}
    # The uses' 'touched' events and their rows in the use log, nothing else.
    assert changed == {events, "memories.MemoryUse"}
    assert len(after["memories.MemoryUse"]) - len(before["memories.MemoryUse"]) == 4
    new_events = MemoryEvent.objects.exclude(pk__in=[row[0] for row in before[events]]).values_list(
        "kind", "source"
    )
    assert set(new_events) == {("touched", "import")} and len(new_events) == 4
    assert result.counts["memory"] == 0 and result.counts["deduplicated"] == 4
    assert not any(
        count for kind, count in result.counts.items() if kind not in ("deduplicated", "entity")
    )
    assert set(result.memories.values()) == set(
        Memory.objects.filter(namespace=namespace).values_list("pk", flat=True)
    )


def test_the_api_import_reports_the_duplicates(user, namespace, make_memory, make_token, api):
    held = make_memory("Alice works with Bob")
    _, secret = make_token(user, namespaces=[namespace], access="write")
    body = "".join(
        _file(
            _memory(11, "Alice works with Bob"),
            _memory(12, "Bob prefers written updates"),
            _link(11, 12),
        )
    ).encode()
    response = api(secret).generic(
        "POST",
        f"/api/v1/namespaces/{namespace.slug}/import",
        body,
        content_type="application/x-ndjson",
    )
    assert response.status_code == 201, response.content
    answer = response.json()
    assert answer["counts"] == {"memory": 1, "deduplicated": 1, "association": 1}
    assert answer["memory_ids"]["11"] == held.pk
    new = answer["memory_ids"]["12"]
    assert Association.objects.filter(source_id=held.pk, target_id=new).exists()
    assert MemorySketch.objects.filter(memory_id=new).count() == BANDS
    touched = MemoryEvent.objects.get(memory_ref=held.pk, kind="touched")
    assert touched.actor_id == user.pk and touched.source == "import"


def test_a_background_import_reports_the_duplicates(user, namespace, make_memory, monkeypatch):
    held = make_memory("Alice works with Bob")
    monkeypatch.setattr(import_jobs, "enqueue", lambda *args: None)  # run here, below
    body = "".join(_file(_memory(1, "Alice works with Bob"), _memory(2, "Carol runs it")))
    run = import_jobs.import_job_create(
        namespace=namespace,
        body=io.BytesIO(body.encode()),
        ceiling=Classification.INTERNAL,
        actor=user,
    )
    assert import_jobs.import_job_run(run_id=run.pk)["deduplicated"] == 1
    run.refresh_from_db()
    state = import_jobs.import_job_state(run)
    assert state["status"] == "ok"
    assert state["counts"] == {"memory": 1, "deduplicated": 1}
    assert state["memory_ids"]["1"] == held.pk
