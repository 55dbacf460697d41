"""FSRS parameters fitted to a namespace's reviews (review.optimizer): in the request for
small histories, in the worker above OPTIMIZE_IN_REQUEST_MAX_REVIEWS; and back to the
defaults.

The fit is recorded on the namespace (`fsrs_fit`: status, figures, engine) and its
parameters stored (`fsrs_parameters`) only when they predict the held-out recent reviews
better than the ones in use (a lower log loss): a fit on a noisy or unlucky history never
makes scheduling worse than it was. The stored vector is the one measured, fitted on the
older 80 % of the reviews: refitting on all of them would put in use a vector whose figures
nobody saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.db.models.fields.json import KT
from django.utils import timezone

from config.queue import enqueue
from memories.models import Namespace
from review import optimizer
from review.models import ReviewLog
from review.schedulers import FSRS_DEFAULT_PARAMETERS
from review.services.errors import ReviewError

# Above this many reviews the fit runs in the worker. A whole fit of 22,500 reviews (read,
# histories built, fitted, both vectors measured) took 0.25 s on SQLite and PostgreSQL on
# the 2-core CI machine, so a request stays well under a second below it.
OPTIMIZE_IN_REQUEST_MAX_REVIEWS = 20_000
# Only the person's own grades by default: simulated grades are the worker's model of
# an agent's memory and implicit ones an agent's recall, neither a person's recall.
DEFAULT_SOURCES: tuple[str, ...] = (ReviewLog.Source.HUMAN,)


class FitStatus:
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    PENDING = frozenset({QUEUED, RUNNING})


# Of a queued record, what a running one keeps.
_REQUEST_KEYS = ("reviews", "min_reviews")


class NotEnoughReviews(ReviewError):
    """Too few of the person's reviews to fit FSRS parameters to."""

    code = "not_enough_reviews"

    def __init__(self, message: str, *, count: int, needed: int) -> None:
        super().__init__(message, field="namespace")
        self.count = count
        self.needed = needed


class OptimizeFailed(ReviewError):
    """The FSRS engine could not fit these reviews."""

    code = "optimize_failed"
    api_status = 422


@dataclass(frozen=True)
class OptimizeOutcome:
    """The namespace's fit record after the call; `queued`: it runs in the worker."""

    fit: dict[str, Any]
    queued: bool


def optimize_reviews(
    *, namespace: Namespace, ceiling: int | None = None, sources: Sequence[str] = DEFAULT_SOURCES
) -> QuerySet[ReviewLog]:
    """The review logs a fit of this namespace learns from: grades from `sources` that were
    not undone, of scheduled reviews (not cram), on cards within `ceiling` (None: all)."""
    logs = ReviewLog.objects.filter(
        namespace=namespace,
        source__in=list(sources),
        undone_at__isnull=True,
        mode=ReviewLog.Mode.NORMAL,
    )
    if ceiling is not None:
        # Grades given while the memory was above the ceiling stay out, as in statistics.
        logs = logs.filter(card__memory__classification__lte=ceiling, classification__lte=ceiling)
    return logs


def namespace_optimize(
    *,
    namespace: Namespace,
    ceiling: int | None = None,
    sources: Sequence[str] = DEFAULT_SOURCES,
    now: datetime | None = None,
    in_request_max: int | None = None,
) -> OptimizeOutcome:
    """Fit FSRS parameters to the namespace's reviews now, or queue the fit in the worker
    when there are more than `in_request_max` (OPTIMIZE_IN_REQUEST_MAX_REVIEWS by default; a
    fit already queued or running is not queued twice). Raises NotEnoughReviews below
    optimizer.MIN_REVIEWS (nothing written) and OptimizeFailed when the engine cannot fit
    them."""
    now = now or timezone.now()
    sources = tuple(sources)
    count = optimize_reviews(namespace=namespace, ceiling=ceiling, sources=sources).count()
    if count < optimizer.MIN_REVIEWS:
        raise _refusal(optimizer.not_enough_reviews(count))
    if count > (OPTIMIZE_IN_REQUEST_MAX_REVIEWS if in_request_max is None else in_request_max):
        return _queue(namespace, count=count, ceiling=ceiling, sources=sources, now=now)
    try:
        result = _fit(namespace, ceiling=ceiling, sources=sources)
    except optimizer.NotEnoughReviews as error:
        raise _refusal(error) from error
    except optimizer.OptimizerError as error:
        raise OptimizeFailed(str(error)) from error
    record = _done(result, namespace, requested_at=now, ceiling=ceiling, sources=sources)
    return OptimizeOutcome(fit=_save(namespace, record, result), queued=False)


def namespace_optimize_run(
    *,
    namespace_id: int,
    ceiling: int | None = None,
    sources: Sequence[str] = DEFAULT_SOURCES,
) -> dict[str, Any]:
    """The worker's fit (review.tasks.fsrs_optimize): running, then done or failed, each
    recorded on the namespace. Running it again refits; a deleted namespace is no work."""
    namespace = Namespace.objects.filter(pk=namespace_id).first()
    if namespace is None:
        return {}
    sources = tuple(sources)
    previous = namespace.fsrs_fit if isinstance(namespace.fsrs_fit, dict) else {}
    requested_at = _moment(previous.get("requested_at")) or timezone.now()
    # What the queued record said about the request; a done record's figures are not this
    # run's and must not show beside its status.
    running = {key: previous[key] for key in _REQUEST_KEYS if key in previous}
    running.update(
        status=FitStatus.RUNNING,
        message="Fitting in the background.",
        requested_at=_iso(requested_at),
        started_at=_iso(timezone.now()),
        engine=optimizer.engine(),
        ceiling=ceiling,
        sources=list(sources),
        applied=bool(namespace.fsrs_parameters),
    )
    _save(namespace, running)
    try:
        result = _fit(namespace, ceiling=ceiling, sources=sources)
    except optimizer.OptimizerError as error:
        failed = {
            **running,
            "status": FitStatus.FAILED,
            "message": str(error),
            "finished_at": _iso(timezone.now()),
        }
        return _save(namespace, failed)
    record = _done(result, namespace, requested_at=requested_at, ceiling=ceiling, sources=sources)
    record["started_at"] = running["started_at"]
    return _save(namespace, record, result)


def namespace_fsrs_reset(*, namespace: Namespace, now: datetime | None = None) -> Namespace:
    """Schedule with fsrs's default parameters again. The last fit's record stays, marked
    as no longer in use; cards keep their memory states and follow the defaults from their
    next grade on."""
    now = now or timezone.now()
    record = namespace.fsrs_fit if isinstance(namespace.fsrs_fit, dict) else None
    if record is not None:
        record = {**record, "applied": False, "reset_at": _iso(now)}
    with transaction.atomic():
        Namespace.objects.filter(pk=namespace.pk).update(fsrs_parameters=None, fsrs_fit=record)
    namespace.fsrs_parameters, namespace.fsrs_fit = None, record
    return namespace


def fit_pending(record: Any, *, now: datetime | None = None) -> bool:
    """A fit is queued or running, and recently enough that the worker is still on it
    (after the worker's retries it is not: a new request queues a new fit)."""
    if not isinstance(record, dict) or record.get("status") not in FitStatus.PENDING:
        return False
    requested_at = _moment(record.get("requested_at"))
    window = timedelta(seconds=settings.Q_RETRY * settings.Q_CLUSTER.get("max_attempts", 1))
    return requested_at is not None and (now or timezone.now()) - requested_at < window


# --- The steps ---------------------------------------------------------------------------


def _fit(namespace: Namespace, *, ceiling: int | None, sources: Sequence[str]) -> optimizer.Fit:
    logs = (
        optimize_reviews(namespace=namespace, ceiling=ceiling, sources=sources)
        .annotate(before_total=KT("state_before__total_reviews"))
        .order_by("card_id", "reviewed_at", "id")
        .values_list("card_id", "reviewed_at", "grade", "before_total")
    )
    reviews = []
    previous_card = None
    for card_id, reviewed_at, grade, before_total in logs.iterator(chunk_size=5000):
        # A card's first grade had no reviews before it. A log without that snapshot (an
        # old import) starts a history only as its card's earliest.
        new = str(before_total) == "0" if before_total is not None else card_id != previous_card
        reviews.append(optimizer.Review(card_id, reviewed_at, grade, new))
        previous_card = card_id
    return optimizer.fit(reviews, current_parameters=namespace.fsrs_parameters)


def _queue(
    namespace: Namespace,
    *,
    count: int,
    ceiling: int | None,
    sources: tuple[str, ...],
    now: datetime,
) -> OptimizeOutcome:
    with transaction.atomic():
        locked = Namespace.objects.select_for_update().get(pk=namespace.pk)
        if fit_pending(locked.fsrs_fit, now=now):
            namespace.fsrs_fit = locked.fsrs_fit
            return OptimizeOutcome(fit=locked.fsrs_fit, queued=True)
        record = {
            "status": FitStatus.QUEUED,
            "message": f"Fitting {count} reviews in the background.",
            "requested_at": _iso(now),
            "engine": optimizer.engine(),
            "reviews": count,
            "min_reviews": optimizer.MIN_REVIEWS,
            "ceiling": ceiling,
            "sources": list(sources),
            # The parameters in use stay so until the fit is done.
            "applied": bool(locked.fsrs_parameters),
        }
        _save(namespace, record)
        enqueue("review.tasks.fsrs_optimize", namespace.pk, ceiling, list(sources))
    return OptimizeOutcome(fit=record, queued=True)


def _done(
    result: optimizer.Fit,
    namespace: Namespace,
    *,
    requested_at: datetime,
    ceiling: int | None,
    sources: Sequence[str],
) -> dict[str, Any]:
    before, after = result.before, result.after
    if result.improved:
        message = (
            f"Fitted to {result.reviews} reviews. The fitted parameters predict your most "
            f"recent reviews better (log loss {before.log_loss:.4f} → {after.log_loss:.4f}) "
            "and were put in use."
        )
    else:
        message = (
            f"Fitted to {result.reviews} reviews, but the fitted parameters predict your most "
            f"recent reviews no better (log loss {before.log_loss:.4f} → "
            f"{after.log_loss:.4f}), so the ones in use were kept."
        )
    return {
        "status": FitStatus.DONE,
        "message": message,
        "requested_at": _iso(requested_at),
        "finished_at": _iso(timezone.now()),
        "engine": result.engine,
        "reviews": result.reviews,
        "skipped_reviews": result.skipped_reviews,
        "cards": result.cards,
        "train_predictions": result.train_predictions,
        "eval_predictions": result.eval_predictions,
        "evaluation_share": optimizer.EVALUATION_SHARE,
        "evaluated_from": _iso(result.cutoff),
        "min_reviews": optimizer.MIN_REVIEWS,
        "ceiling": ceiling,
        "sources": list(sources),
        "before": {"log_loss": before.log_loss, "rmse_bins": before.rmse_bins},
        # Which vector "before" measured: the namespace's earlier fit or fsrs's defaults.
        "before_parameters": "defaults"
        if optimizer.current_or_default(namespace.fsrs_parameters) == FSRS_DEFAULT_PARAMETERS
        else "fitted",
        "after": {"log_loss": after.log_loss, "rmse_bins": after.rmse_bins},
        "parameters": list(result.parameters),
        "applied": result.improved,
    }


def _save(
    namespace: Namespace, record: dict[str, Any], result: optimizer.Fit | None = None
) -> dict[str, Any]:
    """Write the record (and the fitted parameters when they won) to the namespace row
    alone, and onto the instance."""
    changes: dict[str, Any] = {"fsrs_fit": record}
    if result is not None and result.improved:
        changes["fsrs_parameters"] = list(result.parameters)
    Namespace.objects.filter(pk=namespace.pk).update(**changes)
    for name, value in changes.items():
        setattr(namespace, name, value)
    return record


def _refusal(error: optimizer.NotEnoughReviews) -> NotEnoughReviews:
    return NotEnoughReviews(str(error), count=error.count, needed=error.needed)


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def _moment(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None
