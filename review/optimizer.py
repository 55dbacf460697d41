"""FSRS parameters fitted to one person's own reviews, and how well they predict them.

The engine is fsrs-rs-python, the Python binding of fsrs-rs (the Rust FSRS that Anki's
optimizer runs): it installs as a plain wheel, without torch. The `fsrs` package's own
Optimizer needs torch and pandas (its `fsrs[optimizer]` extra), which the default install
does not carry. fsrs-rs-python 0.9 wraps fsrs-rs 6.x, so it fits FSRS-6: 21 parameters with
the same defaults as fsrs 6.x, which `fsrs.Scheduler(parameters=...)` takes as they are
(rounded and held inside fsrs's bounds, see `_usable`).

How a fit is measured. The reviews are split by time: the most recent EVALUATION_SHARE
(20 %) of them are held out and the parameters are fitted on the older ones only, so the
figures say how well each vector predicts reviews it has not seen. Both vectors, the
current one (the namespace's fitted parameters, or fsrs's defaults) and the fitted one,
predict the recall probability of every held-out review on a later day than the card's
previous review (same-day learning steps are history, not predictions, as in FSRS's
benchmark), and fsrs-rs scores them:

- log loss: the mean binary cross-entropy of predicted recall against what happened
  (recalled = Hard, Good or Easy); lower is better.
- RMSE (bins): FSRS's benchmark metric. Reviews are grouped by interval length, number of
  earlier reviews and lapses (logarithmic bins); in each bin the mean prediction is
  compared with the share actually recalled; the root of the count-weighted mean squared
  difference. Lower is better; it says how far predictions are from the observed rates.

Pure functions over plain values: the service (review.services.optimize) reads the logs.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib import metadata
from typing import TypeVar

import fsrs_rs_python

from review.schedulers import (
    FSRS_DEFAULT_PARAMETERS,
    FSRS_PARAMETER_BOUNDS,
    fsrs_parameters_problem,
    fsrs_rating,
)

# Below this many reviews a fit is refused. Anki's FSRS code has asked for 1,000 before
# optimizing and 400 before computing an optimal retention; 400 keeps 80 recent reviews to
# measure a fit on, and is well above what fsrs-rs needs to train at all (64 predictions;
# below 8 it silently answers its defaults).
MIN_REVIEWS = 400
# The most recent share of reviews held out to measure the fits on.
EVALUATION_SHARE = 0.2
# A card's reviews past this many are not used: fsrs-rs trains on histories of at most
# 256 reviews, and each review of a card is a prediction over the whole history before it.
MAX_HISTORY = 256
# fsrs's default scheduler relearns a lapsed card in one step (10 minutes); fsrs-rs fits
# the short-term parameters knowing how many steps there are.
RELEARNING_STEPS = 1
# Stored parameters are rounded as Anki shows them: more digits are noise at these sizes.
DECIMALS = 4

T = TypeVar("T")


@dataclass(frozen=True)
class Review:
    """One grade of one card. `new`: the card had never been reviewed before it, so a
    history starts here (a history that does not start with one is incomplete)."""

    card_id: int
    reviewed_at: datetime
    grade: int
    new: bool


@dataclass(frozen=True)
class Metrics:
    """How well a parameter vector predicts the held-out reviews (both: lower is better)."""

    log_loss: float
    rmse_bins: float


@dataclass(frozen=True)
class Fit:
    """A fit and its figures. `improved`: the fitted vector predicts the held-out reviews
    with a lower log loss than the current one."""

    parameters: tuple[float, ...]
    before: Metrics
    after: Metrics
    reviews: int
    train_predictions: int
    eval_predictions: int
    cards: int
    skipped_reviews: int
    cutoff: datetime
    engine: str

    @property
    def improved(self) -> bool:
        return self.after.log_loss < self.before.log_loss


class OptimizerError(Exception):
    """A fit cannot be made; the message says why, for a person to read."""


class NotEnoughReviews(OptimizerError):
    """Too few reviews (or too few on later days) to fit and measure parameters."""

    def __init__(self, message: str, *, count: int, needed: int) -> None:
        super().__init__(message)
        self.count = count
        self.needed = needed


def engine() -> str:
    """The engine that fits, as the fit records name it."""
    return f"fsrs-rs-python {metadata.version('fsrs-rs-python')} (FSRS-6)"


def not_enough_reviews(count: int, needed: int = MIN_REVIEWS) -> NotEnoughReviews:
    """The refusal below the minimum, saying how many there are and how many are needed."""
    return NotEnoughReviews(
        f"This namespace has {count} review{'' if count == 1 else 's'} of yours; fitting "
        f"FSRS to them needs at least {needed}. Keep reviewing and optimize again later.",
        count=count,
        needed=needed,
    )


def card_histories(reviews: Iterable[Review]) -> tuple[list[list[Review]], int]:
    """Each card's reviews in time order, split where the card started anew; and how many
    reviews were left out because their history does not start with the card's first
    review (its earlier grades were not among `reviews`, e.g. an agent's)."""
    by_card: dict[int, list[Review]] = defaultdict(list)
    for review in reviews:
        by_card[review.card_id].append(review)
    histories: list[list[Review]] = []
    skipped = 0
    for card_reviews in by_card.values():
        card_reviews.sort(key=lambda review: review.reviewed_at)
        current: list[Review] | None = None
        for review in card_reviews:
            if review.new:
                current = [review]
                histories.append(current)
            elif current is None:
                skipped += 1
            else:
                current.append(review)
    trimmed = [history[:MAX_HISTORY] for history in histories]
    skipped += sum(len(h) for h in histories) - sum(len(h) for h in trimmed)
    return trimmed, skipped


def evaluation_cutoff(histories: Sequence[Sequence[Review]], share: float) -> datetime:
    """The moment from which reviews are held out: the most recent `share` of them."""
    moments = sorted(review.reviewed_at for history in histories for review in history)
    held_out = max(1, math.ceil(len(moments) * share))
    return moments[len(moments) - held_out]


def fsrs_items(
    histories: Iterable[Sequence[Review]], *, cutoff: datetime
) -> tuple[list[fsrs_rs_python.FSRSItem], list[fsrs_rs_python.FSRSItem]]:
    """fsrs-rs's items (a history and the review it predicts), split at `cutoff` by when
    the predicted review happened: (fit on, measure on).

    An item ends at each review on a later day than the card's previous one. Days are
    whole 24-hour periods since the previous review, as fsrs 6.x counts them when it
    schedules with the fitted parameters.
    """
    train: list[fsrs_rs_python.FSRSItem] = []
    held_out: list[fsrs_rs_python.FSRSItem] = []
    for history in histories:
        steps: list[fsrs_rs_python.FSRSReview] = []
        previous: datetime | None = None
        for review in history:
            days = 0 if previous is None else max(0, (review.reviewed_at - previous).days)
            steps.append(fsrs_rs_python.FSRSReview(fsrs_rating(review.grade), days))
            previous = review.reviewed_at
            if len(steps) > 1 and days > 0:
                item = fsrs_rs_python.FSRSItem(list(steps))
                (held_out if review.reviewed_at >= cutoff else train).append(item)
    return train, held_out


def evaluate(parameters: Sequence[float], items: Sequence[fsrs_rs_python.FSRSItem]) -> Metrics:
    """Log loss and binned RMSE of `parameters`' predictions on `items`."""
    result = _engine(lambda: fsrs_rs_python.FSRS(list(parameters)).evaluate(list(items)))
    return Metrics(log_loss=float(result.log_loss), rmse_bins=float(result.rmse_bins))


def fit_parameters(items: Sequence[fsrs_rs_python.FSRSItem]) -> tuple[float, ...]:
    """FSRS-6 parameters fitted to `items` by fsrs-rs, usable by fsrs 6.x."""
    raw = _engine(
        lambda: fsrs_rs_python.FSRS(list(FSRS_DEFAULT_PARAMETERS)).compute_parameters(
            list(items), enable_short_term=True, num_relearning_steps=RELEARNING_STEPS
        )
    )
    return _usable(raw)


def current_or_default(parameters: Sequence[float] | None) -> tuple[float, ...]:
    """The vector a namespace schedules with: its own if usable, else fsrs's defaults
    (as review.schedulers.FSRSScheduler decides)."""
    if parameters is not None and fsrs_parameters_problem(list(parameters)) is None:
        return tuple(float(value) for value in parameters)
    return FSRS_DEFAULT_PARAMETERS


def fit(
    reviews: Iterable[Review],
    *,
    current_parameters: Sequence[float] | None = None,
    min_reviews: int = MIN_REVIEWS,
    evaluation_share: float = EVALUATION_SHARE,
) -> Fit:
    """Fit FSRS parameters on all but the most recent `evaluation_share` of `reviews` and
    measure them, and the current ones, on that most recent part.

    Raises NotEnoughReviews below `min_reviews` usable reviews, or when no held-out review
    came on a later day than its card's previous one (nothing to measure), or no older one
    (nothing to fit on).
    """
    if not 0 < evaluation_share < 1:
        raise ValueError(f"evaluation_share must be between 0 and 1, got {evaluation_share}")
    histories, skipped = card_histories(reviews)
    count = sum(len(history) for history in histories)
    if count < min_reviews:
        raise not_enough_reviews(count, min_reviews)
    cutoff = evaluation_cutoff(histories, evaluation_share)
    train, held_out = fsrs_items(histories, cutoff=cutoff)
    if not held_out or not train:
        part, purpose = ("most recent", "measure a fit on") if not held_out else ("older", "fit")
        raise NotEnoughReviews(
            f"None of the {part} reviews of this namespace came on a later day than the "
            f"card's previous review, so there is nothing to {purpose}. FSRS learns from "
            "reviews spread over days: keep reviewing and optimize again later.",
            count=count,
            needed=min_reviews,
        )
    current = current_or_default(current_parameters)
    fitted = fit_parameters(train)
    return Fit(
        parameters=fitted,
        before=evaluate(current, held_out),
        after=evaluate(fitted, held_out),
        reviews=count,
        train_predictions=len(train),
        eval_predictions=len(held_out),
        cards=len(histories),
        skipped_reviews=skipped,
        cutoff=cutoff,
        engine=engine(),
    )


def _usable(raw: Sequence[float]) -> tuple[float, ...]:
    """fsrs-rs's vector as fsrs 6.x takes it: rounded, and held inside fsrs's bounds (its
    clipper works in 32-bit floats, so 0.8 may come back as 0.800000011920929)."""
    if len(raw) != len(FSRS_DEFAULT_PARAMETERS) or not all(math.isfinite(v) for v in raw):
        raise OptimizerError(f"The FSRS engine answered an unusable parameter vector: {raw!r}")
    return tuple(
        min(high, max(low, round(float(value), DECIMALS)))
        for value, (low, high) in zip(raw, FSRS_PARAMETER_BOUNDS, strict=True)
    )


def _engine(call: Callable[[], T]) -> T:
    """Call fsrs-rs; its errors (ValueError) and panics become OptimizerError."""
    try:
        return call()
    except (KeyboardInterrupt, SystemExit):
        raise
    # A Rust panic arrives as pyo3's PanicException, which derives from BaseException.
    except BaseException as error:
        raise OptimizerError(f"The FSRS engine could not fit these reviews: {error}") from error
