"""`manage.py bench_peer` and benchmarks.peer, peer_table and peer_venv: the shared inputs,
recall@k, the table, the peer venv.

Nothing here installs CortexGraph. The Engram side runs for real on a tiny corpus and the
LoCoMo fixture (with --no-peer); the last test drives the real peer too, but only when a
peer venv is already there (var/peer-venv, made by a real run of the command).
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from benchmarks import corpus as bench_corpus
from benchmarks import locomo, peer_table, peer_venv
from benchmarks import peer as bench_peer
from benchmarks.locomo import load_conversation
from benchmarks.peer import Question
from benchmarks.peer_driver.cortexgraph_driver import ids_to_refs
from benchmarks.peer_table import Row
from memories.models import Memory, Namespace
from recall.services import recall_run

FIXTURE = Path(__file__).parent / "fixtures" / "locomo_small.json"
NOW = datetime(2026, 1, 15, 12, 0, 0, 123456, tzinfo=UTC)
PEER_PYTHON = Path(settings.BASE_DIR) / "var" / "peer-venv" / "bin" / "python"


# --- Shared inputs ---------------------------------------------------------------------


def test_the_corpus_has_bench_corpus_texts_in_both_systems_ranges():
    items = bench_peer.corpus_items(None, 300, NOW)
    reference = bench_corpus.memory_items(
        None, bench_corpus.vocabulary(), random.Random(bench_corpus.SEED), 300, NOW
    )

    assert [i["content"] for i in items] == [r["content"] for r in reference]
    assert [i["keywords"] for i in items] == [r["keywords"] for r in reference]
    assert all(1.0 <= i["strength"] <= 2.0 for i in items)
    assert any(r["strength"] < 1.0 for r in reference)  # so the clamp did something
    assert all(i["created_at"].microsecond == 0 for i in items)
    assert all(0 <= (NOW - i["created_at"]).days <= 180 for i in items)


def test_the_peer_gets_the_same_memories_with_their_ages():
    items = bench_peer.corpus_items(None, 50, NOW)
    records = bench_peer.peer_records(items)

    assert [r["content"] for r in records] == [i["content"] for i in items]
    for item, record in zip(items, records, strict=True):
        assert record["tags"][0] == item["topic"]
        assert set(record["tags"]) == {item["topic"], *item["keywords"]}
        assert len(record["tags"]) == len(set(record["tags"]))
        assert record["strength"] == item["strength"]
        assert record["last_used"] == int(item["created_at"].timestamp())


def test_queries_are_fixed_and_made_of_corpus_words():
    vocab = bench_corpus.vocabulary()
    words = set(vocab.words)
    entities = set(vocab.entities)
    found = bench_peer.queries(200)

    assert found == bench_peer.queries(200)
    assert found != bench_peer.queries(200, seed=1)
    with_entity = 0
    for query in found:
        entity = next((e for e in entities if query.endswith(" " + e)), None)
        if entity:
            with_entity += 1
            query = query[: -len(entity) - 1]
        assert 1 <= len(query.split()) <= 4
        assert set(query.split()) <= words
    assert 20 <= with_entity <= 60  # about a fifth


def test_locomo_turns_and_questions_follow_eval_recalls_rules():
    conversations = bench_peer.locomo_conversations(json.loads(FIXTURE.read_text()))

    assert [c.sample_id for c in conversations] == ["tiny-1", "tiny-2"]
    first = conversations[0]
    assert [t["dia_id"] for t in first.turns] == [
        "D1:1",
        "D1:2",
        "D1:3",
        "D1:4",
        "D2:1",
        "D2:2",
        "D2:3",
        "D2:4",
    ]
    cello = next(t for t in first.turns if t["dia_id"] == "D1:4")
    assert cello["content"].startswith("Ben: I started learning the cello")
    assert "[shares" not in cello["content"]  # eval_recall's default: no captions
    assert cello["tags"] == ["Ben"]
    assert cello["last_used"] == int(datetime(2024, 3, 3, 9, 15, 3, tzinfo=UTC).timestamp())
    # Category 5 and questions without evidence are left out; packed evidence is split.
    assert [q.category for q in first.questions] == [4, 4, 2, 1, 3]
    assert first.questions[3].evidence == ["D1:4", "D2:1"]
    assert sum(len(c.questions) for c in conversations) == 7  # eval_recall's count
    # CortexGraph refuses tags with letters outside ASCII.
    assert {tuple(t["tags"]) for t in conversations[1].turns} >= {("Chloe",)}


# --- recall@k --------------------------------------------------------------------------


def test_recall_at_k_is_the_share_of_evidence_in_the_first_k():
    returned = ["D1:1", "D2:2", "D1:3", "D2:4"]
    assert locomo.recall_at_k(returned, ["D2:2"], 1) == 0.0
    assert locomo.recall_at_k(returned, ["D2:2"], 2) == 1.0
    assert locomo.recall_at_k(returned, ["D2:2", "D2:4"], 2) == 0.5
    assert locomo.recall_at_k(returned, ["D2:2", "D2:4"], 10) == 1.0
    assert locomo.recall_at_k([], ["D1:1"], 5) == 0.0
    assert locomo.recall_at_k(["", ""], ["D1:1"], 5) == 0.0


def test_scores_are_averaged_over_questions_and_per_category():
    questions = [
        Question(category=1, question="a", evidence=["x", "y"]),
        Question(category=1, question="b", evidence=["z"]),
        Question(category=4, question="c", evidence=["w"]),
    ]
    returned = [["x", "q", "y"], ["q", "z"], []]

    scored = bench_peer.score_answers(questions, returned, [1, 3])

    assert scored["questions"] == 3
    assert scored["recall"][1] == pytest.approx((0.5 + 0 + 0) / 3)
    assert scored["recall"][3] == pytest.approx((1 + 1 + 0) / 3)
    assert scored["by_category"][1] == {"questions": 2, 1: 0.25, 3: 1.0}
    assert scored["by_category"][4] == {"questions": 1, 1: 0.0, 3: 0.0}
    with pytest.raises(ValueError):
        bench_peer.score_answers(questions, returned[:2], [1])


@pytest.mark.django_db
def test_scoring_engrams_own_results_reproduces_eval_recall(tmp_path, user):
    """The peer is scored by the same definition as eval_recall scores Engram."""
    out = tmp_path / "eval.json"
    call_command("eval_recall", str(FIXTURE), "--k", "1,2,5", "--json", str(out), stdout=StringIO())
    expected = json.loads(out.read_text())

    data = json.loads(FIXTURE.read_text())
    questions, returned = [], []
    for item, conversation in zip(data, bench_peer.locomo_conversations(data), strict=True):
        namespace, dia_of = load_conversation(item, owner=user)
        for question in conversation.questions:
            result = recall_run(
                namespaces=[namespace], ceiling=3, query=question.question, limit=5, track=False
            )
            returned.append([dia_of.get(hit.memory_id) for hit in result.results])
            questions.append(question)
    scored = bench_peer.score_answers(questions, returned, [1, 2, 5])

    assert scored["questions"] == expected["questions"]
    for k in (1, 2, 5):
        assert scored["recall"][k] == pytest.approx(expected["recall"][str(k)])


def test_the_driver_maps_results_back_to_their_turns():
    ref_of = {"a": "D1:1", "b": "D1:2"}
    assert ids_to_refs([{"id": "b"}, {"id": "a"}, {"id": "zz"}], ref_of) == ["D1:2", "D1:1", ""]


# --- The table -------------------------------------------------------------------------


def test_ratio_is_engram_over_peer():
    assert peer_table.ratio(3.0, 1.5) == "2.00"
    assert peer_table.ratio(0.5, 2.0) == "0.25"
    assert peer_table.ratio(1.0, 0.0) == "n/a"
    assert peer_table.ratio(None, 1.0) == "n/a"
    assert peer_table.ratio(1.0, None) == "n/a"


def _figures() -> dict:
    side = {
        "memories": 100,
        "load_seconds": 2.0,
        "load_rate": 50.0,
        "queries": 20,
        "search_ms": {"p50": 10.0, "p95": 20.0},
        "results_per_query": 9.5,
        "distinct_results": 80,
        "decay_dry": {"seconds": 0.02, "changed": 90},
        "decay": {"seconds": 0.04, "changed": 90},
    }
    peer = {**side, "load_seconds": 0.5, "load_rate": 200.0, "search_ms": {"p50": 5.0, "p95": 5.0}}
    peer["cold_start_seconds"] = 0.01
    return {
        "engram": {
            "version": "engram abc",
            "storage": "SQLite 3.40.1",
            "corpus": side,
            "locomo": {"questions": 7, "recall": {"1": 0.5, "10": 0.9}, "latency_ms": {"p50": 8}},
        },
        "peer": {
            "version": "cortexgraph 1.2.1",
            "storage": "JSONL",
            "corpus": peer,
            "locomo": {
                "questions": 7,
                "recall": {1: 0.25, 10: 0.0},
                "wide_top_k": 100,
                "recall_wide": {1: 0.25, 10: 0.5},
                "recall_recent": {1: 0.3, 10: 0.6},
                "latency_ms": {"p50": 2.0},
            },
        },
    }


def test_the_table_has_one_row_per_figure_with_ratios():
    rows = {row.figure: row for row in peer_table.table_rows(_figures())}

    assert rows["load 100 memories, s"] == Row("load 100 memories, s", "2.0", "0.5", "4.00")
    assert rows["load rate, memories/s"].ratio == "0.25"
    assert rows["search p50 (20 queries, k=10), ms"].ratio == "2.00"
    assert rows["search p95 (20 queries, k=10), ms"].ratio == "4.00"
    assert rows["decay pass, writing, s"] == Row("decay pass, writing, s", "0.040", "0.040", "1.00")
    assert rows["LoCoMo recall@1 (7 questions)"] == Row(
        "LoCoMo recall@1 (7 questions)", "0.500", "0.250", "2.00"
    )
    assert rows["LoCoMo recall@10 (7 questions)"].ratio == "n/a"  # the peer found none
    assert rows["  recall@10: peer, top_k=100 cut to 10"].peer == "0.500"
    assert rows["  recall@1: peer, turns saved just now, top_k=100 cut to 1"].peer == "0.300"
    assert rows["LoCoMo search p50, ms"].ratio == "4.00"

    text = peer_table.format_table(list(rows.values()))
    lines = text.splitlines()
    assert lines[0].split() == ["figure", "Engram", "CortexGraph", "Engram", "/", "CortexGraph"]
    assert set(lines[1]) == {"-", " "}
    assert len(lines) == len(rows) + 2
    assert any(line.startswith("LoCoMo recall@1 (7 questions)") for line in lines)


def test_the_table_without_the_peer_shows_dashes():
    figures = _figures()
    del figures["peer"]
    rows = {row.figure: row for row in peer_table.table_rows(figures)}

    assert rows["load 100 memories, s"] == Row("load 100 memories, s", "2.0", "-", "n/a")
    assert rows["LoCoMo recall@10 (7 questions)"].peer == "-"
    assert "peer cold start (read JSONL), s" not in rows


# --- The peer venv ---------------------------------------------------------------------


def test_a_peer_venv_is_reused_only_with_the_pinned_versions():
    assert peer_venv._usable({"cortexgraph": peer_venv.PEER_VERSION, "mcp": "1.30.0"})
    assert not peer_venv._usable({"cortexgraph": peer_venv.PEER_VERSION, "mcp": "2.3.0"})
    assert not peer_venv._usable({"cortexgraph": "1.0.0", "mcp": "1.30.0"})
    assert not peer_venv._usable(None)


def test_the_driver_keeps_the_peers_files_in_its_work_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://secret@db/engram")
    env = peer_venv.driver_env(tmp_path)

    for name in ("HOME", "XDG_CONFIG_HOME", "CORTEXGRAPH_STORAGE_PATH"):
        assert Path(env[name]).is_relative_to(tmp_path)
    assert env["CORTEXGRAPH_ENABLE_EMBEDDINGS"] == "false"
    assert "DATABASE_URL" not in env
    assert (tmp_path / "config" / "cortexgraph" / ".env").exists()


# --- The command -----------------------------------------------------------------------


@pytest.mark.django_db
def test_the_command_measures_engram_and_leaves_nothing_behind(tmp_path):
    out, report = StringIO(), tmp_path / "figures.json"

    call_command(
        "bench_peer",
        size=60,
        queries=5,
        no_peer=True,
        eval=str(FIXTURE),
        json_out=str(report),
        stdout=out,
        stderr=StringIO(),
    )

    table = out.getvalue()
    for figure in (
        "load 60 memories, s",
        "search p50 (5 queries, k=10), ms",
        "decay pass, dry run (Engram sweep / peer gc), s",
        "decay pass, writing, s",
        "LoCoMo recall@10 (7 questions)",
    ):
        assert figure in table
    figures = json.loads(report.read_text())
    corpus = figures["engram"]["corpus"]
    assert corpus["memories"] == 60
    assert corpus["decay_dry"]["examined"] == 60
    # The dry run predicts what the writing sweep then does.
    assert corpus["decay"]["changed"] == corpus["decay_dry"]["changed"] > 0
    assert figures["engram"]["locomo"]["questions"] == 7
    assert figures["engram"]["locomo"]["recall"]["10"] >= 0.7
    assert "peer" not in figures
    assert not Namespace.objects.filter(slug=bench_peer.SCRATCH_SLUG).exists()
    assert not Memory.objects.exists()


@pytest.mark.django_db
def test_the_command_refuses_a_missing_eval_file(tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        call_command(
            "bench_peer", size=20, no_peer=True, eval=str(tmp_path / "nope.json"), stdout=StringIO()
        )


def _peer_ready() -> bool:
    return PEER_PYTHON.exists() and peer_venv._usable(peer_venv._peer_versions(PEER_PYTHON))


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.skipif(not _peer_ready(), reason="no peer venv: run manage.py bench_peer once")
def test_the_command_drives_the_real_peer_when_its_venv_is_there(tmp_path):
    report = tmp_path / "figures.json"

    call_command(
        "bench_peer",
        size=80,
        queries=5,
        eval=str(FIXTURE),
        json_out=str(report),
        stdout=StringIO(),
        stderr=StringIO(),
    )

    figures = json.loads(report.read_text())
    engram, peer = figures["engram"]["corpus"], figures["peer"]["corpus"]
    assert peer["memories"] == 80
    assert figures["peer"]["version"].startswith(f"cortexgraph {peer_venv.PEER_VERSION}")
    # Same ages, strengths and formula: both forget the same memories.
    assert peer["decay_dry"]["changed"] == engram["decay_dry"]["changed"]
    assert peer["decay"]["changed"] == peer["decay_dry"]["changed"]
    assert peer["memories_after_gc"] == 80 - peer["decay"]["changed"]
    locomo = figures["peer"]["locomo"]
    assert locomo["questions"] == 7
    assert set(locomo["recall"]) == {"1", "5", "10"}
    assert all(0.0 <= v <= 1.0 for v in locomo["recall"].values())
