"""Scores people can read on the pages (issue 17, item 9): the vitality meter on the memory
list and page, the home page's histogram counted in SQL on a log scale (its bins and bands
agree with memories.scores on both engines), and the tag's fallback."""

from __future__ import annotations

import itertools
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.template import Context, Template
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.decay import Thresholds
from memories.models import Memory
from memories.scores import BANDS, band_of, score_bin, score_histogram
from memories.selectors import decay_histogram

pytestmark = pytest.mark.django_db

SERIAL = itertools.count()


def memory_scoring(namespace, *, strength: float, uses: int = 0, at=None, content: str = ""):
    """A memory whose decay score at `at` (last use) is (uses + 1)^0.6 * strength."""
    # Distinct contents: an equal one would count as a use of the first (no new memory).
    content = content or f"Memory {next(SERIAL)} of strength {strength}"
    memory = services.memory_create(namespace=namespace, content=content)
    at = at or timezone.now()
    Memory.objects.filter(pk=memory.pk).update(strength=strength, use_count=uses, last_used_at=at)
    memory.refresh_from_db()
    return memory


def test_the_histogram_query_bins_and_bands_as_the_pure_rule_does(personal):
    now = timezone.now()
    # Scores on the edges that matter: thresholds (band edges) and bin edges (0.1, 1, 2),
    # a skewed tail of well-used memories, and ones aged far below the axis.
    strengths = [0.05, 0.15, 0.35, 0.65, 0.1, 1.0, 2.0, 0.02, 0.5]
    for strength in strengths:
        memory_scoring(personal, strength=strength, at=now)
    for uses in (4, 9, 24, 60):
        memory_scoring(personal, strength=1.5, uses=uses, at=now)
    memory_scoring(personal, strength=1.0, at=now - timedelta(days=90))  # ~1e-9
    gone = memory_scoring(personal, strength=1.0, at=now)
    services.memory_forget(memory=gone, reason="not counted")

    expected_scores = [
        m.decay_score(now, personal.decay_params())
        for m in Memory.objects.filter(namespace=personal).exclude(pk=gone.pk)
    ]
    thresholds = Thresholds()
    expected = score_histogram(
        [(score_bin(s), BANDS.index(band_of(s, thresholds)), 1) for s in expected_scores],
        thresholds,
    )
    with CaptureQueriesContext(connection) as queries:
        histogram = decay_histogram([personal.pk], now)
    # One query reads the memories (SQLite also probes its math functions, reading none).
    reads = [q for q in queries.captured_queries if "memories_memory" in q["sql"]]
    assert len(reads) == 1 and len(queries.captured_queries) <= 2
    assert histogram == expected
    assert histogram.total == 14
    assert histogram.bands == {"faint": 2, "weak": 2, "fading": 2, "steady": 1, "strong": 7}
    assert histogram.underflow is not None and histogram.underflow.count == 1
    assert histogram.high_decade == 2  # 61^0.6 * 1.5 = 17.6: the scale reaches 100


def test_an_empty_histogram_still_shows_the_thresholds_scale(personal):
    histogram = decay_histogram([], timezone.now())
    assert histogram.total == 0 and len(histogram.bins) == 12


def test_the_memory_list_shows_vitality_with_the_raw_score_on_hover(ada_client, personal):
    steady = memory_scoring(personal, strength=0.503, content="steady one")
    strong = memory_scoring(personal, strength=1.19, uses=9, content="strong one")
    body = ada_client.get(reverse("memory-list")).content.decode()
    assert ">Vitality</th>" in body and ">Score</th>" not in body
    row = re.search(rf'<tr data-memory="{steady.pk}">(.*?)</tr>', body, re.S).group(1)
    assert 'data-vitality="75" data-band="steady" data-decay-score="0.50"' in row
    assert '<meter min="0" max="100" value="75" aria-hidden="true"></meter>' in row
    assert '<span class="vitality-text">75 % · steady</span>' in row
    assert '<span class="visually-hidden"> (decay score 0.50)</span>' in row
    assert 'title="Decay score 0.50. Above the review zone 0.15 to 0.35' in row
    row = re.search(rf'<tr data-memory="{strong.pk}">(.*?)</tr>', body, re.S).group(1)
    assert "100 % · strong" in row and 'title="Decay score 4.74. At or above' in row


def test_the_memory_page_explains_the_vitality_it_shows(ada_client, personal):
    memory = memory_scoring(personal, strength=0.203)
    body = ada_client.get(reverse("memory-detail", args=[memory.pk])).content.decode()
    assert "<dt>Vitality</dt>" in body and "<dt>Decay score</dt>" not in body
    why = re.search(r"<small class=\"vitality-why\" data-vitality-why>(.*?)</small>", body)
    assert why.group(1) == (
        "Decay score 0.20. In the review zone 0.15 to 0.35: reviewing or using it now helps "
        "most. 0 % is the forget threshold 0.05, 100 % the promote threshold 0.65."
    )
    assert body.count("25 % · fading") == 2  # details and the curve's caption
    assert "review zone 0.15\N{EN DASH}0.35 (shaded)" in body


def test_the_home_histogram_counts_bands_and_shows_the_real_distribution(ada_client, personal):
    # Well-used memories dominate, as in the complaint (13 of 15 in the top bin).
    strong = [(1, 1.0), (2, 1.0), (3, 1.0), (4, 1.0), (6, 1.0), (9, 1.19), (12, 1.0)]
    for uses, strength in [*strong, (20, 1.0), (30, 1.0), (2, 1.4)]:
        memory_scoring(personal, strength=strength, uses=uses)
    for strength in (0.03, 0.2, 0.5):
        memory_scoring(personal, strength=strength)
    response = ada_client.get(reverse("home"))
    body = response.content.decode()
    assert response.context["memories_scored"] == 13
    caption = re.search(r"<figcaption data-histogram-bands>(.*?)</figcaption>", body).group(1)
    assert caption.startswith(
        "13 live memories: 1 faint (below 0.05: short-term memories are forgotten), 0 weak, "
        "1 fading (the review zone 0.15\N{EN DASH}0.35), 1 steady, 10 strong (from 0.65: promoted)."
    )
    svg = re.search(r'<svg[^>]*class="plot plot-histogram".*?</svg>', body, re.S).group(0)
    counts = [int(n) for n in re.findall(r'class="plot-bar[^"]*"[^>]*data-value="(\d+)"', svg)]
    assert sum(counts) == 13
    assert counts[-1] == 1 and max(counts) == 3  # no pile-up bin: 7.86 alone at the top
    assert "logarithmic scale from 0.01 to 10" in svg


def test_the_vitality_tag_shows_a_dash_without_a_score():
    template = Template("{% load scores %}{% vitality score %}")
    for score in (None, "", "nan", float("inf")):
        assert (
            template.render(Context({"score": score})) == '<span class="muted">\N{EN DASH}</span>'
        )


def test_search_results_show_vitality_too(ada_client, personal):
    memory = memory_scoring(personal, strength=0.203, content="The Lisbon tram 28 is crowded.")
    response = ada_client.get(reverse("search"), {"q": "Lisbon tram"})
    body = response.content.decode()
    assert [row["hit"].memory_id for row in response.context["rows"]] == [memory.pk]
    why = re.search(r'<p class="why">(.*?)</p>', body, re.S).group(1)
    assert '· vitality <span class="vitality vitality-fading"' in why
    assert "25 % · fading" in why and "(decay score 0.20)" in why
