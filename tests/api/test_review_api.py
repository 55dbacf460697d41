from __future__ import annotations

import pytest

from memories import services
from review.models import Card

pytestmark = pytest.mark.django_db


@pytest.fixture
def person(user, make_token, api):
    _, secret = make_token(user)
    return api(secret)


@pytest.fixture
def deck(namespace):
    # A personal namespace gives every new memory a card.
    return [
        services.memory_create(namespace=namespace, content=f"Fact {i}\nDetails {i}", topic="facts")
        for i in range(3)
    ]


def test_seed_000_example_replayed_through_the_api(person, deck):
    card = Card.objects.get(memory=deck[0])
    intervals, repetitions = [], []
    for grade in (4, 5, 5, 1):
        version = Card.objects.get(pk=card.pk).version
        response = person.post(
            f"/api/v1/review/cards/{card.pk}/grade",
            {"grade": grade, "version": version},
            format="json",
        )
        assert response.status_code == 201, response.json()
        after = response.json()["state_after"]
        intervals.append(after["interval_days"])
        repetitions.append(after["repetitions"])
    assert intervals == [1, 6, 15, 1]
    assert repetitions == [1, 2, 3, 0]


def test_the_queue_shows_new_cards_with_button_previews(person, namespace, deck):
    queue = person.get("/api/v1/review/queue", {"namespace": namespace.slug}).json()
    assert queue["due"] == []
    assert [c["memory"] for c in queue["new"]] == [m.pk for m in deck]
    card = queue["new"][0]
    assert card["cue"] == "facts: Fact 0"
    assert set(card["preview"]) == {"again", "hard", "good", "easy"}
    assert card["preview"]["good"] == 1.0


def test_a_stale_version_is_a_conflict_and_undo_restores(person, deck):
    card = Card.objects.get(memory=deck[0])
    url = f"/api/v1/review/cards/{card.pk}"
    assert (
        person.post(
            f"{url}/grade", {"grade": "good", "version": card.version}, format="json"
        ).status_code
        == 201
    )
    stale = person.post(f"{url}/grade", {"grade": "easy", "version": card.version}, format="json")
    assert stale.status_code == 409
    assert stale.json()["error"]["code"] == "grade_conflict"
    undone = person.post(f"{url}/undo")
    assert undone.status_code == 200
    card.refresh_from_db()
    assert (card.repetitions, card.next_review) == (0, None)
    again = person.post(f"{url}/undo")
    assert again.status_code == 409 and again.json()["error"]["code"] == "nothing_to_undo"


def test_bad_grades_name_the_field(person, deck):
    card = Card.objects.get(memory=deck[0])
    for bad in (6, -1, "perfect", True, None):
        response = person.post(
            f"/api/v1/review/cards/{card.pk}/grade", {"grade": bad}, format="json"
        )
        assert response.status_code == 400
        assert "grade" in response.json()["error"]["fields"]


def test_a_study_session_repeats_cards_below_4_until_they_pass(person, namespace, deck):
    started = person.post(
        "/api/v1/review/sessions", {"namespace": namespace.slug}, format="json"
    ).json()
    assert (started["total"], started["remaining"]) == (3, 3)
    session = f"/api/v1/review/sessions/{started['id']}"
    first = started["next_card"]["id"]
    state = person.post(f"{session}/grade", {"card": first, "grade": "again"}, format="json").json()
    assert state["remaining"] == 3  # failed card comes back
    grades = []
    while state["next_card"]:
        card = state["next_card"]["id"]
        grades.append(card)
        state = person.post(
            f"{session}/grade", {"card": card, "grade": "good"}, format="json"
        ).json()
    assert grades[-1] == first and state["status"] == "finished"
    # Only the first grade in the session scheduled the failed card.
    assert Card.objects.get(pk=first).repetitions == 0
    resumed = person.get(session).json()
    assert resumed["done"] == 3


def test_cram_scores_and_never_reschedules(person, namespace, deck):
    before = list(Card.objects.order_by("pk").values())
    started = person.post(
        "/api/v1/review/cram", {"namespace": namespace.slug, "seed": 1}, format="json"
    ).json()
    cram = f"/api/v1/review/cram/{started['id']}"
    state = started
    answers = [True, False, True]
    for correct in answers:
        state = person.post(
            f"{cram}/answer", {"card": state["next_card"]["id"], "correct": correct}, format="json"
        ).json()
    finished = person.post(f"{cram}/finish").json()
    assert (finished["score"]["correct"], finished["score"]["answered"]) == (2, 3)
    assert finished["score"]["decks"]["facts"]["correct"] == 2
    assert list(Card.objects.order_by("pk").values()) == before


def test_statistics_follow_the_grades(person, namespace, deck):
    for memory, grade in zip(deck, (5, 4, 1), strict=True):
        card = Card.objects.get(memory=memory)
        person.post(f"/api/v1/review/cards/{card.pk}/grade", {"grade": grade}, format="json")
    stats = person.get(
        "/api/v1/review/stats", {"namespace": namespace.slug, "tz": "Europe/Berlin"}
    ).json()
    assert stats["reviews"] == 3 and stats["retention"] == pytest.approx(2 / 3)
    assert stats["streak"] == 1 and stats["new"] == 0
    assert sum(day["reviews"] for day in stats["reviews_per_day"]) == 3
    assert len(stats["forecast"]) == 14
    bad = person.get("/api/v1/review/stats", {"namespace": namespace.slug, "tz": "Mars/Base"})
    assert bad.status_code == 400 and "tz" in bad.json()["error"]["fields"]


def test_memories_of_personal_namespaces_get_cards_on_create_and_bulk(person, namespace, user):
    agent = services.namespace_create(owner=user, name="bot", mode="agent_memory")
    person.post(
        "/api/v1/memories/bulk",
        {"namespace": namespace.slug, "memories": [{"content": "a"}, {"content": "b"}]},
        format="json",
    )
    person.post("/api/v1/memories", {"namespace": agent.slug, "content": "c"}, format="json")
    assert Card.objects.filter(namespace=namespace).count() == 2
    assert not Card.objects.filter(namespace=agent).exists()


def test_an_explicit_cue_replaces_topic_and_first_line(person, namespace):
    response = person.post(
        "/api/v1/memories",
        {
            "namespace": namespace.slug,
            "content": "Paris",
            "topic": "geo",
            "cue": "Capital of France?",
        },
        format="json",
    )
    assert response.status_code == 201 and response.json()["cue"] == "Capital of France?"
    queue = person.get("/api/v1/review/queue", {"namespace": namespace.slug}).json()
    assert [c["cue"] for c in queue["new"]] == ["Capital of France?"]
