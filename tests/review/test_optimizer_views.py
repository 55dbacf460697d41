"""The dashboard's Optimize: the button on the namespace page, the page with the parameters in
use and the last fit's figures, the refusal, the queued state, and Reset to defaults."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import services as memory_services
from memories.models import Namespace
from tests.review.test_optimizer import WRONG_PARAMETERS, add_review_history, synthetic_reviews

pytestmark = pytest.mark.django_db


@pytest.fixture
def person(user) -> Namespace:
    namespace = memory_services.namespace_create(
        owner=user, name="Japanese", mode=Namespace.Mode.PERSONAL, scheduler="fsrs"
    )
    Namespace.objects.filter(pk=namespace.pk).update(fsrs_parameters=list(WRONG_PARAMETERS))
    namespace.refresh_from_db()
    return namespace


@pytest.fixture
def signed_in(client, user):
    client.force_login(user)
    return client


def page_url(namespace: Namespace) -> str:
    return reverse("review-optimize", args=[namespace.slug])


def test_the_namespace_page_has_an_optimize_button_posting_to_review(signed_in, person):
    html = signed_in.get(reverse("namespace-detail", args=[person.slug])).content.decode()
    run = reverse("review-optimize-run", args=[person.slug])
    assert f'action="{run}"' in html and ">Optimize</button>" in html
    assert f'href="{page_url(person)}"' in html


def test_optimize_fits_and_the_page_shows_the_figures(signed_in, person):
    reviews = synthetic_reviews()
    add_review_history(person, reviews)

    response = signed_in.post(reverse("review-optimize-run", args=[person.slug]))

    assert response.status_code == 303 and response["Location"] == page_url(person) + "?ran=1"
    page = signed_in.get(response["Location"])
    html = page.content.decode()
    person.refresh_from_db()
    fit = person.fsrs_fit
    assert fit["status"] == "done" and person.fsrs_parameters == fit["parameters"]
    assert 'data-parameters="fitted"' in html and "Fitted to your reviews" in html
    assert "data-fit-figures" in html and "Log loss" in html and "RMSE (bins)" in html
    assert f"{fit['before']['log_loss']:.4f}" in html and f"{fit['after']['log_loss']:.4f}" in html
    assert "Before (earlier fit)" in html
    assert f"<dd data-fit-reviews>{len(reviews)} on 70 cards</dd>" in html
    assert fit["engine"] in html and "fsrs-rs-python" in html
    assert 'id="last-fit"' in html and "data-autofocus" in html  # focus lands on the result
    assert ">Reset to defaults</button>" in html


def test_below_the_minimum_the_page_says_why_and_nothing_is_written(
    signed_in, person, nothing_written
):
    add_review_history(person, synthetic_reviews(cards=10))
    with nothing_written(ignore={"sessions.Session": {"expire_date", "session_data"}}):
        response = signed_in.post(reverse("review-optimize-run", args=[person.slug]))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'role="alert" id="optimize-refusal"' in html
    assert "reviews of yours; fitting FSRS to them needs at least 400." in html
    assert "None yet." in html


def test_a_fit_in_the_worker_shows_queued_and_the_panel_refreshes_itself(signed_in, person):
    Namespace.objects.filter(pk=person.pk).update(
        fsrs_fit={
            "status": "queued",
            "requested_at": timezone.now().isoformat(),
            "reviews": 25_000,
            "applied": True,
        }
    )
    html = signed_in.get(page_url(person)).content.decode()
    assert 'data-fit-status="queued"' in html and "25000 reviews" in html
    assert 'hx-trigger="every 2s"' in html and "Refresh</a>" in html
    # htmx's poll gets the panel alone.
    partial = signed_in.get(page_url(person), HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<div id="fit"') and "<html" not in partial


def test_a_failed_fit_says_why(signed_in, person):
    Namespace.objects.filter(pk=person.pk).update(
        fsrs_fit={
            "status": "failed",
            "message": "The FSRS engine could not fit these reviews: oops",
            "requested_at": timezone.now().isoformat(),
        }
    )
    html = signed_in.get(page_url(person)).content.decode()
    assert 'data-fit-status="failed"' in html and "could not fit these reviews: oops" in html
    assert "every 2s" not in html


def test_reset_to_defaults(signed_in, person):
    response = signed_in.post(reverse("review-optimize-reset", args=[person.slug]), follow=True)
    person.refresh_from_db()
    assert person.fsrs_parameters is None
    html = response.content.decode()
    assert 'data-parameters="defaults"' in html and "<strong>FSRS's defaults</strong>" in html
    assert "schedules with FSRS&#x27;s default parameters again" in html
    assert "Reset to defaults" not in html


def test_an_sm2_namespace_is_told_when_the_parameters_apply(signed_in, user):
    namespace = memory_services.namespace_create(owner=user, name="Plain", scheduler="sm2")
    html = signed_in.get(page_url(namespace)).content.decode()
    assert "fitted parameters take effect once its scheduler is FSRS" in html
    assert "You have <strong>0</strong> reviews here; a fit needs at least 400." in html


def test_another_users_namespace_is_not_found(client, other_user, person, nothing_written):
    client.force_login(other_user)
    assert client.get(page_url(person)).status_code == 404
    with nothing_written(ignore={"sessions.Session": {"expire_date", "session_data"}}):
        for name in ("review-optimize-run", "review-optimize-reset"):
            assert client.post(reverse(name, args=[person.slug])).status_code == 404


def test_the_actions_are_post_only(signed_in, person):
    for name in ("review-optimize-run", "review-optimize-reset"):
        assert signed_in.get(reverse(name, args=[person.slug])).status_code == 405
