"""Issue 17, item 5: deck options (new cards per day per deck, inheriting the namespace's),
a card's bury and suspend from the API and the dashboard, and the leeches list."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories import services
from memories.models import Memory, Namespace
from review import services as review_services
from review.models import Card, DeckOptions, ReviewLog
from review.selectors import deck_statistics, new_card_limits, review_queue
from tests.review.conftest import NOW, TZ

pytestmark = pytest.mark.django_db


@pytest.fixture
def person(user, make_token, api):
    _, secret = make_token(user)
    return api(secret)


@pytest.fixture
def decks(namespace):
    """Four new cards in each of two decks, and two without a topic."""
    namespace.new_cards_per_day = 3
    namespace.save(update_fields=["new_cards_per_day"])
    made = {}
    for topic, n in (("verbs", 4), ("nouns", 4), ("", 2)):
        made[topic] = [
            services.memory_create(
                namespace=namespace, content=f"{topic or 'loose'} fact {i}", topic=topic
            )
            for i in range(n)
        ]
    return made


def new_per_deck(namespace: Namespace) -> dict[str, int]:
    queue = review_queue(namespace=namespace, tz=TZ, limit=100)
    counts: dict[str, int] = {}
    for item in queue.new:
        topic = Memory.objects.get(card__pk=item.card_id).topic
        counts[topic] = counts.get(topic, 0) + 1
    return counts


def test_a_deck_limit_overrides_the_namespaces_and_empty_inherits_it(namespace, decks):
    assert new_per_deck(namespace) == {"verbs": 3, "nouns": 3, "": 2}

    review_services.deck_options_set(namespace=namespace, deck="verbs", new_cards_per_day=1)
    review_services.deck_options_set(namespace=namespace, deck="nouns", new_cards_per_day=0)
    assert new_per_deck(namespace) == {"verbs": 1, "": 2}
    stats = {d.deck: d.new_available_today for d in deck_statistics(namespace=namespace, tz=TZ)}
    assert stats == {"verbs": 1, "nouns": 0, "": 2}

    # A deck above the namespace's limit may introduce more than the namespace allows.
    review_services.deck_options_set(namespace=namespace, deck="verbs", new_cards_per_day=10)
    assert new_per_deck(namespace)["verbs"] == 4

    review_services.deck_options_set(namespace=namespace, deck="verbs", new_cards_per_day=None)
    review_services.deck_options_set(namespace=namespace, deck="nouns", new_cards_per_day=None)
    assert not DeckOptions.objects.exists()
    assert new_per_deck(namespace) == {"verbs": 3, "nouns": 3, "": 2}


@pytest.mark.parametrize(
    ("deck", "value", "field"),
    [
        ("verbs", -1, "new_cards_per_day"),
        ("verbs", 1001, "new_cards_per_day"),
        ("verbs", 2.5, "new_cards_per_day"),
        ("verbs", True, "new_cards_per_day"),
        ("x" * 101, 3, "deck"),
        ("a\x00b", 3, "deck"),
    ],
)
def test_the_service_refuses_bad_limits_naming_the_field(namespace, deck, value, field):
    with pytest.raises(review_services.InvalidRequest) as refused:
        review_services.deck_options_set(namespace=namespace, deck=deck, new_cards_per_day=value)
    assert refused.value.field == field
    assert not DeckOptions.objects.exists()


def test_the_api_lists_and_sets_deck_limits(person, namespace, decks):
    answer = person.get("/api/v1/review/decks", {"namespace": namespace.slug})
    assert answer.status_code == 200
    body = answer.json()
    assert body["namespace_new_cards_per_day"] == 3
    by_deck = {d["deck"]: d for d in body["decks"]}
    assert by_deck["verbs"]["new_cards_per_day"] == 3
    assert by_deck["verbs"]["own_new_cards_per_day"] is None

    answer = person.put(
        "/api/v1/review/decks",
        {"namespace": namespace.slug, "deck": "verbs", "new_cards_per_day": 1},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    by_deck = {d["deck"]: d for d in answer.json()["decks"]}
    assert by_deck["verbs"] | {"total": 4} == by_deck["verbs"]
    assert (by_deck["verbs"]["own_new_cards_per_day"], by_deck["verbs"]["new_available_today"]) == (
        1,
        1,
    )
    assert new_card_limits(namespace).of("verbs") == 1

    answer = person.put(
        "/api/v1/review/decks",
        {"namespace": namespace.slug, "deck": "verbs", "new_cards_per_day": None},
        format="json",
    )
    assert {d["deck"]: d for d in answer.json()["decks"]}["verbs"]["new_cards_per_day"] == 3


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"deck": "verbs", "new_cards_per_day": -3}, "new_cards_per_day"),
        ({"deck": "verbs", "new_cards_per_day": "many"}, "new_cards_per_day"),
        ({"deck": "verbs"}, "new_cards_per_day"),
        ({"new_cards_per_day": 2}, "deck"),
        ({"deck": "v" * 101, "new_cards_per_day": 2}, "deck"),
    ],
)
def test_the_api_refuses_bad_deck_options_naming_the_field(person, namespace, body, field):
    answer = person.put(
        "/api/v1/review/decks", {"namespace": namespace.slug, **body}, format="json"
    )
    assert answer.status_code == 400
    assert field in answer.json()["error"]["fields"], answer.json()
    assert not DeckOptions.objects.exists()


def test_another_users_namespace_answers_as_a_missing_one_on_deck_options(
    other_user, make_token, api, namespace, decks
):
    _, secret = make_token(other_user)
    stranger = api(secret)
    missing = stranger.get("/api/v1/review/decks", {"namespace": "no-such-namespace"})
    theirs = stranger.get("/api/v1/review/decks", {"namespace": namespace.slug})
    assert missing.status_code == theirs.status_code == 400
    assert "namespace" in theirs.json()["error"]["fields"]
    answer = stranger.put(
        "/api/v1/review/decks",
        {"namespace": namespace.slug, "deck": "verbs", "new_cards_per_day": 0},
        format="json",
    )
    assert answer.status_code == 400
    assert not DeckOptions.objects.exists()


def test_the_deck_options_page_sets_and_clears_a_limit(client, user, namespace, decks):
    client.force_login(user)
    url = f"/review/decks/{namespace.slug}/"
    page = client.get(url)
    assert page.status_code == 200
    assert b'data-deck="verbs"' in page.content and b"(no topic)" in page.content

    answer = client.post(url, {"deck": "verbs", "new_cards_per_day": "2"})
    assert answer.status_code == 303
    assert new_card_limits(namespace).of("verbs") == 2
    assert "verbs: 2 new cards a day." in client.get(url).content.decode()

    assert new_card_limits(namespace).of("verbs") == 2
    client.post(url, {"deck": "verbs", "new_cards_per_day": ""})
    assert new_card_limits(namespace).of("verbs") == 3


@pytest.mark.parametrize(
    ("deck", "typed", "words"),
    [
        ("verbs", "1e3", "Not a whole number. New cards per day is a whole number from 0 to 1000"),
        ("verbs", "5000", "New cards per day is a whole number from 0 to 1000, or empty"),
        ("", "-1", "New cards per day is a whole number from 0 to 1000, or empty"),
    ],
)
def test_a_refused_deck_limit_shows_the_page_again_with_the_typed_value_and_focus(
    client, user, namespace, decks, deck, typed, words
):
    """A refused value redirected back with a message at the top: the typed value was lost
    and the focus left on the page. Now the page comes back with the error on the deck's
    field, its value kept and the autofocus there (only there), nothing written; under htmx
    the same section alone."""
    client.force_login(user)
    url = f"/review/decks/{namespace.slug}/"
    review_services.deck_options_set(namespace=namespace, deck="nouns", new_cards_per_day=1)
    answer = client.post(url, {"deck": deck, "new_cards_per_day": typed})
    assert answer.status_code == 200
    body = answer.content.decode()
    row = body[body.index(f'<tr data-deck="{deck}">') :]
    row = row[: row.index("</tr>")]
    assert words in row and f'value="{typed}"' in row
    assert body.count("autofocus") == 1 and "autofocus" in row
    field = answer.context["rows"][[r["stats"].deck for r in answer.context["rows"]].index(deck)]
    assert field["form"].errors["new_cards_per_day"]
    # Other rows keep their own values, nothing changed.
    assert 'value="1"' in body[body.index('<tr data-deck="nouns">') :]
    assert DeckOptions.objects.filter(topic=deck).count() == 0

    htmx = client.post(url, {"deck": deck, "new_cards_per_day": typed}, HTTP_HX_REQUEST="true")
    assert htmx.status_code == 200
    assert htmx.content.decode().lstrip().startswith('<section id="decks"')
    assert words in htmx.content.decode()


def test_a_refused_deck_the_page_does_not_list_is_said_above_the_table(
    client, user, namespace, decks
):
    client.force_login(user)
    url = f"/review/decks/{namespace.slug}/"
    answer = client.post(url, {"deck": "x" * 101, "new_cards_per_day": "2"})
    assert answer.status_code == 200
    assert "A deck is a topic of at most 100 characters" in answer.content.decode()
    assert not DeckOptions.objects.exists()


def test_another_users_deck_options_page_answers_404(client, other_user, namespace):
    client.force_login(other_user)
    url = f"/review/decks/{namespace.slug}/"
    assert client.get(url).status_code == 404
    assert client.post(url, {"deck": "", "new_cards_per_day": "1"}).status_code == 404


# --- A card's bury and suspend ----------------------------------------------------------


@pytest.fixture
def card(namespace):
    memory = services.memory_create(namespace=namespace, content="Lisbon is by the sea.")
    return Card.objects.get(memory=memory)


def queued(namespace: Namespace) -> set[int]:
    queue = review_queue(namespace=namespace, tz=TZ, limit=100)
    return {item.card_id for item in [*queue.due, *queue.new]}


def test_the_api_suspends_unsuspends_buries_and_unburies_a_card(person, namespace, card):
    version = card.version
    answer = person.post(f"/api/v1/review/cards/{card.pk}/suspend", {}, format="json")
    assert answer.status_code == 200, answer.content
    card.refresh_from_db()
    assert card.suspended_at is not None and card.version > version
    assert card.pk not in queued(namespace)

    assert person.delete(f"/api/v1/review/cards/{card.pk}/suspend").status_code == 200
    card.refresh_from_db()
    assert card.suspended_at is None
    assert card.pk in queued(namespace)

    until = (timezone.now() + timezone.timedelta(days=2)).isoformat()
    answer = person.post(f"/api/v1/review/cards/{card.pk}/bury", {"until": until}, format="json")
    assert answer.status_code == 200, answer.content
    card.refresh_from_db()
    assert card.buried_until is not None and card.pk not in queued(namespace)

    assert person.delete(f"/api/v1/review/cards/{card.pk}/bury").status_code == 200
    card.refresh_from_db()
    assert card.buried_until is None and card.pk in queued(namespace)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"until": "soon"}, "until"),
        ({"until": "2001-01-01T00:00:00Z"}, "until"),
        ({"tz": "Mars/Base"}, "tz"),
        ({"later": True}, "later"),
        ([], "non_field_errors"),
    ],
)
def test_the_api_refuses_a_bad_bury_naming_the_field(person, card, body, field):
    answer = person.post(f"/api/v1/review/cards/{card.pk}/bury", body, format="json")
    assert answer.status_code == 400
    assert field in answer.json()["error"]["fields"]
    card.refresh_from_db()
    assert card.buried_until is None


def test_the_dashboard_buries_and_suspends_from_the_memory_page(client, user, namespace, card):
    client.force_login(user)
    page = f"/memories/{card.memory_id}/"
    assert b'value="bury"' in client.get(page).content
    answer = client.post(f"/review/cards/{card.pk}/action", {"action": "bury", "next": page})
    assert answer.status_code == 303 and answer["Location"] == page
    card.refresh_from_db()
    assert card.buried_until is not None and card.buried_until > timezone.now()
    shown = client.get(page).content.decode()
    assert "Card buried" in shown and 'value="unbury"' in shown

    client.post(f"/review/cards/{card.pk}/action", {"action": "unbury"})
    client.post(f"/review/cards/{card.pk}/action", {"action": "suspend"})
    card.refresh_from_db()
    assert card.buried_until is None and card.suspended_at is not None
    assert 'value="unsuspend"' in client.get(page).content.decode()
    client.post(f"/review/cards/{card.pk}/action", {"action": "unsuspend"})
    card.refresh_from_db()
    assert card.suspended_at is None

    # An unknown action changes nothing and says what is allowed; an outside `next` is
    # ignored.
    answer = client.post(
        f"/review/cards/{card.pk}/action", {"action": "explode", "next": "https://evil.test/"}
    )
    assert answer["Location"] == page
    card.refresh_from_db()
    assert card.suspended_at is None and card.buried_until is None
    assert "action: choose one of" in client.get(page).content.decode()


def test_another_users_card_action_answers_404(client, other_user, card):
    client.force_login(other_user)
    answer = client.post(f"/review/cards/{card.pk}/action", {"action": "suspend"})
    assert answer.status_code == 404
    card.refresh_from_db()
    assert card.suspended_at is None


# --- Leeches --------------------------------------------------------------------------------


def lapse(card: Card, source: str = ReviewLog.Source.HUMAN) -> None:
    """Learn the card, then fail it: one lapse when a person does it."""
    card.refresh_from_db()
    review_services.card_grade(card=card, grade="good", source=source, now=NOW)
    card.refresh_from_db()
    review_services.card_grade(card=card, grade="again", source=source, now=NOW)


def test_a_card_lapsing_the_threshold_becomes_a_leech_listed_until_sent_back(
    client, user, namespace, card
):
    namespace.leech_threshold = 2
    namespace.save(update_fields=["leech_threshold"])
    # Agents' and the simulated worker's failures are not the person's lapses.
    lapse(card, ReviewLog.Source.SIMULATED)
    lapse(card, ReviewLog.Source.IMPLICIT)
    card.refresh_from_db()
    assert (card.lapses, card.leech) == (0, False)
    lapse(card)
    card.refresh_from_db()
    assert (card.lapses, card.leech, card.suspended_at) == (1, False, None)
    lapse(card)
    card.refresh_from_db()
    assert card.lapses == 2 and card.leech and card.suspended_at is not None
    assert card.pk not in queued(namespace)

    client.force_login(user)
    assert "Leeches (1)" in client.get("/review/").content.decode()
    page = client.get("/review/leeches/").content.decode()
    assert f'data-leech="{card.pk}"' in page and "Lisbon is by the sea." in page
    assert f"/memories/{card.memory_id}/edit?next=/review/leeches/" in page

    answer = client.post(
        f"/review/cards/{card.pk}/action", {"action": "unleech", "next": "/review/leeches/"}
    )
    assert answer["Location"] == "/review/leeches/"
    card.refresh_from_db()
    assert (card.lapses, card.leech, card.suspended_at) == (0, False, None)
    assert card.pk in queued(namespace)
    assert "No leeches" in client.get("/review/leeches/").content.decode()


def test_forgetting_a_leech_from_the_list_keeps_the_reason(client, user, namespace, card):
    Card.objects.filter(pk=card.pk).update(leech=True, lapses=8, suspended_at=NOW)
    client.force_login(user)
    page = client.get("/review/leeches/").content.decode()
    assert "leech: lapsed 8 times" in page
    client.post(
        f"/memories/{card.memory_id}/forget",
        {"reason": "leech: lapsed 8 times", "next": "/review/leeches/"},
    )
    memory = Memory.objects.get(pk=card.memory_id)
    assert memory.status == Memory.Status.FORGOTTEN
    assert "No leeches" in client.get("/review/leeches/").content.decode()


def test_another_users_leeches_are_not_listed(client, other_user, card):
    Card.objects.filter(pk=card.pk).update(leech=True, lapses=8, suspended_at=NOW)
    client.force_login(other_user)
    assert "Lisbon" not in client.get("/review/leeches/").content.decode()


def test_the_leech_count_on_review_is_the_lists_length(client, user, namespace, card):
    Card.objects.filter(pk=card.pk).update(leech=True, lapses=8, suspended_at=NOW)
    client.force_login(user)
    assert "Leeches (1)" in client.get("/review/").content.decode()
    # A superseded memory's card is out of review and out of the list: out of the count too.
    ago = timezone.now() - timedelta(days=1)
    Memory.objects.filter(pk=card.memory_id).update(
        valid_from=ago - timedelta(days=1), valid_until=ago
    )
    assert "Leeches (" not in client.get("/review/").content.decode()
    assert "No leeches" in client.get("/review/leeches/").content.decode()
