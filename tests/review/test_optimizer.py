"""review.optimizer: FSRS parameters fitted to a synthetic person whose memory follows known
FSRS parameters (a seeded RNG decides each recall from the true recall probability).

`synthetic_reviews` and `add_review_history` are shared with the service, API, page and
browser tests of optimizing (tests/review/test_optimizer_*.py, tests/e2e/).
"""

from __future__ import annotations

import itertools
import logging
import math
import random
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import fsrs
import fsrs_rs_python
import pytest

from review import optimizer
from review.optimizer import Review
from review.schedulers import (
    FSRS_DEFAULT_PARAMETERS,
    FSRSScheduler,
    fsrs_parameters_problem,
    get_scheduler,
)

START = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
GRADE_FOR_RATING = {1: 1, 2: 3, 3: 4, 4: 5}
# The synthetic person: firmer first memories than FSRS's defaults assume, and a steeper
# forgetting curve (w20).
TRUE_PARAMETERS = (0.5, 2.0, 5.0, 15.0, *FSRS_DEFAULT_PARAMETERS[4:20], 0.3)
# A deliberately wrong starting point: every first memory gone within an hour or so, and
# barely any gain in stability from a successful review.
WRONG_PARAMETERS = (0.05, 0.05, 0.05, 0.05, *FSRS_DEFAULT_PARAMETERS[4:8], 0.3,
                    *FSRS_DEFAULT_PARAMETERS[9:])  # fmt: skip


def synthetic_reviews(
    parameters: Sequence[float] = TRUE_PARAMETERS,
    *,
    cards: int = 70,
    days: int = 200,
    seed: int = 7,
    start: datetime = START,
) -> list[Review]:
    """A person's grades on `cards` cards over `days` days, scheduled by FSRS (fsrs's
    learning steps included, so same-day reviews occur) and recalled with the probability
    that `parameters` give: Again when forgotten, else mostly Good."""
    rng = random.Random(seed)
    scheduler = fsrs.Scheduler(parameters=parameters, desired_retention=0.85, enable_fuzzing=False)
    end = start + timedelta(days=days)
    reviews: list[Review] = []
    for card_id in range(1, cards + 1):
        moment = start + timedelta(days=rng.uniform(0, days * 0.6), hours=rng.uniform(0, 10))
        card = fsrs.Card(card_id=card_id, due=moment)
        new = True
        while moment < end:
            if new:
                rating = rng.choices((1, 2, 3, 4), (0.2, 0.1, 0.6, 0.1))[0]
            elif rng.random() < scheduler.get_card_retrievability(card, current_datetime=moment):
                rating = rng.choices((2, 3, 4), (0.15, 0.75, 0.1))[0]
            else:
                rating = 1
            reviews.append(Review(card_id, moment, GRADE_FOR_RATING[rating], new))
            card, _ = scheduler.review_card(card, fsrs.Rating(rating), review_datetime=moment)
            new = False
            # People come back some time after a card is due, not on the second.
            moment = card.due + timedelta(minutes=rng.uniform(0, 600))
    return reviews


def add_review_history(namespace, reviews: Sequence[Review], *, source: str = "human"):
    """The synthetic reviews as the namespace's review logs, one memory and card per
    synthetic card (the cards themselves keep their initial state). Returns {card id in
    `reviews`: Card}."""
    from memories import services
    from review.models import Card, ReviewLog
    from review.services import card_ensure

    cards = {}
    for card_id in sorted({review.card_id for review in reviews}):
        memory = services.memory_create(
            namespace=namespace, content=f"Synthetic fact number {card_id}.", topic="synthetic"
        )
        cards[card_id] = card_ensure(memory=memory)
    seen: dict[int, int] = {}
    logs = []
    for review in sorted(reviews, key=lambda r: r.reviewed_at):
        before = 0 if review.new else seen.get(review.card_id, 0)
        seen[review.card_id] = before + 1
        logs.append(
            ReviewLog(
                card=cards[review.card_id],
                namespace=namespace,
                grade=review.grade,
                source=source,
                reviewed_at=review.reviewed_at,
                state_before={"total_reviews": before},
                state_after={"total_reviews": before + 1},
                # Graded at the memory's level, as card_grade writes a log.
                classification=cards[review.card_id].memory.classification,
            )
        )
    ReviewLog.objects.bulk_create(logs, batch_size=1000)
    assert Card.objects.filter(namespace=namespace).count() >= len(cards)
    return cards


@pytest.fixture(scope="module")
def history() -> list[Review]:
    return synthetic_reviews()


# --- Refusals ----------------------------------------------------------------------------


def test_it_refuses_below_the_minimum_saying_how_many_there_are_and_how_many_are_needed(
    history,
):
    few = [r for r in history if r.card_id <= 20]
    assert len(few) < optimizer.MIN_REVIEWS
    with pytest.raises(optimizer.NotEnoughReviews) as refusal:
        optimizer.fit(few)
    assert (refusal.value.count, refusal.value.needed) == (len(few), optimizer.MIN_REVIEWS)
    assert str(refusal.value) == (
        f"This namespace has {len(few)} reviews of yours; fitting FSRS to them needs at "
        f"least {optimizer.MIN_REVIEWS}. Keep reviewing and optimize again later."
    )


def test_the_minimum_is_400_reviews():
    # Documented in docs/review.md; the refusal says it to people.
    assert optimizer.MIN_REVIEWS == 400
    assert "1 review of yours" in str(optimizer.not_enough_reviews(1))


def test_reviews_of_cards_whose_history_is_incomplete_do_not_count(history):
    # Without their first grades (an agent's, say) the intervals would be misread.
    headless = [r for r in history if not r.new]
    with pytest.raises(optimizer.NotEnoughReviews) as refusal:
        optimizer.fit(headless)
    assert refusal.value.count == 0


def test_it_refuses_when_no_review_came_on_a_later_day():
    # 500 grades on one morning: learning steps only, nothing to predict a day ahead.
    reviews = [
        Review(card, START + timedelta(minutes=step * 10), 4, step == 0)
        for card in range(100)
        for step in range(5)
    ]
    with pytest.raises(optimizer.NotEnoughReviews, match="nothing to measure a fit on"):
        optimizer.fit(reviews)


# --- The fit -----------------------------------------------------------------------------


def test_a_fit_from_a_wrong_start_lowers_log_loss_and_rmse_on_the_held_out_reviews(history):
    fit = optimizer.fit(history, current_parameters=WRONG_PARAMETERS)

    assert fit.improved
    assert fit.after.log_loss < fit.before.log_loss - 0.1
    assert fit.after.rmse_bins < fit.before.rmse_bins
    assert fit.reviews == len(history) and fit.skipped_reviews == 0
    assert fit.cards == 70
    assert fit.engine.startswith("fsrs-rs-python 0.9.") and "FSRS-6" in fit.engine


def test_the_fit_predicts_about_as_well_as_the_truth(history):
    fit = optimizer.fit(history)
    histories, _ = optimizer.card_histories(history)
    _, held_out = optimizer.fsrs_items(histories, cutoff=fit.cutoff)
    truth = optimizer.evaluate(TRUE_PARAMETERS, held_out)
    wrong = optimizer.evaluate(WRONG_PARAMETERS, held_out)
    assert fit.after.log_loss < truth.log_loss + 0.02
    assert fit.after.log_loss < wrong.log_loss - 0.1


def test_the_fitted_vector_is_one_fsrs_6_schedules_with(history):
    fit = optimizer.fit(history)
    assert len(fit.parameters) == len(FSRS_DEFAULT_PARAMETERS) == 21
    assert fsrs_parameters_problem(list(fit.parameters)) is None
    assert all(round(value, optimizer.DECIMALS) == value for value in fit.parameters)
    scheduler = FSRSScheduler(parameters=fit.parameters)
    assert scheduler.fitted and scheduler.parameters == fit.parameters
    assert fsrs.Scheduler(parameters=fit.parameters).parameters == fit.parameters


def test_the_fit_is_deterministic(history):
    assert optimizer.fit(history).parameters == optimizer.fit(history).parameters


def test_the_most_recent_fifth_is_held_out_and_the_rest_fitted_on(history):
    histories, _ = optimizer.card_histories(history)
    cutoff = optimizer.evaluation_cutoff(histories, optimizer.EVALUATION_SHARE)
    recent = sum(r.reviewed_at >= cutoff for r in history)
    assert recent == math.ceil(len(history) * 0.2)
    train, held_out = optimizer.fsrs_items(histories, cutoff=cutoff)
    # One prediction per review on a later day than its card's previous one.
    later_day = sum(
        (b.reviewed_at - a.reviewed_at).days > 0
        for h in histories
        for a, b in itertools.pairwise(h)
    )
    assert len(train) + len(held_out) == later_day
    assert 0 < len(held_out) <= recent


def test_items_count_whole_days_since_the_previous_review_as_fsrs_does():
    reviews = [
        Review(1, START, 1, True),  # Again
        Review(1, START + timedelta(minutes=10), 4, False),  # a learning step: 0 days
        Review(1, START + timedelta(hours=47), 3, False),  # 1 day (46 h 50 min)
        Review(1, START + timedelta(days=6), 5, False),  # 4 days
    ]
    histories, skipped = optimizer.card_histories(reversed(reviews))
    assert skipped == 0 and histories == [reviews]
    train, held_out = optimizer.fsrs_items(histories, cutoff=START + timedelta(days=5))
    assert [_steps(item) for item in train] == [[(1, 0), (3, 0), (2, 1)]]
    assert [_steps(item) for item in held_out] == [[(1, 0), (3, 0), (2, 1), (4, 4)]]


def _steps(item: fsrs_rs_python.FSRSItem) -> list[tuple[int, int]]:
    """(rating, days) of an item's reviews: the binding shows them only in its repr."""
    found = re.findall(r"rating: (\d+), delta_t: (\d+)", repr(item))
    return [(int(rating), int(days)) for rating, days in found]


def test_a_card_that_starts_anew_starts_a_new_history():
    reviews = [
        Review(1, START, 4, True),
        Review(1, START + timedelta(days=2), 4, False),
        Review(1, START + timedelta(days=3), 4, True),
        Review(1, START + timedelta(days=5), 1, False),
        Review(2, START + timedelta(days=1), 4, False),  # its first grade is missing
    ]
    histories, skipped = optimizer.card_histories(reviews)
    assert histories == [reviews[:2], reviews[2:4]] and skipped == 1


def test_the_current_parameters_are_the_defaults_when_unusable():
    assert optimizer.current_or_default(None) == FSRS_DEFAULT_PARAMETERS
    assert optimizer.current_or_default([1.0] * 5) == FSRS_DEFAULT_PARAMETERS
    assert optimizer.current_or_default(TRUE_PARAMETERS) == TRUE_PARAMETERS


def test_the_engines_32_bit_floats_are_held_inside_fsrss_bounds():
    raw = [0.0010000000474974513, *FSRS_DEFAULT_PARAMETERS[1:19], 0.800000011920929, 0.15]
    usable = optimizer._usable(raw)
    assert usable[0] == 0.001 and usable[19] == 0.8
    assert fsrs_parameters_problem(list(usable)) is None
    with pytest.raises(optimizer.OptimizerError):
        optimizer._usable([math.nan] * 21)


def test_an_engine_panic_is_an_optimizer_error():
    # fsrs-rs panics (a BaseException in Python) on an item with no later-day review; the
    # optimizer never builds one, and would report it if the engine panicked elsewhere.
    review = fsrs_rs_python.FSRSReview
    item = fsrs_rs_python.FSRSItem([review(3, 0), review(1, 0)])
    with pytest.raises(optimizer.OptimizerError, match="could not fit"):
        optimizer.fit_parameters([item] * 20)


# --- The scheduler with fitted parameters ------------------------------------------------


def test_fsrs_with_fitted_parameters_schedules_differently():
    now = START
    default, fitted = FSRSScheduler(), FSRSScheduler(parameters=TRUE_PARAMETERS)
    state = default.initial_state()
    assert not default.fitted and fitted.fitted
    # A first Good: fsrs's default initial stability (w2, 2.31 days) against the person's 5.
    assert default.grade(state, 4, now=now).fsrs["stability"] == pytest.approx(2.3065)
    assert fitted.grade(state, 4, now=now).fsrs["stability"] == pytest.approx(5.0)
    assert get_scheduler("fsrs", fsrs_parameters=TRUE_PARAMETERS).parameters == TRUE_PARAMETERS


@pytest.mark.parametrize(
    "stored",
    [
        [1.0] * 20,
        [math.nan] * 21,
        [math.inf, *FSRS_DEFAULT_PARAMETERS[1:]],
        ["0.2", *FSRS_DEFAULT_PARAMETERS[1:]],
        [True, *FSRS_DEFAULT_PARAMETERS[1:]],
        [500.0, *FSRS_DEFAULT_PARAMETERS[1:]],
        {"w": 1},
        "0.2,1.3",
    ],
)
def test_unusable_parameters_fall_back_to_the_defaults_with_a_warning(stored, caplog):
    with caplog.at_level(logging.WARNING, logger="review.schedulers"):
        scheduler = FSRSScheduler(parameters=stored)
    assert scheduler.parameters == FSRS_DEFAULT_PARAMETERS and not scheduler.fitted
    assert "Unusable FSRS parameters" in caplog.text
    state = scheduler.grade(scheduler.initial_state(), 4, now=START)
    assert state.next_review is not None


@pytest.mark.parametrize("share", [0, 1, -0.2, 1.5])
def test_the_held_out_share_is_a_fraction(history, share):
    with pytest.raises(ValueError, match="evaluation_share"):
        optimizer.fit(history, evaluation_share=share)
