"""Smoke tests of `manage.py bench`: it runs on a tiny corpus and prints one table.

The HTTP figures are left out: the gunicorn it starts cannot see the test database.
"""

from __future__ import annotations

import json
import random
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db.models import F

from benchmarks import corpus as bench_corpus
from benchmarks.corpus import CORPUS_SLUG, vocabulary
from benchmarks.plot import load_runs, series
from memories.models import Association, Memory, Namespace
from memories.text import content_key
from review.models import Card


def _bench(**options) -> str:
    out = StringIO()
    call_command(
        "bench",
        size=200,
        only="ingest,recall,queue,size",
        creates=5,
        queries=10,
        queue_runs=3,
        no_http=True,
        stdout=out,
        stderr=StringIO(),
        **options,
    )
    return out.getvalue()


@pytest.mark.django_db
def test_it_prints_one_table_with_every_requested_figure() -> None:
    table = _bench()

    for row in (
        "cores",
        "memories (built now)",
        "service: memory_create x 5",
        "service: memory_bulk_create of 1000",
        "in process p50 / p95 / p99",
        "in process, typos, p50 / p95 / p99",
        "stage Sf",
        "review_queue(limit 50) p50 / p95 / p99",
        "per 1,000 memories: whole database",
    ):
        assert row in table
    assert "HTTP" not in table
    corpus = Namespace.objects.get(slug=CORPUS_SLUG)
    assert Memory.objects.filter(namespace=corpus).count() == 200
    assert Association.objects.filter(namespace=corpus).exists()
    # As memory_build writes them: true since they were written (recall's as_of reads it).
    assert not Memory.objects.filter(namespace=corpus).exclude(valid_from=F("created_at")).exists()
    # Each with its content key, as memory_derive writes it (the duplicate check's index).
    for memory in Memory.objects.filter(namespace=corpus)[:20]:
        assert memory.content_key == content_key(memory.content)
    # Ingest wrote to a scratch namespace, emptied afterwards.
    assert Memory.objects.count() == 200


@pytest.mark.django_db
def test_it_reuses_an_unchanged_corpus() -> None:
    _bench()
    first = set(Memory.objects.values_list("id", flat=True))

    table = _bench()

    assert "memories (reused)" in table
    assert set(Memory.objects.values_list("id", flat=True)) == first


@pytest.mark.django_db
def test_it_refuses_an_unknown_part() -> None:
    with pytest.raises(CommandError, match="Unknown parts"):
        call_command("bench", size=200, only="recall,nope", stdout=StringIO())


@pytest.mark.django_db
def test_it_spreads_a_corpus_over_namespaces_and_measures_the_first(monkeypatch) -> None:
    # Small insert batches, so the build goes through the second process as a large one does.
    monkeypatch.setattr(bench_corpus, "LOAD_BATCH", 40)
    out = StringIO()
    call_command(
        "bench",
        size=300,
        namespaces=3,
        only="recall,queue",
        queries=5,
        queue_runs=2,
        no_http=True,
        stdout=out,
        stderr=StringIO(),
    )

    table = out.getvalue()
    assert "namespaces (figures on bench-corpus-0001)" in table
    slugs = {f"{CORPUS_SLUG}-000{i}" for i in (1, 2, 3)}
    counts = {
        ns.slug: Memory.objects.filter(namespace=ns).count()
        for ns in Namespace.objects.filter(slug__startswith=CORPUS_SLUG)
    }
    assert counts == dict.fromkeys(slugs, 100)
    # Built like the service builds them: search text, signature, a card each.
    memory = Memory.objects.filter(namespace__slug=f"{CORPUS_SLUG}-0002").first()
    assert memory.search_text and len(memory.signature) == 32
    assert memory.events.filter(kind="created").count() == 1
    assert Card.objects.filter(memory=memory).exists()

    # Another layout replaces it: one namespace of 200, the three others gone.
    _bench()
    assert set(
        Namespace.objects.filter(slug__startswith=CORPUS_SLUG).values_list("slug", flat=True)
    ) == {CORPUS_SLUG}


def test_it_refuses_more_namespaces_than_a_tenth_of_the_size() -> None:
    with pytest.raises(CommandError, match="--namespaces"):
        call_command("bench", size=100, namespaces=11, stdout=StringIO())


@pytest.mark.django_db
def test_it_saves_the_table_and_draws_the_growth_plot(tmp_path) -> None:
    _bench(save_dir=str(tmp_path), plot=str(tmp_path / "growth.svg"))

    saved = json.loads(next(tmp_path.glob("*-200-1.json")).read_text())
    assert saved["size"] == 200 and saved["namespaces"] == 1
    assert any(row[:2] == ["recall", "in process p50 / p95 / p99"] for row in saved["rows"])
    # A second, larger run of the same engine gives a line of two points per panel.
    bigger = {**saved, "size": 2000}
    (tmp_path / "other-2000-1.json").write_text(json.dumps(bigger))
    call_command("bench", only="plot", save_dir=str(tmp_path), plot=str(tmp_path / "g.svg"))

    runs = load_runs(tmp_path)
    line = series(runs, "recall", "in process p50 / p95 / p99", 0)
    assert [size for size, _ in line[saved["engine"]]] == [200, 2000]
    svg = (tmp_path / "g.svg").read_text()
    assert svg.startswith("<svg") and svg.count("<polyline") >= 3
    assert "not measured" in svg  # nothing over HTTP in the tests


def test_corpus_words_are_drawn_as_weighted_choices_are() -> None:
    """The corpus stays the same corpus: sampling with precomputed cumulative weights
    draws exactly what random.choices(weights=...) draws from the same seed."""
    vocab = vocabulary()
    ours, reference = random.Random(11), random.Random(11)
    for k in (1, 4, 30, 80):
        assert vocab.sample(ours, k) == reference.choices(vocab.words, weights=vocab.weights, k=k)
