from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from memories import services
from memories.models import Classification, Memory, Namespace
from review import services as review_services
from review.models import Card, ReviewLog, StudySession, StudySessionItem

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
    # The default front is a cloze: "Fact 0\nDetails 0" with its number hidden.
    assert (card["front"], card["cue"], card["answers"]) == ("cloze", "Fact […]\nDetails 0", ["0"])
    assert set(card["preview"]) == {"again", "hard", "good", "easy"}
    assert card["preview"]["good"] == 1.0


def test_a_namespace_with_anki_modifiers_previews_and_applies_each_buttons_interval(
    person, namespace, deck
):
    response = person.patch(
        f"/api/v1/namespaces/{namespace.slug}", {"sm2_modifiers": True}, format="json"
    )
    assert response.status_code == 200 and response.json()["sm2_modifiers"] is True
    card = Card.objects.get(memory=deck[0])
    for grade in (4, 4):  # two passes: 1 day, then 6
        version = Card.objects.get(pk=card.pk).version
        person.post(
            f"/api/v1/review/cards/{card.pk}/grade",
            {"grade": grade, "version": version},
            format="json",
        )
    Card.objects.filter(pk=card.pk).update(next_review=F("last_reviewed_at"))  # due now
    [due] = person.get("/api/v1/review/queue", {"namespace": namespace.slug}).json()["due"]
    assert {k: due["preview"][k] for k in ("hard", "good", "easy")} == {
        "hard": 8.0,
        "good": 15.0,
        "easy": 20.0,
    }
    version = Card.objects.get(pk=card.pk).version
    easy = person.post(
        f"/api/v1/review/cards/{card.pk}/grade", {"grade": 5, "version": version}, format="json"
    )
    assert easy.json()["state_after"]["interval_days"] == 20  # the preview is what applies
    refused = person.patch(
        f"/api/v1/namespaces/{namespace.slug}", {"sm2_modifiers": "yes"}, format="json"
    )
    assert refused.status_code == 400 and "sm2_modifiers" in refused.json()["error"]["fields"]


def test_a_stale_version_is_a_conflict_and_undo_restores(person, deck, nothing_written):
    card = Card.objects.get(memory=deck[0])
    url = f"/api/v1/review/cards/{card.pk}"
    assert (
        person.post(
            f"{url}/grade", {"grade": "good", "version": card.version}, format="json"
        ).status_code
        == 201
    )
    with nothing_written():
        stale = person.post(
            f"{url}/grade", {"grade": "easy", "version": card.version}, format="json"
        )
    assert stale.status_code == 409
    assert stale.json()["error"]["code"] == "grade_conflict"
    undone = person.post(f"{url}/undo")
    assert undone.status_code == 200
    card.refresh_from_db()
    assert (card.repetitions, card.next_review) == (0, None)
    with nothing_written():
        again = person.post(f"{url}/undo")
    assert again.status_code == 409 and again.json()["error"]["code"] == "nothing_to_undo"


def test_bad_grades_name_the_field(person, deck, nothing_written):
    card = Card.objects.get(memory=deck[0])
    for bad in (6, -1, "perfect", True, None):
        with nothing_written():
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


# --- Two callers of one person, two ceilings --------------------------------------------

SECRET_DECK = "zz-merger-talks"
SECRET_TEXT = "Initech acquisition closes on Friday"


@pytest.fixture
def mixed(namespace):
    """Two public cards in deck `facts`, then a restricted card in a deck of its own."""
    public = [
        services.memory_create(
            namespace=namespace,
            content=f"Public fact {i}",
            topic="facts",
            classification=Classification.PUBLIC,
        )
        for i in range(2)
    ]
    secret = services.memory_create(
        namespace=namespace,
        content=SECRET_TEXT,
        topic=SECRET_DECK,
        classification=Classification.RESTRICTED,
    )
    return public, secret


@pytest.fixture
def high(user, make_token, api):
    _, secret = make_token(user, ceiling=Classification.RESTRICTED)
    return api(secret)


@pytest.fixture
def low(user, make_token, api):
    _, secret = make_token(user, ceiling=Classification.PUBLIC)
    return api(secret)


def hidden_first(session_id: int, memory) -> None:
    """Put the memory's card at the front of the session, where a next card is picked."""
    StudySessionItem.objects.filter(session_id=session_id, card__memory=memory).update(position=-1)


def assert_nothing_secret(bodies: list[bytes]) -> None:
    for body in bodies:
        text = body.decode()
        assert SECRET_DECK not in text and SECRET_TEXT not in text, text


def test_a_lower_token_sees_only_its_cards_of_a_session_and_finishes_it(
    high, low, namespace, mixed
):
    _, secret = mixed
    started = high.post("/api/v1/review/sessions", {"namespace": namespace.slug}, format="json")
    assert started.json()["total"] == 3
    url = f"/api/v1/review/sessions/{started.json()['id']}"
    hidden_first(started.json()["id"], secret)

    response = low.get(url)
    bodies = [response.content]
    state = response.json()
    assert (state["status"], state["total"], state["done"], state["remaining"]) == (
        "active",
        2,
        0,
        2,
    )
    while state["next_card"]:
        assert state["next_card"]["memory"] != secret.pk
        response = low.post(
            f"{url}/grade", {"card": state["next_card"]["id"], "grade": "good"}, format="json"
        )
        bodies.append(response.content)
        state = response.json()
    # Only the hidden card is left: the session is over for this token, not stuck.
    assert (state["status"], state["total"], state["done"], state["remaining"]) == (
        "finished",
        2,
        2,
        0,
    )
    again = low.get(url)
    bodies.append(again.content)
    assert again.json()["status"] == "finished" and again.json()["next_card"] is None

    # The token that started it still has the restricted card to study.
    rest = high.get(url).json()
    assert (rest["status"], rest["total"], rest["remaining"]) == ("active", 3, 1)
    assert rest["next_card"]["memory"] == secret.pk
    bodies.append(low.post(f"{url}/finish").content)
    assert_nothing_secret(bodies)


def test_a_lower_token_crams_and_scores_only_its_cards(high, low, namespace, mixed):
    _, secret = mixed
    started = high.post(
        "/api/v1/review/cram", {"namespace": namespace.slug, "seed": 3}, format="json"
    ).json()
    assert started["score"]["total"] == 3 and SECRET_DECK in started["score"]["decks"]
    url = f"/api/v1/review/cram/{started['id']}"
    hidden_first(started["id"], secret)

    response = low.get(url)
    bodies = [response.content]
    state = response.json()
    assert (state["total"], state["score"]["total"], list(state["score"]["decks"])) == (
        2,
        2,
        ["facts"],
    )
    while state["next_card"]:
        response = low.post(
            f"{url}/answer", {"card": state["next_card"]["id"], "correct": True}, format="json"
        )
        bodies.append(response.content)
        state = response.json()
    assert (state["status"], state["remaining"]) == ("finished", 0)
    finished = low.post(f"{url}/finish")
    bodies.append(finished.content)
    score = finished.json()["score"]
    assert (score["correct"], score["answered"], score["total"]) == (2, 2, 2)
    assert score["decks"] == {"facts": {"correct": 2, "answered": 2, "total": 2}}
    assert_nothing_secret(bodies)


def test_a_card_reclassified_above_the_ceiling_mid_session_drops_out(person, namespace, deck):
    started = person.post(
        "/api/v1/review/sessions", {"namespace": namespace.slug}, format="json"
    ).json()
    assert started["total"] == 3
    first = started["next_card"]["memory"]
    services.memory_update(
        memory=Memory.objects.get(pk=first), changes={"classification": Classification.RESTRICTED}
    )
    url = f"/api/v1/review/sessions/{started['id']}"
    state = person.get(url).json()
    assert (state["total"], state["remaining"]) == (2, 2)
    assert state["next_card"]["memory"] != first
    while state["next_card"]:
        state = person.post(
            f"{url}/grade", {"card": state["next_card"]["id"], "grade": "easy"}, format="json"
        ).json()
    assert (state["status"], state["done"], state["remaining"]) == ("finished", 2, 0)


def test_a_session_of_hidden_cards_only_is_missing_for_a_lower_token(
    high, low, namespace, mixed, nothing_written
):
    _, secret = mixed
    study = high.post(
        "/api/v1/review/sessions", {"namespace": namespace.slug, "deck": SECRET_DECK}, format="json"
    ).json()
    cram = high.post(
        "/api/v1/review/cram", {"namespace": namespace.slug, "deck": SECRET_DECK}, format="json"
    ).json()
    assert study["total"] == cram["total"] == 1
    card = Card.objects.get(memory=secret).pk
    with nothing_written():
        responses = [
            low.get(f"/api/v1/review/sessions/{study['id']}"),
            low.post(
                f"/api/v1/review/sessions/{study['id']}/grade",
                {"card": card, "grade": 4},
                format="json",
            ),
            low.post(f"/api/v1/review/sessions/{study['id']}/finish"),
            low.get(f"/api/v1/review/cram/{cram['id']}"),
            low.post(
                f"/api/v1/review/cram/{cram['id']}/answer",
                {"card": card, "correct": True},
                format="json",
            ),
            low.post(f"/api/v1/review/cram/{cram['id']}/finish"),
        ]
    assert [r.status_code for r in responses] == [404] * 6
    assert_nothing_secret([r.content for r in responses])
    assert StudySession.objects.filter(status="active").count() == 2
    # An empty session holds nothing hidden: any caller of the person may open it.
    empty = high.post(
        "/api/v1/review/sessions", {"namespace": namespace.slug, "deck": "nothing"}, format="json"
    ).json()
    assert low.get(f"/api/v1/review/sessions/{empty['id']}").json()["total"] == 0


def test_statistics_and_queue_of_a_lower_token_leave_hidden_cards_out(high, low, namespace, mixed):
    _, secret = mixed
    # Hidden cards use up no part of the lower token's daily new-card budget.
    Namespace.objects.filter(pk=namespace.pk).update(new_cards_per_day=2)
    also_facts = services.memory_create(
        namespace=namespace,
        content=SECRET_TEXT + " (facts)",
        topic="facts",
        classification=Classification.RESTRICTED,
    )
    for memory in (secret, also_facts):
        high.post(
            f"/api/v1/review/cards/{Card.objects.get(memory=memory).pk}/grade",
            {"grade": 5},
            format="json",
        )
    stats = low.get("/api/v1/review/stats", {"namespace": namespace.slug})
    queue = low.get("/api/v1/review/queue", {"namespace": namespace.slug})
    body = stats.json()
    assert (body["total"], body["new"], body["new_available_today"], body["reviews"]) == (
        2,
        2,
        2,
        0,
    )
    assert [d["deck"] for d in body["decks"]] == ["facts"]
    assert body["decks"][0]["new_available_today"] == 2
    assert len(queue.json()["new"]) == 2
    assert_nothing_secret([stats.content, queue.content])


# --- Errors ------------------------------------------------------------------------------


def test_a_conflict_reports_the_version_the_card_has_now(
    person, namespace, deck, monkeypatch, nothing_written
):
    from review.services import grading

    card = Card.objects.get(memory=deck[0])
    real = grading.scheduler_for

    def racing(namespace):
        # Another grade commits between this grade's read and its guarded UPDATE.
        Card.objects.filter(pk=card.pk).update(version=F("version") + 1)
        return real(namespace)

    monkeypatch.setattr(grading, "scheduler_for", racing)
    # Nothing but the racing grade's version bump is written.
    racing_bump = {"review.Card": {"version"}}
    with nothing_written(ignore=racing_bump):
        direct = person.post(
            f"/api/v1/review/cards/{card.pk}/grade", {"grade": "good", "version": 0}, format="json"
        )
    session = person.post(
        "/api/v1/review/sessions", {"namespace": namespace.slug}, format="json"
    ).json()
    with nothing_written(ignore=racing_bump):
        in_session = person.post(
            f"/api/v1/review/sessions/{session['id']}/grade",
            {"card": card.pk, "grade": "good", "version": 0},
            format="json",
        )
    for response in (direct, in_session):
        assert response.status_code == 409
        error = response.json()["error"]
        assert "it is now at version 1)" in error["message"], error
        assert error["fields"] == {"version": [error["message"]]}


def test_review_errors_name_the_field_the_client_sent(
    person, namespace, deck, user, nothing_written
):
    bare = services.namespace_create(owner=user, name="Bare")
    with nothing_written():
        unknown = person.post(
            "/api/v1/review/cram", {"namespace": namespace.slug, "cards": [999999]}, format="json"
        )
        empty_deck = person.post(
            "/api/v1/review/cram", {"namespace": namespace.slug, "deck": "none"}, format="json"
        )
        empty_namespace = person.post(
            "/api/v1/review/cram", {"namespace": bare.slug}, format="json"
        )
    assert unknown.status_code == 400
    assert list(unknown.json()["error"]["fields"]) == ["cards"]
    assert empty_deck.status_code == 400
    assert list(empty_deck.json()["error"]["fields"]) == ["deck"]
    assert empty_namespace.status_code == 400
    assert list(empty_namespace.json()["error"]["fields"]) == ["namespace"]
    # A finished session is the object in the URL, not a field of the body.
    session = person.post(
        "/api/v1/review/sessions", {"namespace": namespace.slug}, format="json"
    ).json()
    person.post(f"/api/v1/review/sessions/{session['id']}/finish")
    card = Card.objects.get(memory=deck[0])
    with nothing_written():
        finished = person.post(
            f"/api/v1/review/sessions/{session['id']}/grade",
            {"card": card.pk, "grade": 4},
            format="json",
        )
        nothing = person.post(f"/api/v1/review/cards/{card.pk}/undo")
    assert finished.status_code == 409 and "fields" not in finished.json()["error"]
    assert nothing.status_code == 409 and "fields" not in nothing.json()["error"]


def test_stats_are_the_persons_and_agent_reinforcement_is_apart(person, namespace, deck):
    cards = list(Card.objects.filter(memory__in=deck).order_by("pk"))
    for card in cards:
        review_services.card_grade(card=card, grade=4, source=ReviewLog.Source.SIMULATED)
    review_services.card_grade(card=cards[0], grade=5, source=ReviewLog.Source.IMPLICIT)

    before = person.get("/api/v1/review/stats", {"namespace": namespace.slug}).json()
    person.post(f"/api/v1/review/cards/{cards[1].pk}/grade", {"grade": 1}, format="json")
    after = person.get("/api/v1/review/stats", {"namespace": namespace.slug}).json()

    assert (before["reviews"], before["retention"], before["streak"]) == (0, None, 0)
    assert before["reviews_per_day"][-1]["reviews"] == 0
    assert before["agent_reinforcement"] == {"simulated": 3, "implicit": 1, "today": 4}
    assert (after["reviews"], after["retention"], after["streak"]) == (1, 0.0, 1)
    assert after["reviews_per_day"][-1]["reviews"] == 1
    assert after["agent_reinforcement"] == before["agent_reinforcement"]


@pytest.mark.parametrize(
    ("setting", "front", "cue"),
    [
        ("cloze", "cloze", "Fact […]\nDetails 0"),
        ("first_line", "first_line", "facts: Fact 0"),
        ("topic", "topic", "facts"),
    ],
)
def test_the_namespace_chooses_what_a_card_without_a_cue_asks(
    person, namespace, deck, setting, front, cue
):
    response = person.patch(
        f"/api/v1/namespaces/{namespace.slug}", {"card_front": setting}, format="json"
    )
    assert response.status_code == 200 and response.json()["card_front"] == setting
    card = person.get("/api/v1/review/queue", {"namespace": namespace.slug}).json()["new"][0]
    assert (card["front"], card["cue"]) == (front, cue)


def test_a_cue_written_through_the_api_is_the_front_and_a_bad_setting_names_its_field(
    person, namespace, deck
):
    response = person.patch(
        f"/api/v1/memories/{deck[0].pk}", {"cue": "What is fact zero?"}, format="json"
    )
    assert response.status_code == 200, response.json()
    card = person.get("/api/v1/review/queue", {"namespace": namespace.slug}).json()["new"][0]
    assert (card["front"], card["cue"], card["answers"]) == ("cue", "What is fact zero?", [])
    refused = person.patch(
        f"/api/v1/namespaces/{namespace.slug}", {"card_front": "riddle"}, format="json"
    )
    assert refused.status_code == 400 and "card_front" in refused.json()["error"]["fields"]


# --- A card that can be studied now: one rule for sessions and card routes ----------------


def _start(person, namespace, **body) -> dict:
    response = person.post(
        "/api/v1/review/sessions", {"namespace": namespace.slug, **body}, format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()


def _supersede(card_id: int) -> None:
    Memory.objects.filter(card__pk=card_id).update(valid_until=timezone.now())


def _study_to_the_end(person, session: str, state: dict) -> list[int]:
    shown = []
    while state["next_card"]:
        card = state["next_card"]["id"]
        shown.append(card)
        answer = person.post(f"{session}/grade", {"card": card, "grade": "easy"}, format="json")
        assert answer.status_code == 200, answer.json()
        state = answer.json()
    assert state["status"] == "finished"
    return shown


@pytest.mark.parametrize("set_aside", ["suspend", "bury", "supersede"])
def test_a_session_skips_a_card_set_aside_since_it_started(person, namespace, deck, set_aside):
    """The session showed a suspended, buried or superseded card as next_card, which
    grading then answered 404: a dead end. It is skipped, and counts no more."""
    started = _start(person, namespace)
    session = f"/api/v1/review/sessions/{started['id']}"
    first = started["next_card"]["id"]
    if set_aside == "supersede":
        _supersede(first)
    else:
        assert person.post(f"/api/v1/review/cards/{first}/{set_aside}").status_code == 200

    state = person.get(session).json()
    assert state["next_card"]["id"] != first
    assert (state["total"], state["remaining"], state["new"]) == (2, 2, 2)
    assert first not in _study_to_the_end(person, session, state)


def test_a_grade_that_makes_a_leech_takes_it_out_of_the_session_and_undo_brings_it_back(
    person, namespace, deck
):
    namespace.leech_threshold = 1
    namespace.save(update_fields=["leech_threshold"])
    leech = Card.objects.get(memory=deck[0])
    Card.objects.filter(pk=leech.pk).update(
        next_review=timezone.now() - timedelta(days=1), repetitions=2, interval_days=6
    )
    started = _start(person, namespace)
    session = f"/api/v1/review/sessions/{started['id']}"
    assert started["next_card"]["id"] == leech.pk  # due first

    state = person.post(
        f"{session}/grade", {"card": leech.pk, "grade": "again"}, format="json"
    ).json()
    leech.refresh_from_db()
    assert leech.leech and leech.suspended_at is not None
    assert (state["learning"], state["remaining"]) == (0, 2)
    assert state["next_card"]["id"] != leech.pk

    # The grade that made the leech is undone through the API like any other.
    undone = person.post(f"/api/v1/review/cards/{leech.pk}/undo")
    assert undone.status_code == 200, undone.json()
    leech.refresh_from_db()
    assert (leech.leech, leech.suspended_at, leech.lapses) == (False, None, 0)
    state = person.get(session).json()
    assert state["next_card"]["id"] == leech.pk and state["remaining"] == 3

    # Made a leech again, it stays out; the session ends with the other cards.
    person.post(f"{session}/grade", {"card": leech.pk, "grade": "again"}, format="json")
    assert leech.pk not in _study_to_the_end(person, session, person.get(session).json())


def test_a_superseded_memorys_card_answers_404_on_every_card_route(
    person, namespace, deck, nothing_written
):
    card = Card.objects.get(memory=deck[0])
    grade = {"grade": 4}
    assert (
        person.post(f"/api/v1/review/cards/{card.pk}/grade", grade, format="json").status_code
        == 201
    )
    _supersede(card.pk)
    url = f"/api/v1/review/cards/{card.pk}"
    with nothing_written():
        answers = [
            person.post(f"{url}/grade", {"grade": 4}, format="json"),
            person.post(f"{url}/undo"),
            person.post(f"{url}/suspend"),
            person.delete(f"{url}/suspend"),
            person.post(f"{url}/bury"),
            person.delete(f"{url}/bury"),
        ]
    assert [a.status_code for a in answers] == [404] * 6


def test_a_recall_does_not_grade_a_suspended_or_buried_card(user, namespace, make_token, api):
    """An agent's tracked recall rescheduled cards the person had set aside."""
    _, secret = make_token(user, namespaces=[namespace])
    due = timezone.now() - timedelta(days=1)
    cards = {}
    for state in ("suspended", "buried", "due"):
        memory = services.memory_create(namespace=namespace, content=f"Kyoto temples {state}")
        cards[state] = Card.objects.get(memory=memory)
    Card.objects.filter(memory__namespace=namespace).update(
        next_review=due, repetitions=1, interval_days=1
    )
    Card.objects.filter(pk=cards["suspended"].pk).update(suspended_at=timezone.now())
    Card.objects.filter(pk=cards["buried"].pk).update(
        buried_until=timezone.now() + timedelta(days=1)
    )
    rows = {s: Card.objects.filter(pk=c.pk).values().get() for s, c in cards.items()}

    response = api(secret).post("/api/v1/recall", {"query": "kyoto temples"}, format="json")

    hits = {hit["memory_id"] for hit in response.json()["results"]}
    assert {c.memory_id for c in cards.values()} <= hits
    graded = set(ReviewLog.objects.values_list("card_id", flat=True))
    assert graded == {cards["due"].pk}
    for state in ("suspended", "buried"):
        assert Card.objects.filter(pk=cards[state].pk).values().get() == rows[state]


# --- Learning steps and repeats in a session ------------------------------------------------


def test_a_grade_before_a_learning_step_is_due_is_practice(person, namespace, deck):
    """FSRS's Again is due in a minute; grading Good at once, twice, counted both and
    skipped the steps. Before its step is due a grade is practice and the card keeps
    waiting; its grade when due counts."""
    namespace.scheduler = Namespace.SchedulerKind.FSRS
    namespace.save(update_fields=["scheduler"])
    started = _start(person, namespace)
    session = f"/api/v1/review/sessions/{started['id']}"
    card = started["next_card"]["id"]
    person.post(f"{session}/grade", {"card": card, "grade": "again"}, format="json")
    stepped = Card.objects.filter(pk=card).values().get()
    item = StudySessionItem.objects.get(session_id=started["id"], card_id=card)
    assert item.due_at is not None and item.due_at > timezone.now()

    for _ in range(2):
        answer = person.post(f"{session}/grade", {"card": card, "grade": "good"}, format="json")
        assert answer.status_code == 200, answer.json()
    assert Card.objects.filter(pk=card).values().get() == stepped
    assert ReviewLog.objects.filter(card_id=card).count() == 1
    state = answer.json()
    assert state["learning"] == 1 and state["next_card"]["id"] != card
    waiting = StudySessionItem.objects.get(pk=item.pk)
    assert (waiting.due_at, waiting.done, waiting.attempts) == (item.due_at, False, 3)

    # Once due, the grade counts.
    StudySessionItem.objects.filter(pk=item.pk).update(due_at=timezone.now())
    version = Card.objects.get(pk=card).version
    person.post(
        f"{session}/grade", {"card": card, "grade": "good", "version": version}, format="json"
    )
    assert ReviewLog.objects.filter(card_id=card).count() == 2


def test_a_stale_version_is_a_conflict_for_a_practice_repeat_too(
    person, namespace, deck, nothing_written
):
    started = _start(person, namespace)
    session = f"/api/v1/review/sessions/{started['id']}"
    card = started["next_card"]["id"]
    read = started["next_card"]["version"]
    with nothing_written():
        first = person.post(
            f"{session}/grade", {"card": card, "grade": "hard", "version": 999}, format="json"
        )
    assert first.status_code == 409
    assert (
        person.post(
            f"{session}/grade", {"card": card, "grade": "hard", "version": read}, format="json"
        ).json()["remaining"]
        == 3
    )  # Hard: the card comes back, for practice
    for stale in (999, read):
        with nothing_written():
            repeat = person.post(
                f"{session}/grade", {"card": card, "grade": "hard", "version": stale}, format="json"
            )
        assert repeat.status_code == 409, repeat.json()
        assert repeat.json()["error"]["code"] == "grade_conflict"
    fresh = Card.objects.get(pk=card).version
    practice = person.post(
        f"{session}/grade", {"card": card, "grade": "good", "version": fresh}, format="json"
    )
    assert practice.status_code == 200 and practice.json()["done"] == 1


# --- The "(no topic)" deck ------------------------------------------------------------------


def test_deck_empty_is_the_no_topic_deck_on_every_route(person, namespace, deck):
    """GET /review/decks lists deck "" and PUT sets its options, but the queue, statistics,
    sessions and cram refused it as blank. Omitting deck still means every deck."""
    loose = services.memory_create(namespace=namespace, content="Loose fact", topic="")
    card = Card.objects.get(memory=loose)
    ns = namespace.slug
    decks = person.get("/api/v1/review/decks", {"namespace": ns}).json()["decks"]
    assert {d["deck"]: d["total"] for d in decks} == {"": 1, "facts": 3}

    queue = person.get("/api/v1/review/queue", {"namespace": ns, "deck": ""})
    assert queue.status_code == 200, queue.json()
    assert [c["id"] for c in queue.json()["new"]] == [card.pk]
    assert len(person.get("/api/v1/review/queue", {"namespace": ns}).json()["new"]) == 4

    stats = person.get("/api/v1/review/stats", {"namespace": ns, "deck": ""})
    assert stats.status_code == 200, stats.json()
    assert stats.json()["total"] == 1
    assert person.get("/api/v1/review/stats", {"namespace": ns}).json()["total"] == 4

    session = _start(person, namespace, deck="")
    assert (session["deck"], session["total"], session["next_card"]["id"]) == ("", 1, card.pk)
    assert _start(person, namespace)["total"] == 4

    cram = person.post("/api/v1/review/cram", {"namespace": ns, "deck": ""}, format="json")
    assert cram.status_code == 201, cram.json()
    assert (cram.json()["deck"], cram.json()["total"]) == ("", 1)


# --- One open study session per person and scope (the dashboard's rule) ------------------


def test_starting_a_session_again_picks_up_the_open_one(person, namespace, deck):
    first = person.post("/api/v1/review/sessions", {"namespace": namespace.slug}, format="json")
    assert first.status_code == 201 and first.json()["resumed"] is False
    card = first.json()["next_card"]["id"]
    person.post(
        f"/api/v1/review/sessions/{first.json()['id']}/grade",
        {"card": card, "grade": "easy"},
        format="json",
    )
    again = person.post("/api/v1/review/sessions", {"namespace": namespace.slug}, format="json")
    assert again.status_code == 200, again.json()
    body = again.json()
    assert (body["id"], body["resumed"], body["done"]) == (first.json()["id"], True, 1)
    # Another scope (one deck) is a session of its own; once finished, a new one opens.
    facts = person.post(
        "/api/v1/review/sessions", {"namespace": namespace.slug, "deck": "facts"}, format="json"
    )
    assert facts.status_code == 201 and facts.json()["id"] != body["id"]
    person.post(f"/api/v1/review/sessions/{body['id']}/finish")
    new = person.post("/api/v1/review/sessions", {"namespace": namespace.slug}, format="json")
    assert new.status_code == 201 and new.json()["id"] not in (body["id"], facts.json()["id"])
    assert StudySession.objects.filter(namespace=namespace, deck=None).count() == 2
    assert StudySession.objects.filter(status=StudySession.Status.ACTIVE, deck=None).count() == 1
