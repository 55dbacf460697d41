"""The card browser (issue 17, item 6): every card the person could review with its state,
filtered and sorted by GET parameters, a page at a time in a constant number of queries,
and nothing of another user's or above the ceiling."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.auth import Scope
from memories.models import Classification, Namespace
from review.models import Card
from review.selectors.browser import browser_deck, browser_deck_param
from review.services import card_ensure
from review.templatetags.review_panels import deck_cards_url
from tests.support.dashboard import HX, queries

pytestmark = pytest.mark.django_db

URL = reverse("card-browser")


def card(namespace, content, *, topic="geo", **fields) -> Card:
    memory = services.memory_create(namespace=namespace, content=content, topic=topic)
    made = card_ensure(memory=memory)
    Card.objects.filter(pk=made.pk).update(**fields)
    made.refresh_from_db()
    return made


@pytest.fixture
def deck(personal):
    """One card in each state, in two decks."""
    now = timezone.now()
    day = timedelta(days=1)
    return {
        "new": card(personal, "A new card."),
        "learning": card(
            personal,
            "A card in a learning step.",
            last_reviewed_at=now - timedelta(minutes=5),
            next_review=now + timedelta(minutes=5),
            repetitions=1,
            total_reviews=1,
            interval_days=1,
        ),
        "review": card(
            personal,
            "A card in review.",
            topic="art",
            last_reviewed_at=now - 2 * day,
            next_review=now + 4 * day,
            interval_days=6,
            repetitions=3,
            total_reviews=5,
            easiness=1.9,
            lapses=2,
        ),
        "overdue": card(
            personal,
            "An overdue card.",
            topic="art",
            last_reviewed_at=now - 9 * day,
            next_review=now - 3 * day,
            interval_days=6,
            repetitions=2,
            easiness=2.7,
            lapses=1,
        ),
        "suspended": card(
            personal,
            "A suspended card.",
            suspended_at=now,
            next_review=now - day,
            last_reviewed_at=now - 2 * day,
        ),
        "buried": card(
            personal,
            "A buried card.",
            buried_until=now + day,
            next_review=now - day,
            last_reviewed_at=now - 2 * day,
            easiness=1.3,
        ),
        "leech": card(
            personal,
            "A leech.",
            leech=True,
            suspended_at=now,
            lapses=8,
            next_review=now + day,
            last_reviewed_at=now - day,
        ),
    }


def shown(response) -> list[str]:
    return [row["memory"].content for row in response.context["rows"]]


def test_it_lists_every_card_with_its_state(ada_client, deck):
    response = ada_client.get(URL)
    assert response.status_code == 200
    states = {row["memory"].content: row["card"].state for row in response.context["rows"]}
    assert states == {
        "A new card.": "new",
        "A card in a learning step.": "learning",
        "A card in review.": "review",
        "An overdue card.": "review",
        "A suspended card.": "suspended",
        "A buried card.": "buried",
        "A leech.": "suspended",
    }
    body = response.content.decode()
    assert '<span class="badge badge-learning">Learning</span>' in body
    assert "leech</span>" in body
    assert f'href="{reverse("memory-detail", args=[deck["review"].memory_id])}"' in body
    assert "10 min" in body  # the learning step's interval
    assert ">1.90<" in body  # SM-2's easiness


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("new", {"A new card."}),
        ("learning", {"A card in a learning step."}),
        ("review", {"A card in review.", "An overdue card."}),
        ("suspended", {"A suspended card.", "A leech."}),
        ("buried", {"A buried card."}),
        ("leech", {"A leech."}),
    ],
)
def test_it_filters_by_state(ada_client, deck, state, expected):
    assert set(shown(ada_client.get(URL, {"state": state}))) == expected


def test_it_filters_by_namespace_and_deck(ada_client, user, deck):
    other = services.namespace_create(owner=user, name="Other", mode=Namespace.Mode.PERSONAL)
    card(other, "In another namespace.", topic="art")
    assert shown(ada_client.get(URL, {"namespace": other.slug})) == ["In another namespace."]
    art = set(shown(ada_client.get(URL, {"deck": "art"})))
    assert art == {"A card in review.", "An overdue card.", "In another namespace."}
    both = shown(ada_client.get(URL, {"deck": "art", "namespace": "personal"}))
    assert set(both) == {"A card in review.", "An overdue card."}
    # A bad value in one filter leaves the others working.
    assert set(shown(ada_client.get(URL, {"deck": "art", "state": "nope"}))) == art


@pytest.mark.parametrize("page", ["review-index", "cram-index", "home", "deck-options"])
def test_each_deck_lists_link_lands_on_exactly_its_cards_no_topic_too(
    ada_client, user, deck, personal, page
):
    """The card browser had no way to show the "(no topic)" deck ("" was every deck), and
    no deck list linked to the browser. Each deck's name on the home, review, cram and deck
    options pages now opens the browser filtered to exactly that deck's cards, the deck
    without a topic too; its filter offers the deck by name."""
    loose = {card(personal, f"Loose fact {i}.", topic="").memory.content for i in range(2)}
    other = services.namespace_create(owner=user, name="Other", mode=Namespace.Mode.PERSONAL)
    card(other, "Loose elsewhere.", topic="")
    url = reverse(page, args=[personal.slug]) if page == "deck-options" else reverse(page)
    body = ada_client.get(url).content.decode()
    rows = body[body.index('data-namespace="personal"') :] if page != "deck-options" else body
    row = rows[rows.index('<tr data-deck="">') :]
    link = re.search(r'<a href="([^"]+)"', row).group(1).replace("&amp;", "&")
    assert link.startswith(URL)
    landed = ada_client.get(link)
    assert set(shown(landed)) == loose
    select = landed.content.decode().split('name="deck"')[1].split("</select>")[0]
    assert re.search(r'<option value="[^"]*" selected>\(no topic\)</option>', select)
    # A topic's link still lands on that topic alone; "" (All decks) is every deck.
    geo = rows[rows.index('<tr data-deck="geo">') :]
    geo_link = re.search(r'<a href="([^"]+)"', geo).group(1).replace("&amp;", "&")
    assert set(shown(ada_client.get(geo_link))) == {
        c.memory.content for c in deck.values() if c.memory.topic == "geo"
    }
    everything = shown(ada_client.get(URL, {"namespace": "personal", "deck": ""}))
    assert loose < set(everything) and len(everything) == len(deck) + 2


def test_it_sorts_by_due_ease_lapses_and_score(ada_client, deck):
    due = shown(ada_client.get(URL, {"sort": "due"}))
    assert due[0] == "An overdue card." and due[-1] == "A new card."
    ease = shown(ada_client.get(URL, {"sort": "ease"}))
    assert ease[0] == "A buried card." and ease.index("A card in review.") < ease.index(
        "An overdue card."
    )
    assert ease[-1] == "An overdue card."  # easiness 2.7
    lapses = shown(ada_client.get(URL, {"sort": "lapses"}))
    assert lapses[:3] == ["A leech.", "A card in review.", "An overdue card."]
    # Weakest first, by the same score the page shows.
    for name, days in (("review", 40), ("overdue", 5)):
        memory = deck[name].memory
        memory.__class__.objects.filter(pk=memory.pk).update(
            last_used_at=timezone.now() - timedelta(days=days)
        )
    response = ada_client.get(URL, {"sort": "score"})
    scores = [row["score"] for row in response.context["rows"]]
    assert scores == sorted(scores)
    assert shown(response)[0] == "A card in review."
    assert 'aria-sort="ascending"' in response.content.decode()


def test_fsrs_cards_show_their_difficulty_as_ease(ada_client, user):
    fsrs = services.namespace_create(owner=user, name="Fsrs", mode="personal", scheduler="fsrs")
    state = {"state": 2, "step": None, "stability": 3.1, "difficulty": 7.25, "due": None}
    hard = card(fsrs, "Hard for FSRS.", scheduler="fsrs", fsrs_state=state)
    card(fsrs, "Easy for FSRS.", scheduler="fsrs", fsrs_state=state | {"difficulty": 2.0})
    response = ada_client.get(URL, {"sort": "ease"})
    assert shown(response)[0] == "Hard for FSRS."
    assert response.context["rows"][0]["card"].ease == pytest.approx(7.25)
    body = response.content.decode()
    assert '<abbr title="FSRS difficulty">D</abbr> 7.3' in body
    assert response.context["rows"][0]["card"].pk == hard.pk


def test_it_shows_only_the_persons_cards_within_the_ceiling(
    ada_client, personal, theirs, monkeypatch
):
    mine = card(personal, "Mine.")
    secret = services.memory_create(
        namespace=personal, content="Restricted.", classification=Classification.RESTRICTED
    )
    card_ensure(memory=secret)
    gone = card(personal, "Forgotten.")
    services.memory_forget(memory=gone.memory, reason="x")
    assert set(shown(ada_client.get(URL))) == {"Mine.", "Restricted."}
    assert "Bob" not in ada_client.get(URL).content.decode()

    original = Scope.of.__func__

    def of(cls, request):
        scope = original(cls, request)
        scope.ceiling = Classification.INTERNAL
        return scope

    monkeypatch.setattr(Scope, "of", classmethod(of))
    assert [row["card"].pk for row in ada_client.get(URL).context["rows"]] == [mine.pk]


def test_a_page_is_a_constant_number_of_queries(
    ada_client, user, personal, django_assert_max_num_queries
):
    for i in range(3):
        card(personal, f"Small {i}.", next_review=timezone.now(), last_reviewed_at=timezone.now())
    small = {sort: queries(ada_client, f"{URL}?sort={sort}") for sort in ("due", "score")}
    assert small["due"] <= 7 and small["score"] <= small["due"] + 2
    other = services.namespace_create(owner=user, name="Wide", mode="personal")
    for i in range(40):
        card((personal, other)[i % 2], f"Big {i}.", topic=f"deck{i % 4}", lapses=i)
    for sort, count in small.items():
        assert queries(ada_client, f"{URL}?sort={sort}") == count
        # The page itself is one query (two by score: the order, then the cards); the rest
        # is the session, the person, their namespaces and the decks.
        with django_assert_max_num_queries(count):
            page = ada_client.get(URL, {"sort": sort, "page": 2})
        assert len(page.context["rows"]) == 18


def test_it_pages_like_the_memory_list_and_answers_htmx_with_its_table(ada_client, personal):
    for i in range(27):
        card(personal, f"Card {i}.")
    first = ada_client.get(URL)
    assert len(first.context["rows"]) == 25
    assert 'rel="next"' in first.content.decode()
    assert len(ada_client.get(URL, {"page": 2}).context["rows"]) == 2
    partial = ada_client.get(URL, {"state": "new"}, **HX).content.decode()
    assert partial.lstrip().startswith('<section id="card-results"')
    assert 'role="search"' not in partial  # the filters stay; only the table is swapped


def test_the_nav_links_to_the_card_browser(ada_client, personal):
    body = ada_client.get(reverse("review-index")).content.decode()
    assert f'href="{URL}"' in body
    page = ada_client.get(URL).content.decode()
    assert f'<a href="{URL}" aria-current="page">Cards</a>' in page
    assert "No cards match these filters." in page


def test_a_topic_named_like_the_no_topic_deck_is_a_deck_of_its_own(ada_client, personal):
    """A topic may be any text, "(no topic)" too: it was the no-topic deck's filter value,
    so its link (and the select's choice) showed the memories without a topic instead.
    Each deck has its own value now, and every link lands on exactly its cards."""
    decks = {
        "": {card(personal, "Without a topic.", topic="").memory.content},
        "(no topic)": {card(personal, "Named like none.", topic="(no topic)").memory.content},
        "\\(no topic)": {card(personal, "Escape and name.", topic="\\(no topic)").memory.content},
        "\\": {card(personal, "Just the escape.", topic="\\").memory.content},
        "geo": {card(personal, "A plain topic.").memory.content},
    }
    values = [browser_deck_param(topic) for topic in decks]
    assert len(set(values)) == len(values)
    for topic, contents in decks.items():
        assert browser_deck(browser_deck_param(topic)) == topic
        landed = ada_client.get(deck_cards_url(personal.slug, topic))
        assert landed.status_code == 200
        assert set(shown(landed)) == contents, topic
    select = landed.content.decode().split('name="deck"')[1].split("</select>")[0]
    assert len(re.findall(r"<option ", select)) == len(decks) + 1  # and "All decks"
