"""review's pages: the home page, study sessions and cram."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.models import BackgroundRun
from review.models import Card, ReviewLog, StudySession
from review.views import format_interval
from tests.support.dashboard import HX, add_memories

pytestmark = pytest.mark.django_db


# --- Home --------------------------------------------------------------------------------


def test_home_shows_due_and_new_cards_per_deck_and_the_plots(ada_client, user, personal):
    add_memories(personal, user, 9)
    response = ada_client.get(reverse("home"))
    body = response.content.decode()
    overview = response.context["overview"][0]
    assert overview["namespace"] == personal
    assert {d.deck: d.due_today for d in overview["decks"]} == {"geo": 2, "history": 1}
    assert overview["new"] == 3
    assert body.count('action="/review/start"') == 3  # study all + one per deck
    for kind in ("reviews", "forecast", "histogram"):
        assert f'class="plot plot-{kind}"' in body
    assert response.context["memories_scored"] == 9
    assert 'data-threshold="0.65"' in body
    assert "1 promoted" in body  # the sweep's work, from its events
    assert response.context["background"]["runs"][0]["counts"] == [("promoted", 1)]


def test_the_namespaces_page_counts_the_cards_home_counts(ada_client, user, personal):
    memories = add_memories(personal, user, 9)
    services.memory_forget(memory=memories[0], reason="wrong")  # its card sits out
    home = ada_client.get(reverse("home")).context["overview"][0]
    on_home = sum(deck.total for deck in home["decks"])
    page = ada_client.get(reverse("namespace-list")).content.decode()
    row = re.search(rf'<tr data-namespace="{personal.slug}">(.*?)</tr>', page, re.S).group(1)
    cards = re.findall(r'<td class="num">(\d+)</td>', row)[-1]
    assert int(cards) == on_home == 8


def test_home_switches_namespace_with_an_htmx_partial(ada_client, user, personal):
    second = services.namespace_create(owner=user, name="Second", mode="personal")
    add_memories(second, user, 3)
    response = ada_client.get(reverse("home"), {"namespace": "second"}, **HX)
    body = response.content.decode()
    # The fragment carries the tab's title for htmx to set: no two tabs share one.
    assert body.lstrip().startswith("<title>Second · Home · Engram</title>")
    assert '<section id="stats"' in body
    assert 'Statistics <span class="muted">· Second</span>' in body
    assert "Background work" not in body
    page = ada_client.get(reverse("home"), {"namespace": "second"}).content.decode()
    assert page.count("<title>Second · Home · Engram</title>") == 1


def test_home_without_namespaces_invites_to_create_one(ada_client):
    body = ada_client.get(reverse("home")).content.decode()
    assert "Create one" in body


def test_global_background_runs_hide_their_counts_from_non_staff(ada_client, user, personal):
    BackgroundRun.objects.create(
        kind=BackgroundRun.Kind.SWEEP, status="ok", counts={"forgotten": 999}
    )
    runs = ada_client.get(reverse("home")).context["background"]["runs"]
    assert runs[0]["counts"] == []
    user.is_staff = True
    user.save()
    runs = ada_client.get(reverse("home")).context["background"]["runs"]
    assert runs[0]["counts"] == [("forgotten", 999)]


# --- Review ------------------------------------------------------------------------------


@pytest.fixture
def due_three(user, personal) -> list[Card]:
    past = timezone.now() - timedelta(days=3)
    cards = []
    for i in range(3):
        memory = services.memory_create(
            namespace=personal, content=f"Card {i} answer", topic="deck"
        )
        card = Card.objects.get(memory=memory)
        Card.objects.filter(pk=card.pk).update(next_review=past, interval_days=1, repetitions=1)
        cards.append(card)
    return cards


def start(client, namespace, **extra) -> StudySession:
    response = client.post(reverse("review-start"), {"namespace": namespace.slug, **extra})
    assert response.status_code == 303
    return StudySession.objects.order_by("-pk").first()


def grade(client, session, grade_name, **extra):
    item = session.items.filter(done=False).order_by("position").first()
    card = Card.objects.get(pk=item.card_id)
    return client.post(
        reverse("review-grade", args=[session.pk]),
        {"card": card.pk, "grade": grade_name, "version": card.version},
        **extra,
    )


def test_a_study_session_grades_through_the_service_one_card_per_request(
    ada_client, user, personal, due_three
):
    session = start(ada_client, personal)
    page = ada_client.get(reverse("review-session", args=[session.pk]))
    body = page.content.decode()
    assert "0 of 3 done" in body
    for label in ("Again", "Hard", "Good", "Easy"):
        assert f'{label}<span class="interval">' in body
    assert page.context["buttons"][2]["interval"] == "6 d"  # SM-2 Good on a 1-day card

    response = grade(ada_client, session, "good", **HX)
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="review-card"') and "<html" not in body
    assert "1 of 3 done" in body
    log = ReviewLog.objects.get()
    assert (log.grade, log.source, log.user, log.session_id) == (4, "human", user, session.pk)

    # Below Good, the card comes back at the end of the session.
    grade(ada_client, session, "again", **HX)
    assert (
        ada_client.get(reverse("review-session", args=[session.pk])).context["progress"].remaining
        == 2
    )
    grade(ada_client, session, "easy", **HX)
    repeat = ada_client.get(reverse("review-session", args=[session.pk]))
    assert repeat.context["item"].attempts == 1
    body = repeat.content.decode()
    assert "Practice, try 2" in body
    # A practice repeat does not reschedule: its buttons show no interval (issue 17, 3).
    assert [b["interval"] for b in repeat.context["buttons"]] == ["again", "again", "done", "done"]
    assert repeat.context["progress"].learning == 1
    assert 'data-count="learning" title="Learning">1<' in body
    done = grade(ada_client, session, "good", **HX)
    assert "Session complete" in done.content.decode()
    # The repeat is practice, not a review: three reviews today.
    assert 'data-stat="reviews-today">3<' in done.content.decode()
    assert ReviewLog.objects.count() == 3


def test_without_htmx_a_grade_redirects_back_to_the_session(ada_client, personal, due_three):
    session = start(ada_client, personal)
    response = grade(ada_client, session, "good")
    assert response.status_code == 303
    assert response["Location"] == reverse("review-session", args=[session.pk])


def test_a_stale_grade_is_refused_with_a_message(ada_client, personal, due_three, nothing_written):
    session = start(ada_client, personal)
    item = session.items.order_by("position").first()
    card = Card.objects.get(pk=item.card_id)
    with nothing_written():
        response = ada_client.post(
            reverse("review-grade", args=[session.pk]),
            {"card": card.pk, "grade": "good", "version": card.version + 5},
            **HX,
        )
    assert "reload it and grade again" in response.content.decode()
    assert not ReviewLog.objects.exists()
    with nothing_written():
        bad = ada_client.post(
            reverse("review-grade", args=[session.pk]), {"card": card.pk, "grade": "great"}, **HX
        )
    assert "Unknown grade" in bad.content.decode()


def test_undo_gives_the_last_grade_back(ada_client, user, personal, due_three, nothing_written):
    session = start(ada_client, personal)
    with nothing_written():
        nothing = ada_client.post(reverse("review-undo", args=[session.pk]), **HX)
    assert "no grade to undo" in nothing.content.decode()
    first = session.items.order_by("position").first()
    before = Card.objects.filter(pk=first.card_id).values("next_review", "repetitions").get()
    grade(ada_client, session, "good", **HX)
    response = ada_client.post(reverse("review-undo", args=[session.pk]), **HX)
    assert "0 of 3 done" in response.content.decode()
    after = Card.objects.filter(pk=first.card_id).values("next_review", "repetitions").get()
    assert after == before
    assert ReviewLog.objects.get().undone_at is not None
    assert f'data-card="{first.card_id}"' in response.content.decode()


def test_finishing_early_shows_the_summary(ada_client, personal, due_three):
    session = start(ada_client, personal)
    grade(ada_client, session, "good", **HX)
    response = ada_client.post(reverse("review-finish", args=[session.pk]), **HX)
    body = response.content.decode()
    assert "Session ended" in body
    assert "<li>Good <strong>1</strong></li>" in body
    summary = ada_client.get(reverse("review-session", args=[session.pk]))
    assert summary.context["progress"].graded == 1
    assert dict(summary.context["grades"]) == {"Again": 0, "Hard": 0, "Good": 1, "Easy": 0}


def test_a_deck_session_and_an_empty_one(ada_client, user, personal, due_three):
    services.memory_create(namespace=personal, content="Other deck", topic="other")
    session = start(ada_client, personal, deck="other")
    assert session.deck == "other" and session.items.count() == 1  # a new card
    empty = start(ada_client, personal, deck="nothing-here")
    body = ada_client.get(reverse("review-session", args=[empty.pk])).content.decode()
    assert "Nothing to review" in body


def test_starting_again_today_picks_up_the_open_session(ada_client, user, personal, due_three):
    """ "Study all" pressed twice opened two sessions queueing the same cards: the second
    press now goes back to the first. Another deck, a finished session or yesterday's
    start a new one."""
    first = start(ada_client, personal)
    grade(ada_client, first, "good")
    again = ada_client.post(reverse("review-start"), {"namespace": personal.slug})
    assert again["Location"] == reverse("review-session", args=[first.pk])
    assert "Picked up where you left off" in ada_client.get(again["Location"]).content.decode()
    assert StudySession.objects.count() == 1

    services.memory_create(namespace=personal, content="Other deck", topic="other")
    other = start(ada_client, personal, deck="other")
    assert other.pk != first.pk and other.deck == "other"
    StudySession.objects.filter(pk=first.pk).update(started_at=timezone.now() - timedelta(days=1))
    assert start(ada_client, personal).pk not in (first.pk, other.pk)


def test_a_memory_forgotten_mid_session_can_be_restored(ada_client, personal, due_three):
    session = start(ada_client, personal)
    first = session.items.order_by("position").first()
    memory = Card.objects.get(pk=first.card_id).memory
    back = reverse("review-session", args=[session.pk])
    response = ada_client.post(
        reverse("memory-forget", args=[memory.pk]), {"reason": "wrong", "next": back}
    )
    assert response["Location"] == back
    body = ada_client.get(back).content.decode()
    assert "This memory is forgotten" in body and 'name="grade"' not in body


def test_a_card_suspended_elsewhere_leaves_the_session_page(
    ada_client, personal, due_three, nothing_written
):
    """The API's rule: a suspended card is skipped, and a page still showing it cannot
    grade it."""
    session = start(ada_client, personal)
    first = session.items.order_by("position").first()
    card = Card.objects.get(pk=first.card_id)
    ada_client.post(reverse("card-action", args=[card.pk]), {"action": "suspend"})
    page = ada_client.get(reverse("review-session", args=[session.pk]))
    assert page.context["card"].pk != card.pk
    assert page.context["progress"].total == 2
    card.refresh_from_db()
    with nothing_written():
        stale = ada_client.post(
            reverse("review-grade", args=[session.pk]),
            {"card": card.pk, "grade": "good", "version": card.version},
            **HX,
        )
    assert "it left the session" in stale.content.decode()


def test_the_no_topic_deck_is_studied_and_crammed_on_its_own(ada_client, personal, due_three):
    loose = services.memory_create(namespace=personal, content="Loose fact", topic="")
    body = ada_client.get(reverse("review-index")).content.decode()
    assert 'name="deck" value=""' in body
    session = start(ada_client, personal, deck="")
    assert session.deck == "" and list(session.items.values_list("card__memory", flat=True)) == [
        loose.pk
    ]
    crammed = ada_client.post(reverse("cram-start"), {"namespace": personal.slug, "deck": ""})
    assert crammed.status_code == 303
    cram = StudySession.objects.order_by("-pk").first()
    assert (cram.mode, cram.deck, cram.items.count()) == ("cram", "", 1)


# --- Cram --------------------------------------------------------------------------------


def test_cram_scores_a_deck_and_reschedules_nothing(ada_client, user, personal, due_three):
    services.memory_create(namespace=personal, content="Elsewhere", topic="other")
    before = list(Card.objects.order_by("pk").values())
    response = ada_client.post(reverse("cram-start"), {"namespace": personal.slug, "deck": "deck"})
    session = StudySession.objects.get(mode="cram")
    assert response["Location"] == reverse("cram-session", args=[session.pk])
    answers = iter(["1", "0", "1"])
    for _ in range(3):
        item = session.items.filter(done=False).order_by("position").first()
        last = ada_client.post(
            reverse("cram-answer", args=[session.pk]),
            {"card": item.card_id, "correct": next(answers)},
            **HX,
        )
    body = last.content.decode()
    assert body.lstrip().startswith('<div id="cram-card"')
    assert "<span data-score>2/3</span>" in body
    assert '<tr data-deck-score="deck"><td>deck</td><td class="num">2</td>' in body
    session.refresh_from_db()
    assert session.status == StudySession.Status.FINISHED
    assert list(Card.objects.order_by("pk").values()) == before
    assert not ReviewLog.objects.exists()


def test_cram_of_an_empty_deck_says_so(ada_client, personal, nothing_written):
    with nothing_written():
        response = ada_client.post(reverse("cram-start"), {"namespace": personal.slug, "deck": "x"})
    assert response["Location"] == reverse("cram-index")
    assert "no cards to cram" in ada_client.get(reverse("cram-index")).content.decode()


def test_cram_can_finish_early(ada_client, personal, due_three):
    ada_client.post(reverse("cram-start"), {"namespace": personal.slug})
    session = StudySession.objects.get(mode="cram")
    response = ada_client.post(reverse("cram-finish", args=[session.pk]), **HX)
    assert "<span data-score>0/0</span>" in response.content.decode()


@pytest.mark.parametrize(
    ("days", "label"),
    [(0.003, "4 min"), (0.25, "6 h"), (1, "1 d"), (6, "6 d"), (45, "1.5 mo"), (400, "1.1 y")],
)
def test_format_interval(days, label):
    assert format_interval(days) == label


def test_a_namespace_without_cards_says_how_to_get_some(ada_client, user):
    from memories import services

    services.namespace_create(owner=user, name="Diary", mode="personal")
    services.namespace_create(owner=user, name="Agent", mode="agent_memory")
    for slug, advice in (
        ("diary", "add a memory</a> and it gets one"),
        ("agent", '"Schedule for review now"'),
    ):
        body = ada_client.get(reverse("home"), {"namespace": slug}).content.decode()
        assert "No cards in this namespace yet" in body and advice in body, slug
