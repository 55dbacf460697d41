"""The search page explains itself (issue 17, item 10): fuzzy hits say what they matched and
rate below exact ones, associative results and digests show only above the relevance floor
with their reason, and digests read properly."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.consolidation import consolidation_build, digest_text
from memories.models import Consolidation
from recall.explain import RELEVANCE_FLOOR
from tests.support.dashboard import HX

pytestmark = pytest.mark.django_db


@pytest.fixture
def trips(user):
    """Two travel memories linked as the demo's are (related, 0.6), a third as the next turn
    of a session, and a digest of last week's memories."""
    travel = services.namespace_create(owner=user, name="Travel", mode="personal")
    last_week = timezone.now() - timedelta(days=7)
    kyoto = services.memory_create(
        namespace=travel,
        content="Kyoto: Fushimi Inari is quiet before 7am; bring water for the climb.",
        topic="travel",
        created_at=last_week,
    )
    lisbon = services.memory_create(
        namespace=travel,
        content="Lisbon: the Alfama viewpoint is crowded at sunset.",
        topic="travel",
        created_at=last_week,
    )
    passport = services.memory_create(
        namespace=travel,
        content="Passport expires in March 2029; renewal takes six weeks.",
        topic="papers",
    )
    ryokan = services.memory_create(
        namespace=travel, content="Book the ryokan two months ahead.", topic="papers"
    )
    services.association_create(source=passport, target=lisbon, weight=0.6, kind="related")
    services.association_create(source=kyoto, target=ryokan, weight=1.0, kind="next_turn")
    consolidation_build(namespace=travel, period="weekly", start=last_week.date())
    return {"kyoto": kyoto, "lisbon": lisbon, "passport": passport, "ryokan": ryokan}


def search(client, q: str, **params):
    """The whole page, as without JavaScript (htmx swaps in the same partial)."""
    response = client.get(reverse("search"), {"q": q, **params})
    assert response.status_code == 200
    return response


def shown(response) -> list[int]:
    return [row["hit"].memory_id for row in response.context["rows"]]


def result_html(response, memory_id: int) -> str:
    body = response.content.decode()
    match = re.search(rf'<li class="card result" id="result-{memory_id}".*?</li>\n', body, re.S)
    assert match, f"no result {memory_id} in the page"
    return match.group()


def text(html: str) -> str:
    """The words of some HTML as a person reads them."""
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def test_a_typo_hit_says_what_it_matched_and_never_rates_as_exact(ada_client, trips):
    exact = search(ada_client, "fushimi")
    typo = search(ada_client, "fushini")
    kyoto = trips["kyoto"].pk
    assert shown(exact)[0] == shown(typo)[0] == kyoto
    assert exact.context["rows"][0]["why"].relevance == 1.0
    assert typo.context["rows"][0]["why"].relevance == pytest.approx(0.8 * (1 - 1 / 7))
    html = result_html(typo, kyoto)
    assert 'data-relevance="0.686"' in html and "relevance 0.69" in html
    assert '<mark class="fuzzy" title="fushini ≈ Fushimi, 1 letter apart">Fushimi</mark>' in html
    assert "Matched: fushini ≈ Fushimi, 1 letter apart (0.69)." in text(html)
    # The API's own numbers stay, named for what they are.
    assert "Rank relevance" in html and "relative to this query" in html


def test_a_typo_hit_ranks_below_the_exact_one(ada_client, trips):
    response = search(ada_client, "inari alfamma")
    kyoto, lisbon = trips["kyoto"].pk, trips["lisbon"].pk
    assert shown(response)[:2] == [kyoto, lisbon]
    exact, typo = (row["why"] for row in response.context["rows"][:2])
    assert exact.relevance > typo.relevance
    assert "inari: exact (1.00); not found: alfamma." in text(result_html(response, kyoto))
    assert "alfamma ≈ Alfama, 1 letter apart (0.69); not found: inari." in text(
        result_html(response, lisbon)
    )


def test_a_partial_word_and_a_weak_trigram_say_so(ada_client, user):
    work = services.namespace_create(owner=user, name="Work", mode="agent_memory")
    redis = services.memory_create(namespace=work, content="Redis maxmemory-policy is noeviction.")
    db = services.memory_create(namespace=work, content="Production runs PostgreSQL 15.")
    partial = search(ada_client, "memory")
    assert shown(partial) == [redis.pk]
    assert "memory is part of maxmemory (0.53)" in text(result_html(partial, redis.pk))
    weak = search(ada_client, "postgrs")
    assert shown(weak) == [db.pk]
    assert "postgrs ≈ PostgreSQL, trigram similarity 0.46 (0.37)" in text(result_html(weak, db.pk))


def test_an_unrelated_query_shows_no_associative_result_and_no_digest(ada_client, trips):
    for q in ("xylophone", "memory", "score", "week digest"):
        body = search(ada_client, q).content.decode()
        assert "associative</span>" not in body, q
        assert 'id="digests-heading"' not in body, q


def test_a_weak_association_is_left_out_and_counted(ada_client, trips):
    response = search(ada_client, "passport")
    assert shown(response) == [trips["passport"].pk]  # recall also returned Lisbon (0.6 link)
    assert response.context["result"].results[1].memory_id == trips["lisbon"].pk
    assert response.context["hidden_results"] == 1
    assert f"Not shown, below relevance {RELEVANCE_FLOOR}: 1 associative result." in text(
        response.content.decode()
    )


def test_a_strong_association_is_shown_with_the_link_that_brought_it(ada_client, trips):
    response = search(ada_client, "fushimi")
    kyoto, ryokan = trips["kyoto"].pk, trips["ryokan"].pk
    assert shown(response)[:2] == [kyoto, ryokan]
    html = result_html(response, ryokan)
    assert "associative</span>" in html and "relevance 0.50" in html
    assert (
        f'<a href="#result-{kyoto}">#{kyoto} “Kyoto: Fushimi Inari is quiet before 7am; bring…”</a>'
        in html
    )
    assert "(next turn of the same session, link weight 1.00)" in text(html)


def test_a_digest_reads_properly_and_says_why_it_is_there(ada_client, trips):
    digest = Consolidation.objects.get()
    header = digest.text.split("\n")[0]
    assert header.endswith(": 2 memories, all of them, by score.")
    passport = trips["passport"]
    start = digest.period_start.replace(day=1, month=1)
    one = Consolidation.objects.create(
        namespace=digest.namespace,
        period="quarterly",
        period_start=start,
        topic="papers",
        text=digest_text(
            period="quarterly",
            start=start,
            topic="papers",
            total=1,
            items=[(passport.pk, passport.content, 1.0)],
            excerpt_chars=120,
        ),
        memory_ids=[passport.pk],
        content_hash="x",
    )
    response = search(ada_client, "sunset")
    body = text(response.content.decode())
    assert "Weekly digest of 2 memories about “travel”; sunset: exact." in body
    assert "<mark>sunset</mark>" in response.content.decode()
    assert "memory, it" not in body
    # A paragraph that names the topic only in the digest's own words is about the topic.
    about = search(ada_client, "papers")
    assert [d.digest.consolidation_id for d in about.context["digests"]] == [one.pk]
    assert "1 memory." in text(about.content.decode())


def test_digest_text_at_its_source_reads_properly(trips):
    header = Consolidation.objects.get().text.split("\n")[0]
    assert re.fullmatch(
        r'Weekly digest for the week of [\d-]+ \(\d{4}-W\d\d\) on "travel": 2 memories, '
        r"all of them, by score\.",
        header,
    )


def test_the_page_says_what_relevance_means(ada_client, trips):
    body = search(ada_client, "fushini").content.decode()
    assert "What relevance means" in body
    assert 'id="relevance-help"' in body and "1 exact, 0.9 another form" in body


def test_htmx_gets_the_same_explanations(ada_client, trips):
    body = ada_client.get(reverse("search"), {"q": "fushini"}, **HX).content.decode()
    assert body.lstrip().startswith('<section id="search-results"')
    assert "Matched: fushini ≈ Fushimi, 1 letter apart (0.69)." in text(body)
    assert '<mark class="fuzzy"' in body and 'id="relevance-help"' in body


def test_the_explanations_cost_a_fixed_number_of_queries(
    ada_client, trips, django_assert_max_num_queries
):
    with django_assert_max_num_queries(40) as few:
        search(ada_client, "fushimi")
    baseline = len(few.captured_queries)
    for i in range(8):
        services.memory_create(
            namespace=trips["kyoto"].namespace, content=f"Fushimi note {i}.", topic="travel"
        )
    with django_assert_max_num_queries(baseline):
        search(ada_client, "fushimi")


def test_a_range_that_ends_before_it_starts_is_refused_on_its_field(client, user):
    client.force_login(user)
    response = client.get(
        reverse("search"), {"q": "anything", "since": "2026-05-10", "until": "2026-05-01"}
    )
    assert response.status_code == 200
    assert response.context["form"].errors == {"until": ["Must not be before “From”."]}
    body = response.content.decode()
    assert "Must not be before “From”." in body
    assert body.count("autofocus") == 1  # on "To", not on the search box
    # The summary over the results (what htmx swaps in) says the label, linked to the field,
    # never the field's name in the query string.
    assert '<a href="#id_until">To</a>: Must not be before “From”.' in body
    assert "until: " not in body

    typo = client.get(reverse("search"), {"q": "x", "since": "2025-13-45", "limit": "abc"})
    summary = typo.content.decode()
    assert '<a href="#id_since">From</a>: Enter a valid date.' in summary
    assert '<a href="#id_limit">Show</a>: Select a valid choice.' in summary
    assert "since: " not in summary and "limit: " not in summary
