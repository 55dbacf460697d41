"""review.services.optimize: a namespace's FSRS parameters fitted to its person's review logs,
in the request or in the worker, stored only when they win, and reset."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from memories import services as memory_services
from memories.models import Classification, Namespace
from review import optimizer, services
from review.models import ReviewLog
from review.schedulers import FSRS_DEFAULT_PARAMETERS, FSRSScheduler
from review.selectors import card_state, scheduler_for
from review.selectors.cards import fsrs_parameters_in_use
from review.services import optimize
from tests.review.test_optimizer import (
    WRONG_PARAMETERS,
    add_review_history,
    synthetic_reviews,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def person(user) -> Namespace:
    return memory_services.namespace_create(
        owner=user, name="Japanese", mode=Namespace.Mode.PERSONAL, scheduler="fsrs"
    )


@pytest.fixture
def history(person):
    reviews = synthetic_reviews()
    add_review_history(person, reviews)
    return reviews


def test_below_the_minimum_it_refuses_naming_the_namespace_and_writes_nothing(
    person, nothing_written
):
    add_review_history(person, [r for r in synthetic_reviews() if r.card_id <= 20])
    count = ReviewLog.objects.filter(namespace=person).count()
    with nothing_written(), pytest.raises(services.NotEnoughReviews) as refusal:
        services.namespace_optimize(namespace=person)
    assert refusal.value.field == "namespace" and refusal.value.api_status == 400
    assert (refusal.value.count, refusal.value.needed) == (count, 400)
    assert f"has {count} reviews of yours" in refusal.value.message
    assert "at least 400" in refusal.value.message


def test_only_the_persons_own_grades_count(person, history, nothing_written):
    """Simulated and implicit grades are not a person's recall; undone grades were taken
    back; cram does not schedule."""
    logs = ReviewLog.objects.filter(namespace=person).order_by("reviewed_at")
    keep = set(logs.values_list("pk", flat=True)[: optimizer.MIN_REVIEWS - 1])
    others = logs.exclude(pk__in=keep)
    ids = list(others.values_list("pk", flat=True))
    for n, pk in enumerate(ids):
        kind = n % 4
        changes = (
            {"source": ReviewLog.Source.SIMULATED},
            {"source": ReviewLog.Source.IMPLICIT},
            {"undone_at": timezone.now()},
            {"mode": ReviewLog.Mode.CRAM},
        )[kind]
        ReviewLog.objects.filter(pk=pk).update(**changes)
    assert optimize.optimize_reviews(namespace=person).count() == 399
    with nothing_written(), pytest.raises(services.NotEnoughReviews, match="has 399 reviews"):
        services.namespace_optimize(namespace=person)
    # A caller may still choose to learn from the agents' grades too.
    outcome = services.namespace_optimize(
        namespace=person, sources=(ReviewLog.Source.HUMAN, ReviewLog.Source.SIMULATED)
    )
    assert outcome.fit["status"] == "done" and outcome.fit["sources"] == ["human", "simulated"]


def test_reviews_above_the_callers_ceiling_do_not_count(person, history):
    from memories.models import Memory

    Memory.objects.filter(namespace=person, content__endswith=" 1.").update(
        classification=Classification.RESTRICTED
    )
    everything = optimize.optimize_reviews(namespace=person).count()
    below = optimize.optimize_reviews(namespace=person, ceiling=Classification.CONFIDENTIAL)
    assert 0 < below.count() < everything


def test_a_fit_that_beats_the_parameters_in_use_is_stored_and_scheduled_with(person, history):
    Namespace.objects.filter(pk=person.pk).update(fsrs_parameters=list(WRONG_PARAMETERS))
    person.refresh_from_db()

    outcome = services.namespace_optimize(namespace=person, ceiling=Classification.RESTRICTED)

    assert not outcome.queued
    fit = outcome.fit
    person.refresh_from_db()
    assert person.fsrs_fit == fit
    assert fit["status"] == "done" and fit["applied"] is True
    assert fit["before_parameters"] == "fitted"
    assert fit["after"]["log_loss"] < fit["before"]["log_loss"]
    assert fit["after"]["rmse_bins"] < fit["before"]["rmse_bins"]
    assert fit["reviews"] == len(history) and fit["cards"] == 70
    assert fit["eval_predictions"] > 0 and fit["train_predictions"] > fit["eval_predictions"]
    assert fit["engine"] == optimizer.engine() and fit["min_reviews"] == 400
    assert fit["ceiling"] == Classification.RESTRICTED and fit["sources"] == ["human"]
    assert "and were put in use" in fit["message"]
    assert person.fsrs_parameters == fit["parameters"] and len(fit["parameters"]) == 21
    # Grading now uses them.
    scheduler = scheduler_for(person)
    assert isinstance(scheduler, FSRSScheduler) and scheduler.fitted
    assert list(scheduler.parameters) == person.fsrs_parameters
    assert fsrs_parameters_in_use(person) == person.fsrs_parameters


def test_a_fit_that_does_not_beat_them_is_recorded_but_not_used(person, history):
    first = services.namespace_optimize(namespace=person).fit
    # The same reviews fit to the same vector, which is no better than itself.
    Namespace.objects.filter(pk=person.pk).update(fsrs_parameters=first["parameters"])
    person.refresh_from_db()

    again = services.namespace_optimize(namespace=person).fit

    person.refresh_from_db()
    assert again["status"] == "done" and again["applied"] is False
    assert again["after"]["log_loss"] == pytest.approx(again["before"]["log_loss"])
    assert "so the ones in use were kept" in again["message"]
    assert person.fsrs_parameters == first["parameters"]


def test_the_defaults_are_the_starting_point_of_a_namespace_never_fitted(person, history):
    fit = services.namespace_optimize(namespace=person).fit
    assert fit["before_parameters"] == "defaults"
    person.refresh_from_db()
    assert (person.fsrs_parameters is not None) == fit["applied"]


def test_a_large_history_is_fitted_in_the_worker(
    person, history, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        outcome = services.namespace_optimize(namespace=person, in_request_max=100)
    assert outcome.queued and len(callbacks) == 1
    person.refresh_from_db()
    assert person.fsrs_fit["status"] == "queued" and person.fsrs_fit["reviews"] == len(history)
    assert person.fsrs_parameters is None

    # Asked again before the worker got to it: not queued twice.
    with django_capture_on_commit_callbacks() as again:
        repeat = services.namespace_optimize(namespace=person, in_request_max=100)
    assert repeat.queued and again == [] and repeat.fit == person.fsrs_fit

    callbacks[0]()  # the commit: the task runs (synchronously in the test settings)
    person.refresh_from_db()
    fit = person.fsrs_fit
    assert fit["status"] == "done" and fit["reviews"] == len(history)
    assert fit["requested_at"] == outcome.fit["requested_at"] and fit["started_at"]
    assert fit["before"] and fit["after"]


def test_a_fit_left_queued_by_a_dead_worker_is_queued_again(
    person, history, django_capture_on_commit_callbacks
):
    long_ago = timezone.now() - timedelta(days=1)
    Namespace.objects.filter(pk=person.pk).update(
        fsrs_fit={"status": "running", "requested_at": long_ago.isoformat()}
    )
    person.refresh_from_db()
    assert not services.fit_pending(person.fsrs_fit)
    with django_capture_on_commit_callbacks() as callbacks:
        services.namespace_optimize(namespace=person, in_request_max=100)
    assert len(callbacks) == 1


def test_the_worker_records_a_failure_with_its_reason(person, history):
    from review.tasks import fsrs_optimize

    Namespace.objects.filter(pk=person.pk).update(
        fsrs_fit={"status": "queued", "requested_at": timezone.now().isoformat(), "reviews": 9}
    )
    # The reviews went away between the request and the worker.
    ReviewLog.objects.filter(namespace=person).update(undone_at=timezone.now())

    fit = fsrs_optimize(person.pk, None, ["human"])

    person.refresh_from_db()
    assert person.fsrs_fit == fit
    assert fit["status"] == "failed" and "has 0 reviews of yours" in fit["message"]
    assert fit["finished_at"] and fit["reviews"] == 9 and "before" not in fit
    assert person.fsrs_parameters is None
    assert fsrs_optimize(10**9) == {}  # a namespace deleted meanwhile


def test_reset_goes_back_to_the_defaults_and_keeps_the_record(person, history):
    Namespace.objects.filter(pk=person.pk).update(fsrs_parameters=list(WRONG_PARAMETERS))
    person.refresh_from_db()
    services.namespace_optimize(namespace=person)
    person.refresh_from_db()
    assert person.fsrs_parameters is not None

    services.namespace_fsrs_reset(namespace=person)

    person.refresh_from_db()
    assert person.fsrs_parameters is None
    assert person.fsrs_fit["applied"] is False and person.fsrs_fit["reset_at"]
    assert person.fsrs_fit["status"] == "done"
    assert scheduler_for(person).parameters == FSRS_DEFAULT_PARAMETERS


@pytest.mark.parametrize(
    "stored",
    [[1.0] * 20, [-1.0] * 21, [1e300] * 21, {"w": [1]}, "garbage", [None] * 21, 42],
)
def test_stored_parameters_never_make_a_read_or_a_grade_fail(person, stored, caplog):
    memory = memory_services.memory_create(namespace=person, content="A fact.", topic="t")
    Namespace.objects.filter(pk=person.pk).update(fsrs_parameters=stored)
    person.refresh_from_db()
    with caplog.at_level(logging.WARNING, logger="review.schedulers"):
        scheduler = scheduler_for(person)
        card = memory.card
        preview = scheduler.preview(card_state(card), now=timezone.now())
        services.card_grade(card=card, grade=4, source="human")
    assert scheduler.parameters == FSRS_DEFAULT_PARAMETERS and len(preview) == 4
    assert fsrs_parameters_in_use(person) is None
    assert "Unusable FSRS parameters" in caplog.text


def test_reviews_of_cards_an_agent_graded_first_are_left_out(person, nothing_written):
    """Their histories miss their first grades, so their intervals would be misread: over
    400 human logs, but none from a card's first review on."""
    add_review_history(person, synthetic_reviews(cards=90))
    ReviewLog.objects.filter(namespace=person, state_before__total_reviews=0).update(
        source=ReviewLog.Source.SIMULATED
    )
    assert optimize.optimize_reviews(namespace=person).count() >= optimizer.MIN_REVIEWS
    with nothing_written(), pytest.raises(services.NotEnoughReviews, match="has 0 reviews"):
        services.namespace_optimize(namespace=person)


def test_an_engine_failure_in_the_request_writes_nothing(
    person, history, monkeypatch, nothing_written
):
    def broken(items):
        raise optimizer.OptimizerError("The FSRS engine could not fit these reviews: boom")

    monkeypatch.setattr(optimizer, "fit_parameters", broken)
    with nothing_written(), pytest.raises(services.OptimizeFailed, match="boom") as failure:
        services.namespace_optimize(namespace=person)
    assert failure.value.api_status == 422 and failure.value.field is None


@pytest.mark.parametrize(
    "record",
    [
        None,
        "queued",
        {"status": "done", "requested_at": timezone.now().isoformat()},
        {"status": "queued"},
        {"status": "queued", "requested_at": "yesterday"},
        {"status": "queued", "requested_at": "2025-01-01T00:00:00"},  # no time zone
        {"status": "queued", "requested_at": 5},
    ],
)
def test_only_a_recent_queued_or_running_fit_is_pending(record):
    assert not services.fit_pending(record)
    assert services.fit_pending({"status": "running", "requested_at": timezone.now().isoformat()})
