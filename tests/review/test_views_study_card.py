"""What a person does to the card in front of them (issue 17, items 1, 3, 4 and 5): read a
cloze and see its gaps on the back, write a cue in two keystrokes' worth of page, bury or
suspend the card, wait for a learning step, and see the time spent, on the dashboard."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.models import MemoryEvent
from review.models import Card, ReviewLog, StudySession
from tests.support.dashboard import HX

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_new(personal):
    return [
        services.memory_create(namespace=personal, content=text, topic="geo")
        for text in ("Ada Lovelace was born in 1815.", "Oslo is the capital of Norway")
    ]


def start(client, namespace) -> StudySession:
    response = client.post(reverse("review-start"), {"namespace": namespace.slug})
    assert response.status_code == 303
    return StudySession.objects.order_by("-pk").first()


def shown(client, session):
    return client.get(reverse("review-session", args=[session.pk]))


def test_a_cloze_card_hides_its_gap_and_marks_it_on_the_back(ada_client, personal, two_new):
    page = shown(ada_client, start(ada_client, personal))
    body = page.content.decode()
    assert page.context["front"].kind == "cloze"
    assert '<span class="badge badge-front" data-front="cloze">Cloze</span>' in body
    question = body.split('id="cue"')[1].split("</p>")[0]
    assert "1815" not in question and '<span class="gap" aria-label="blank">[…]</span>' in question
    assert "<mark>1815</mark>" in body
    counts = page.context["progress"]
    assert (counts.new, counts.learning, counts.review, counts.next_kind) == (2, 0, 0, "new")


def test_a_cue_written_on_the_card_becomes_its_front_through_the_memory_service(
    ada_client, user, personal, two_new
):
    session = start(ada_client, personal)
    card = shown(ada_client, session).context["card"]
    response = ada_client.post(
        reverse("review-cue", args=[session.pk]),
        {"card": card.pk, "cue": "When was Ada Lovelace born?"},
        **HX,
    )
    assert response.status_code == 200
    assert response.context["front"].kind == "cue"
    assert "When was Ada Lovelace born?" in response.content.decode()
    event = MemoryEvent.objects.filter(memory=card.memory, kind="updated").get()
    assert event.after == {"cue": "When was Ada Lovelace born?"} and event.actor == user
    too_long = ada_client.post(
        reverse("review-cue", args=[session.pk]), {"card": card.pk, "cue": "x" * 301}, **HX
    )
    assert "300 characters" in too_long.context["error"]
    card.memory.refresh_from_db()
    assert card.memory.cue == "When was Ada Lovelace born?"


def test_bury_and_suspend_take_the_card_out_of_the_session_and_of_review(
    ada_client, personal, two_new
):
    session = start(ada_client, personal)
    first = shown(ada_client, session).context["card"]
    response = ada_client.post(reverse("review-bury", args=[session.pk]), {"card": first.pk}, **HX)
    assert response.context["card"].pk != first.pk
    buried = Card.objects.get(pk=first.pk)
    assert buried.buried_until > timezone.now() and buried.suspended_at is None
    second = response.context["card"]
    done = ada_client.post(reverse("review-suspend", args=[session.pk]), {"card": second.pk}, **HX)
    assert Card.objects.get(pk=second.pk).suspended_at is not None
    assert "data-summary" in done.content.decode()  # nothing left: the session is over
    session.refresh_from_db()
    assert session.status == "finished" and not ReviewLog.objects.exists()
    # Neither comes back in a new session today.
    assert start(ada_client, personal).items.count() == 0


def test_another_users_card_cannot_be_buried_or_cued_from_my_session(
    ada_client, personal, two_new, theirs
):
    session = start(ada_client, personal)
    for name, data in (("review-bury", {}), ("review-cue", {"cue": "mine now"})):
        response = ada_client.post(
            reverse(name, args=[session.pk]), {"card": theirs["card"].pk, **data}, **HX
        )
        assert response.context["error"] == "That card is not in this session."
    card = Card.objects.get(pk=theirs["card"].pk)
    assert card.buried_until is None and card.memory.cue == ""
    assert ada_client.post(reverse("review-bury", args=[theirs["study"].pk])).status_code == 404


def test_a_learning_step_waits_with_a_countdown_then_comes_back(ada_client, user, personal):
    personal.scheduler = "fsrs"
    personal.save()
    memory = services.memory_create(namespace=personal, content="Oslo is in Norway", topic="geo")
    session = start(ada_client, personal)
    card = Card.objects.get(memory=memory)
    page = shown(ada_client, session)
    good = next(b for b in page.context["buttons"] if b["name"] == "good")
    assert good["interval"] == "10 min"
    shown_at = page.context["shown_at"] - 5000  # the person thought for five seconds
    response = ada_client.post(
        reverse("review-grade", args=[session.pk]),
        {"card": card.pk, "grade": "good", "version": card.version, "shown_at": shown_at},
        **HX,
    )
    body = response.content.decode()
    assert "Next card in" in body and 'hx-trigger="load delay:' in body
    delay = int(body.split('hx-trigger="load delay:')[1].split("s")[0])
    assert 540 <= delay <= 601
    log = ReviewLog.objects.get()
    assert 5000 <= log.duration_ms < 60_000
    session.refresh_from_db()
    assert session.status == "active"
    # Ten minutes later the card is back, as learning, and the session ends after it.
    session.items.update(due_at=timezone.now() - timedelta(seconds=1))
    back = shown(ada_client, session)
    assert back.context["card"].pk == card.pk and back.context["progress"].next_kind == "learning"


def test_the_summary_shows_the_time_spent_answering(ada_client, personal, two_new):
    session = start(ada_client, personal)
    for _ in range(2):
        page = shown(ada_client, session)
        card = page.context["card"]
        ada_client.post(
            reverse("review-grade", args=[session.pk]),
            {
                "card": card.pk,
                "grade": "easy",
                "version": card.version,
                "shown_at": page.context["shown_at"] - 3000,
            },
        )
    summary = shown(ada_client, session)
    time = summary.context["time"]
    assert time.timed == 2 and time.total_ms >= 6000 and time.average_ms >= 3000
    assert 'data-stat="session-average"' in summary.content.decode()
