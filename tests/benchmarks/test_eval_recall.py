"""The LoCoMo evaluation command on a small fixture written for the suite."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from benchmarks.locomo import (
    conversation_items,
    evidence_ids,
    load_conversation,
    parse_session_date,
    recall_at_k,
)
from benchmarks.stats import percentile
from memories import services
from memories.models import Association, Memory, Namespace

FIXTURE = Path(__file__).parent / "fixtures" / "locomo_small.json"

pytestmark = pytest.mark.django_db


def test_it_prints_recall_at_k_overall_per_category_and_latency(tmp_path):
    out = StringIO()
    report = tmp_path / "figures.json"
    call_command("eval_recall", str(FIXTURE), "--k", "1,3", "--json", str(report), stdout=out)
    text = out.getvalue()
    assert "2 conversations, 11 memories, 7 questions (categories 1-4)" in text
    assert "overall     recall@1" in text
    for category in (1, 2, 3, 4):
        assert f"category {category} (n=" in text
    assert "latency ms  p50" in text
    figures = json.loads(report.read_text())
    assert set(figures["recall"]) == {"1", "3"}
    assert figures["recall"]["3"] >= 0.7
    assert figures["recall"]["1"] <= figures["recall"]["3"]


def test_it_removes_its_namespaces_and_tracks_nothing():
    call_command("eval_recall", str(FIXTURE), stdout=StringIO())
    assert not Namespace.objects.exists()
    assert not Memory.objects.exists()


def test_it_keeps_the_namespaces_when_asked():
    call_command("eval_recall", str(FIXTURE), "--keep", stdout=StringIO())
    assert Namespace.objects.count() == 2
    assert Memory.objects.filter(recall_count__gt=0).count() == 0


def test_it_loads_one_memory_per_turn_linked_to_its_neighbours(user):
    item = json.loads(FIXTURE.read_text())[0]
    namespace, dia_of = load_conversation(item, owner=user, captions=True)
    assert sorted(dia_of.values()) == [
        (dia,) for dia in ["D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2", "D2:3", "D2:4"]
    ]
    cello = Memory.objects.get(pk=next(k for k, v in dia_of.items() if v == ("D1:4",)))
    assert cello.content.startswith("Ben: I started learning the cello")
    assert cello.content.endswith("[shares a photo of a cello leaning against a bookshelf]")
    assert cello.keywords == ["Ben"]
    assert cello.created_at.isoformat().startswith("2024-03-03T09:15:03")
    # Session 1: 3 next-turn + 2 skip-turn links; session 2 the same; none across sessions.
    assert Association.objects.filter(namespace=namespace).count() == 10


def _written(namespace) -> tuple[list[tuple], set[tuple]]:
    """What a load wrote, without ids: the memories' fields a client sets and the links
    between them, named by the turns' contents."""
    memories = Memory.objects.filter(namespace=namespace).order_by("id")
    rows = [
        (m.content, m.keywords, m.created_at, m.session_id, m.position, m.classification)
        for m in memories
    ]
    content = dict(memories.values_list("id", "content"))
    links = {
        (content[a.source_id], content[a.target_id], a.weight, a.kind)
        for a in Association.objects.filter(namespace=namespace)
    }
    return rows, links


def test_it_writes_exactly_what_an_agent_writes_through_the_bulk_endpoint(user, make_token, api):
    """The evaluation's load and the API's bulk endpoint, given the same turns, store the
    same memories and the same links (issue 15: the measured path is the product path)."""
    item = json.loads(FIXTURE.read_text())[0]
    loaded, _ = load_conversation(item, owner=user)

    agents = services.namespace_create(owner=user, name="Agent")
    _, secret = make_token(user)
    turns = [{k: v for k, v in turn.items() if k != "_dia_id"} for turn in conversation_items(item)]
    response = api(secret).post(
        "/api/v1/memories/bulk", {"namespace": agents.slug, "memories": turns}, format="json"
    )
    assert response.status_code == 201, response.json()

    assert _written(loaded) == _written(agents)
    assert _written(loaded)[1]  # the sessions' links are there, written by the product


def test_without_associations_its_namespaces_do_not_link_sessions(user):
    item = json.loads(FIXTURE.read_text())[0]
    namespace, _ = load_conversation(item, owner=user, associations=False)
    assert namespace.session_links is False
    assert not Association.objects.filter(namespace=namespace).exists()
    assert Memory.objects.filter(namespace=namespace).exclude(session_id="").count() == 8


def _repeating_conversation() -> dict:
    """Two sessions in which Ava says the same words: the namespace dedupes exact texts, as
    a new namespace does by default, so both turns are one memory."""
    return {
        "sample_id": "repeat",
        "conversation": {
            "speaker_a": "Ava",
            "speaker_b": "Ben",
            "session_1_date_time": "9:00 am on 3 March, 2024",
            "session_1": [
                {"speaker": "Ava", "dia_id": "D1:1", "text": "The marmalade cat is back."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Did you feed him?"},
            ],
            "session_2_date_time": "9:00 am on 9 March, 2024",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "Any news of the garden?"},
                {"speaker": "Ava", "dia_id": "D2:2", "text": "The marmalade cat is back."},
            ],
        },
        "qa": [
            {"question": "Which cat came back?", "evidence": ["D1:1"], "category": 4},
            {"question": "Which cat came back again?", "evidence": ["D2:2"], "category": 4},
        ],
    }


def test_a_memory_written_by_several_turns_answers_for_each_of_them(user, tmp_path):
    """A file whose turns repeat a text (a held-out file may): the write of the second copy
    answers with the first memory, which then stands for both turns, whichever of them a
    question's evidence names."""
    item = _repeating_conversation()
    namespace, dia_of = load_conversation(item, owner=user)
    assert Memory.objects.filter(namespace=namespace).count() == 3
    assert sorted(dia_of.values()) == [("D1:1", "D2:2"), ("D1:2",), ("D2:1",)]
    assert recall_at_k([("D1:1", "D2:2"), ("D2:1",)], ["D1:1"], 1) == 1.0
    assert recall_at_k([("D2:1",), None, ("D1:1", "D2:2")], ["D2:2", "D1:1"], 2) == 0.0
    assert recall_at_k([("D2:1",), None, ("D1:1", "D2:2")], ["D2:2", "D1:2"], 3) == 0.5
    data = tmp_path / "repeat.json"
    data.write_text(json.dumps([item]))
    report = tmp_path / "figures.json"
    call_command("eval_recall", str(data), "--k", "1", "--json", str(report), stdout=StringIO())
    assert json.loads(report.read_text())["recall"]["1"] == 1.0


def test_evidence_naming_no_turn_is_counted_and_not_scored(tmp_path):
    """An evidence id that names no turn of the conversation ("D", a turn past the end of
    its session) could be found by no system: it is reported, and the question is scored
    on the ids that name turns; a question left with none is not asked. A typo of a real
    id ("D:2:2") is that turn, and a turn without text is still a turn of the file."""
    item = _repeating_conversation()
    item["conversation"]["session_1"].append({"speaker": "Ben", "dia_id": "D1:3", "text": " "})
    item["qa"] = [
        {"question": "Which cat came back again?", "evidence": ["D:2:2", "D"], "category": 4},
        {"question": "Who fed the cat?", "evidence": ["D1:9"], "category": 4},
        {"question": "What did Ben not say?", "evidence": ["D1:3"], "category": 4},
    ]
    data = tmp_path / "typos.json"
    data.write_text(json.dumps([item]))
    report = tmp_path / "figures.json"
    out = StringIO()
    call_command("eval_recall", str(data), "--k", "1,5", "--json", str(report), stdout=out)
    figures = json.loads(report.read_text())
    assert figures["questions"] == 2
    assert figures["ignored_evidence"] == 2
    assert "2 evidence ids name no turn of their conversation" in out.getvalue()
    # The first question's one real turn is found; the blank turn never can be.
    assert figures["recall"]["5"] == 0.5


def test_it_parses_session_dates_and_packed_evidence():
    assert parse_session_date("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"
    assert parse_session_date("someday") is None
    assert evidence_ids(["D8:6; D9:17", "D1:2"]) == ["D8:6", "D9:17", "D1:2"]
    # LoCoMo's own typos: a stray colon, leading zeros; what is no id at all stays as it is.
    assert evidence_ids(["D:11:26", "D3:07", "D", "D1:2"]) == ["D11:26", "D3:7", "D", "D1:2"]
    assert percentile([1.0, 2.0, 3.0, 4.0, 100.0], 0.5) == 3.0


def test_it_rejects_a_file_without_questions(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    with pytest.raises(CommandError):
        call_command("eval_recall", str(empty), stdout=StringIO())


def test_the_floor_file_fails_the_command_when_recall_falls_below_it(tmp_path):
    report = tmp_path / "figures.json"
    call_command(
        "eval_recall", str(FIXTURE), "--k", "1,3", "--json", str(report), stdout=StringIO()
    )
    figure = json.loads(report.read_text())["recall"]["3"]
    floor = tmp_path / "floor"
    floor.write_text(f"{figure:.3f}\n")
    out = StringIO()
    call_command("eval_recall", str(FIXTURE), "--k", "1,3", "--floor-file", str(floor), stdout=out)
    assert f"recall@3 {figure:.3f} is at or above the floor" in out.getvalue()
    floor.write_text(f"{figure + 0.01:.3f}\n")
    with pytest.raises(CommandError, match="below the floor"):
        call_command("eval_recall", str(FIXTURE), "--k", "1,3", "--floor-file", str(floor))


@pytest.mark.parametrize("content", ["", "high", "1.5"])
def test_an_unreadable_floor_is_refused_before_anything_runs(tmp_path, content):
    floor = tmp_path / "floor"
    floor.write_text(content)
    with pytest.raises(CommandError, match="recall floor"):
        call_command("eval_recall", str(FIXTURE), "--floor-file", str(floor))
    assert not Namespace.objects.exists()


def test_the_repository_floor_is_a_fraction():
    floor = Path(__file__).resolve().parents[2] / ".recall-floor"
    assert 0.5 < float(floor.read_text()) <= 1.0
