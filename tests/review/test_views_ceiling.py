"""Dashboard review pages show a session as the viewer's scope admits it.

A person on the dashboard sees every classification today, so the pages are checked twice:
with the person's own scope against a token that reads the same session through the API,
and with the dashboard's scope lowered to `public` (as a viewer whose ceiling is below a
card's), where a restricted card must change no count, deck name or next card.
"""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.auth import Scope
from memories.models import Classification, Namespace
from review import services as review_services
from review.models import Card, StudySession, StudySessionItem

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
SECRET_DECK = "zz-merger-talks"
SECRET_TEXT = "Initech acquisition closes on Friday"


@pytest.fixture
def personal(user) -> Namespace:
    return services.namespace_create(owner=user, name="Personal", mode=Namespace.Mode.PERSONAL)


@pytest.fixture
def secret(personal):
    """Two public cards in deck `facts`, then a restricted card in a deck of its own."""
    for i in range(2):
        services.memory_create(
            namespace=personal,
            content=f"Public fact {i}",
            topic="facts",
            classification=Classification.PUBLIC,
        )
    return services.memory_create(
        namespace=personal,
        content=SECRET_TEXT,
        topic=SECRET_DECK,
        classification=Classification.RESTRICTED,
    )


@pytest.fixture
def public_viewer(monkeypatch):
    """The dashboard's scope, lowered to the public ceiling."""

    original = Scope.of.__func__

    def lowered(cls, request):
        scope = original(cls, request)
        scope.ceiling = Classification.PUBLIC
        return scope

    monkeypatch.setattr(Scope, "of", classmethod(lowered))


def started(personal, user, mode: str, secret) -> StudySession:
    """A session holding all three cards (started by a caller who sees them all), with the
    restricted card first in line."""
    if mode == StudySession.Mode.STUDY:
        session = review_services.study_session_start(
            namespace=personal, tz=timezone.get_current_timezone(), user=user, ceiling=None
        )
    else:
        session = review_services.cram_start(namespace=personal, user=user, ceiling=None)
    assert session.items.count() == 3
    StudySessionItem.objects.filter(session=session, card__memory=secret).update(position=-1)
    return session


def shown_card(body: str) -> Card:
    """The card a session page (or its htmx partial) shows."""
    return Card.objects.get(pk=re.search(r'data-card="(\d+)"', body).group(1))


def assert_nothing_secret(bodies: list[str]) -> None:
    for body in bodies:
        assert SECRET_DECK not in body and SECRET_TEXT not in body


def test_a_study_session_counts_and_shows_only_the_viewers_cards(
    ada_client, user, personal, secret, public_viewer
):
    session = started(personal, user, StudySession.Mode.STUDY, secret)
    url = reverse("review-session", args=[session.pk])
    home = ada_client.get(reverse("home"))
    assert [s.pk for s in home.context["active"]] == [session.pk]
    page = ada_client.get(url)
    bodies = [home.content.decode(), page.content.decode()]
    assert "0 of 2 done" in bodies[-1]
    assert (page.context["progress"].total, page.context["progress"].remaining) == (2, 2)

    for _ in range(2):
        card = shown_card(bodies[-1])
        assert card.memory_id != secret.pk
        page = ada_client.post(
            reverse("review-grade", args=[session.pk]),
            {"card": card.pk, "grade": "good", "version": card.version},
            **HX,
        )
        bodies.append(page.content.decode())
    # Only the restricted card is left: complete for this viewer, not a dead end.
    assert "Session complete" in bodies[-1]
    assert "<li>Good <strong>2</strong></li>" in bodies[-1]
    assert "2 of 2 done" in bodies[-1]
    for name in ("home", "review-index"):
        response = ada_client.get(reverse(name))
        bodies.append(response.content.decode())
        assert response.context["active"] == []  # nothing left to resume for this viewer
        decks = [d.deck for row in response.context["overview"] for d in row["decks"]]
        assert decks == ["facts"]
    bodies.append(ada_client.get(url).content.decode())
    assert_nothing_secret(bodies)
    session.refresh_from_db()
    assert session.is_active  # the restricted card still waits for a caller who may see it


def test_a_cram_session_scores_only_the_viewers_cards(
    ada_client, user, personal, secret, public_viewer
):
    session = started(personal, user, StudySession.Mode.CRAM, secret)
    page = ada_client.get(reverse("cram-session", args=[session.pk]))
    bodies = [page.content.decode()]
    assert "Card 1 of 2" in bodies[0]
    for _ in range(2):
        page = ada_client.post(
            reverse("cram-answer", args=[session.pk]),
            {"card": shown_card(bodies[-1]).pk, "correct": "1"},
            **HX,
        )
        bodies.append(page.content.decode())
    assert "<span data-score>2/2</span>" in bodies[-1]
    assert re.findall(r'data-deck-score="([^"]*)"', bodies[-1]) == ["facts"]
    bodies.append(ada_client.get(reverse("cram-index")).content.decode())
    assert_nothing_secret(bodies)


def test_a_session_of_hidden_cards_only_is_missing_for_the_viewer(
    ada_client, user, personal, secret, public_viewer, nothing_written
):
    study = review_services.study_session_start(
        namespace=personal,
        tz=timezone.get_current_timezone(),
        user=user,
        deck=SECRET_DECK,
        ceiling=None,
    )
    cram = review_services.cram_start(namespace=personal, user=user, deck=SECRET_DECK)
    card = Card.objects.get(memory=secret)
    with nothing_written():
        responses = [
            ada_client.get(reverse("review-session", args=[study.pk])),
            ada_client.post(
                reverse("review-grade", args=[study.pk]), {"card": card.pk, "grade": "good"}
            ),
            ada_client.get(reverse("cram-session", args=[cram.pk])),
            ada_client.post(
                reverse("cram-answer", args=[cram.pk]), {"card": card.pk, "correct": "1"}
            ),
        ]
    responses.append(ada_client.get(reverse("home")))
    assert [r.status_code for r in responses] == [404, 404, 404, 404, 200]
    assert_nothing_secret([r.content.decode() for r in responses])


def test_a_session_started_on_the_dashboard_shows_a_lower_token_only_its_cards(
    ada_client, user, personal, secret, make_token, api
):
    ada_client.post(reverse("review-start"), {"namespace": personal.slug})
    session = StudySession.objects.get()
    assert "0 of 3 done" in ada_client.get(reverse("review-session", args=[session.pk])).text
    _, token = make_token(user, ceiling=Classification.PUBLIC)
    response = api(token).get(f"/api/v1/review/sessions/{session.pk}")
    assert (response.json()["total"], response.json()["remaining"]) == (2, 2)
    assert_nothing_secret([response.content.decode()])
