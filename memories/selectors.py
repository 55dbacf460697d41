"""Use-case reads of memories, each composed of MemoryQuerySet methods."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from memories.auth import Scope
from memories.decay import ForgettingOutlook, forgetting_outlook
from memories.decay_fit import threshold_probability
from memories.models import (
    LIVE_STATUSES,
    Classification,
    Memory,
    MemoryEvent,
    Namespace,
    reachable_sql,
)
from memories.plots import Threshold
from memories.score_sql import params_cte, scored_memories_sql
from memories.scores import ScoreHistogram, band_sql, bin_sql, score_histogram
from memories.services.decay_fits import decay_fits_visible, namespace_constants
from memories.services.near_duplicates import near_group
from memories.services.supersede import ended_by
from memories.sweep import SweepConfig, thresholds_from_settings

# The status filter's value for "every status, forgotten ones included".
ANY_STATUS = "any"
# Filters that keep the memories whose field equals the value.
EXACT_FILTERS = ("topic", "tier", "memory_type", "classification", "session_id")


def memory_list(
    *, scope: Scope, filters: Mapping[str, Any], ordering: Sequence[str] = ()
) -> QuerySet[Memory]:
    """The memories of a list (API and dashboard): the scope's, filtered, namespace loaded.

    `filters` may hold namespace (a Namespace of the scope), status (a Memory.Status, or
    ANY_STATUS; absent: every status but forgotten), topic, tier, memory_type,
    classification, session_id, created_after, created_before and q (text the memory
    contains), as_of (what was valid then) and include_superseded (default: memories not
    superseded now); other keys, such as paging parameters, are ignored. Without `ordering` the
    model's own order stands, for callers whose paginator sorts.
    """
    memories = scope.memories().select_related("namespace")
    if "namespace" in filters:
        memories = memories.in_namespace(filters["namespace"])
    status = filters.get("status")
    if status is None:
        memories = memories.exclude(status=Memory.Status.FORGOTTEN)
    elif status != ANY_STATUS:
        memories = memories.filter(status=status)
    for name in EXACT_FILTERS:
        if name in filters:
            memories = memories.filter(**{name: filters[name]})
    if filters.get("include_superseded"):
        pass  # every memory, superseded ones marked by the output
    elif filters.get("as_of"):
        memories = memories.valid_at(filters["as_of"])
    else:
        memories = memories.current(timezone.now())
    if "created_after" in filters:
        memories = memories.filter(created_at__gte=filters["created_after"])
    if "created_before" in filters:
        memories = memories.filter(created_at__lt=filters["created_before"])
    if filters.get("q"):
        memories = memories.containing(filters["q"])
    if ordering:
        memories = memories.order_by(*ordering)
    return memories


# A session's order: position, else created_at, else the order of writing (as
# memories.services.sessions links its turns).
SESSION_ORDER = (F("position").asc(nulls_last=True), "created_at", "id")
SESSION_ORDER_REVERSED = (F("position").desc(nulls_first=True), "-created_at", "-id")


@dataclass(frozen=True)
class SessionTurns:
    """A memory's place in its session: the turns just before and after it, its number."""

    session_id: str
    before: list[Memory]  # in session order
    after: list[Memory]
    number: int  # 1-based
    total: int

    @property
    def first_number(self) -> int:
        """The number of the first turn shown."""
        return self.number - len(self.before)


def session_turns(memory: Memory, *, around: int = 3) -> SessionTurns | None:
    """The memory's neighbours in its session (None without a session): four indexed
    queries whatever the session's length, on the partial index memory_ns_session."""
    if not memory.session_id:
        return None
    session = Memory.objects.filter(namespace_id=memory.namespace_id, session_id=memory.session_id)
    position, created, pk = memory.position, memory.created_at, memory.pk
    same_time_before = Q(created_at__lt=created) | Q(created_at=created, id__lt=pk)
    same_time_after = Q(created_at__gt=created) | Q(created_at=created, id__gt=pk)
    if position is None:  # after every turn with a position
        earlier = Q(position__isnull=False) | (Q(position__isnull=True) & same_time_before)
        later = Q(position__isnull=True) & same_time_after
    else:
        earlier = Q(position__lt=position) | (Q(position=position) & same_time_before)
        later = (
            Q(position__isnull=True)
            | Q(position__gt=position)
            | (Q(position=position) & same_time_after)
        )
    before = list(session.filter(earlier).order_by(*SESSION_ORDER_REVERSED)[:around])[::-1]
    after = list(session.filter(later).order_by(*SESSION_ORDER)[:around])
    return SessionTurns(
        session_id=memory.session_id,
        before=before,
        after=after,
        number=session.filter(earlier).count() + 1,
        total=session.count(),
    )


def superseded_by(memory: Memory, *, ceiling: int) -> int | None:
    """The id of the memory that ended this one's validity: the successor named by its latest
    'superseded' event (or the memory it was merged into, by a 'merged' event), if that
    event set the valid_until it has now (None when it was ended by hand, or changed since)
    and the caller's ceiling admits the event."""
    if memory.valid_until is None:
        return None
    after = (
        MemoryEvent.objects.filter(
            memory_ref=memory.pk,
            kind__in=(MemoryEvent.Kind.SUPERSEDED, MemoryEvent.Kind.MERGED),
            classification__lte=ceiling,
        )
        .values_list("after", flat=True)
        .first()
    )
    return ended_by(memory, after, merges=True)


def successor_gone(memory: Memory, *, ceiling: int) -> tuple[int, str] | None:
    """(id, "forgotten", "archived" or "purged") when the memory that superseded this one
    (superseded_by) is no longer live, else None. A successor forgotten or purged by a
    person or an agent reinstated it already (memories.services.supersession_release); one
    that decayed leaves it superseded, and its page offers to reinstate it."""
    successor = superseded_by(memory, ceiling=ceiling)
    if successor is None:
        return None
    status = Memory.objects.filter(pk=successor).values_list("status", flat=True).first()
    if status is None:
        return successor, "purged"
    if status in LIVE_STATUSES:
        return None
    return successor, Memory.Status(status).label.lower()


def near_duplicates_of(memory: Memory, *, ceiling: int) -> list[Memory]:
    """The near-duplicates a memory's page lists, and merging it would take in: its group
    (memories.services.near_group: live, current, at or below both its level and the
    viewer's `ceiling`), oldest first. One query per hop of near_duplicate links (one when
    it has none)."""
    return near_group(memory, ceiling=ceiling)


def decay_thresholds() -> list[Threshold]:
    """Seed 003's lifecycle thresholds, as the settings set them."""
    return [
        Threshold(settings.FORGET_THRESHOLD, "forget", "forget"),
        Threshold(settings.REVIEW_DANGER_ZONE_MIN, "review", "review"),
        Threshold(settings.REVIEW_DANGER_ZONE_MAX, "review", "review"),
        Threshold(settings.PROMOTE_THRESHOLD, "promote", "promote"),
    ]


def decay_histogram(namespace_ids: list[int], now: datetime) -> ScoreHistogram:
    """Live memories of these namespaces counted by decay score, in one grouped query: per
    log-scale bin and band (memories.scores, which picks the scale from the rows).

    The score is computed in the database by the decay sweep's own SQL (each memory with
    its namespace's decay model), so the formula is written once and no row reaches Python.
    """
    config = SweepConfig.from_settings()
    if not namespace_ids:
        return score_histogram([], config.thresholds)
    p_sql, p_params = params_cte(config, now)
    marks = ", ".join(["%s"] * len(namespace_ids))
    scored = scored_memories_sql(where=f"m.namespace_id IN ({marks}) AND m.status IN (%s, %s)")
    band, band_params = band_sql("score", config.thresholds)
    sql = (
        f"WITH {p_sql}, {scored} SELECT {bin_sql('score')} AS bin, {band} AS band, COUNT(*) "
        "FROM scored GROUP BY 1, 2"
    )
    params = [
        *p_params,
        *namespace_ids,
        Memory.Status.ACTIVE.value,
        Memory.Status.PROMOTED.value,
        *band_params,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = [(None if b is None else int(b), int(k), n) for b, k, n in cursor.fetchall()]
    return score_histogram(rows, config.thresholds)


REINFORCE_MAX = 100


def reinforce_candidates(
    *, scope: Scope, namespace=None, limit: int = 20, now: datetime | None = None
) -> list[tuple[Memory, float, datetime | None]]:
    """What an agent should revisit, in the caller's reach, with each one's decay score and,
    for those decay is about to forget, when: first the memories the sweep will forget
    within FORGET_DIGEST_DAYS (about_to_forget, soonest first), then seed 003's review
    candidates: live, current memories whose decay score is in the danger zone
    (REVIEW_DANGER_ZONE_MIN..MAX), the ones nearest its centre first (decay.review_priority's
    order). The score is the sweep's own SQL."""
    now = now or timezone.now()
    limit = max(1, min(limit, REINFORCE_MAX))
    urgent = about_to_forget(
        scope=scope, now=now, days=settings.FORGET_DIGEST_DAYS, namespace=namespace, limit=limit
    ).memories
    found: list[tuple[Memory, float, datetime | None]] = [
        (memory, score, forget_at) for memory, forget_at, score in urgent
    ]
    if len(found) < limit:
        seen = {memory.pk for memory, _score, _at in found}
        found += [
            (memory, score, None)
            for memory, score in _danger_zone(scope, namespace, limit, now)
            if memory.pk not in seen
        ]
    return found[:limit]


def _within_reach(namespace_ids, ceiling: int, now: datetime) -> tuple[str, list[Any]]:
    """The WHERE fragment (alias m) of memories a caller may be shown as candidates: of
    the namespaces, at or below the ceiling, current and unexpired at `now`."""
    marks = ", ".join(["%s"] * len(namespace_ids))
    reach, params = reachable_sql("m", ceiling=ceiling, now=now, statuses=None)
    return f"m.namespace_id IN ({marks}) AND {reach}", [*namespace_ids, *params]


def _danger_zone(scope: Scope, namespace, limit: int, now: datetime) -> list[tuple[Memory, float]]:
    """Seed 003's review candidates (reinforce_candidates); one query for the ids, one for
    the rows."""
    namespace_ids = [namespace.pk] if namespace is not None else scope.namespace_ids
    if not namespace_ids:
        return []
    config = SweepConfig.from_settings()
    thresholds = config.thresholds
    p_sql, p_params = params_cte(config, now)
    within, within_params = _within_reach(namespace_ids, scope.ceiling, now)
    scored = scored_memories_sql(where=f"{within} AND m.status IN (%s, %s)")
    sql = (
        f"WITH {p_sql}, {scored} SELECT id, score FROM scored WHERE score BETWEEN %s AND %s "
        "ORDER BY ABS(score - %s), id LIMIT %s"
    )
    params = [
        *p_params,
        *within_params,
        Memory.Status.ACTIVE.value,
        Memory.Status.PROMOTED.value,
        thresholds.danger_min,
        thresholds.danger_max,
        thresholds.danger_centre,
        max(1, min(limit, REINFORCE_MAX)),
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        scores = dict(cursor.fetchall())
    rows = scope.memories().select_related("namespace").in_bulk(list(scores))
    return [(rows[pk], scores[pk]) for pk in scores if pk in rows]


@dataclass(frozen=True)
class ForgettingExplanation:
    """What a memory's page says about its forgetting: the outlook (memories.decay), when
    that falls, and the model and parameters that decide it, with where they come from."""

    outlook: ForgettingOutlook
    forget_at: datetime | None
    model: str
    parameters: list[tuple[str, str]]
    # "fitted" under decay_fit auto with an applied fit (fitted_at: when), "namespace" when
    # the namespace sets any decay field, else "defaults".
    source: str
    threshold: float
    fitted_at: datetime | None = None

    @property
    def gain_days(self) -> float | None:
        """Days one use now would add before it is forgotten (None when unknown)."""
        gain = self.outlook.gain_per_use_seconds
        return None if gain is None else gain / 86_400


_MODEL_PARAMETERS = {
    "exponential": ("half_life_days",),
    "power_law": ("half_life_days", "power_alpha"),
    "two_component": ("fast_half_life_days", "slow_half_life_days", "fast_weight"),
}
_PARAMETER_LABELS = {
    "half_life_days": ("half-life", "{:g} days"),
    "power_alpha": ("tail exponent alpha", "{:g}"),
    "fast_half_life_days": ("fast half-life", "{:g} days"),
    "slow_half_life_days": ("slow half-life", "{:g} days"),
    "fast_weight": ("fast share", "{:.0%}"),
    "beta": ("use exponent beta", "{:g}"),
}
# The namespace's own decay settings (each empty means "the service's default").
_NAMESPACE_DECAY_FIELDS = (
    "decay_model",
    "decay_half_life_days",
    "decay_beta",
    "decay_power_alpha",
    "decay_fast_half_life_days",
    "decay_slow_half_life_days",
    "decay_fast_weight",
)


def forgetting_explanation(memory: Memory, now: datetime) -> ForgettingExplanation:
    """When `memory` will be forgotten at its current rate and what decides it."""
    namespace = memory.namespace
    params = namespace.decay_params()
    thresholds = thresholds_from_settings()
    outlook = forgetting_outlook(
        status=memory.status,
        tier=memory.tier,
        use_count=memory.use_count,
        dt_seconds=(now - memory.last_used_at).total_seconds(),
        strength=memory.strength,
        params=params,
        thresholds=thresholds,
    )
    names = (*_MODEL_PARAMETERS[params.model], "beta")
    parameters = [
        (_PARAMETER_LABELS[name][0], _PARAMETER_LABELS[name][1].format(getattr(params, name)))
        for name in names
    ]
    own = any(getattr(namespace, name) not in (None, "") for name in _NAMESPACE_DECAY_FIELDS)
    fit = namespace.applied_fit
    return ForgettingExplanation(
        outlook=outlook,
        forget_at=(
            now + timedelta(seconds=outlook.seconds_left)
            if outlook.seconds_left is not None
            else None
        ),
        model=params.model.replace("_", " "),
        parameters=parameters,
        source="fitted" if fit is not None else "namespace" if own else "defaults",
        threshold=thresholds.forget,
        fitted_at=fit.created_at if fit is not None else None,
    )


ABOUT_TO_FORGET_MAX = 100  # the most memories the digest lists (all are counted)


@dataclass(frozen=True)
class AboutToForget:
    """The memories decay will forget within `days` (the digest): how many, and the first
    ABOUT_TO_FORGET_MAX of them, soonest first, each with when it falls due and its score
    now."""

    count: int
    days: int
    by: datetime
    memories: list[tuple[Memory, datetime, float]]


def about_to_forget(
    *, scope: Scope, now: datetime, days: int, namespace=None, limit: int = ABOUT_TO_FORGET_MAX
) -> AboutToForget:
    """Active short-term memories of the caller's reach whose score, if nothing uses them,
    is under the forget threshold `days` from now: what the sweep will forget by then
    (decay.should_forget, with each namespace's decay model). Live, current, unexpired and
    at or below the caller's ceiling. One statement counts and ranks them in the database
    (their scores at now + days, lowest first); the page's few get their exact moment from
    decay.forgetting_outlook. `limit` 0: the count alone, in one statement."""
    by = now + timedelta(days=days)
    namespace_ids = [namespace.pk] if namespace is not None else list(scope.namespace_ids)
    if not namespace_ids:
        return AboutToForget(0, days, by, [])
    rows = _forgetting_rows(namespace_ids, scope.ceiling, now=now, by=by, limit=limit)
    if not rows or rows[0][0] is None:
        return AboutToForget(int(rows[0][1]) if rows else 0, days, by, [])
    # The applied fit comes along: each memory's decay_params() reads it without a query.
    found = Memory.objects.select_related("namespace__decay_fit_applied").in_bulk(
        [pk for pk, _ in rows]
    )
    listed = []
    for pk, _count in rows:
        memory = found[pk]
        outlook = forgetting_explanation(memory, now)
        listed.append((memory, outlook.forget_at or now, memory.decay_score(now)))
    listed.sort(key=lambda pair: (pair[1], pair[0].pk))
    return AboutToForget(int(rows[0][1]), days, by, listed)


def _forgetting_rows(
    namespace_ids: Sequence[int], ceiling: int, *, now: datetime, by: datetime, limit: int | None
) -> list[tuple[Any, int]]:
    """(id, count of all) of the memories about_to_forget selects, lowest score at `by`
    first, in one statement: at most `limit` (None: all of them); `limit` 0 gives one row,
    (None, count)."""
    config = SweepConfig.from_settings()
    p_sql, p_params = params_cte(config, by)
    within, within_params = _within_reach(namespace_ids, ceiling, now)
    where = f"{within} AND m.status = %s AND m.tier = %s"
    limited = limit is not None and limit > 0
    if limit is not None and limit <= 0:  # the count alone (the home page)
        select = "SELECT NULL, COUNT(*) FROM scored CROSS JOIN p WHERE score < p.forget"
    else:
        select = (
            "SELECT id, COUNT(*) OVER () FROM scored CROSS JOIN p WHERE score < p.forget "
            "ORDER BY score, id" + (" LIMIT %s" if limited else "")
        )
    sql = f"WITH {p_sql}, {scored_memories_sql(where=where)} {select}"
    params = [
        *p_params,
        *within_params,
        Memory.Status.ACTIVE.value,
        Memory.Tier.SHORT_TERM.value,
        *([limit] if limited else []),
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def about_to_forget_ids(*, namespace: Namespace, now: datetime, days: int) -> list[int]:
    """Every memory of the namespace, at every level, that about_to_forget would count: the
    daily memory.about_to_forget webhooks' (each subscription's ceiling then chooses),
    lowest score at now + days first. One statement, however many."""
    by = now + timedelta(days=days)
    rows = _forgetting_rows([namespace.pk], Classification.RESTRICTED, now=now, by=by, limit=None)
    return [pk for pk, _count in rows]


# --- Decay fitted to the namespace's uses (memories.decay_fit) ------------------------------

FITS_SHOWN = 10  # the fits a namespace page lists
FORGET_CHANCE_HORIZON_DAYS = 30.0  # "the chance it is needed in the next 30 days"


@dataclass(frozen=True)
class DecayFitSummary:
    """What a namespace page says of its decay fits: the newest (at most FITS_SHOWN), the
    one applied, and the forget threshold read as a chance of use within
    FORGET_CHANCE_HORIZON_DAYS, by the latest fit and by the constants (whose rate the fit
    estimated too), so a person sees what a score of 0.05 means."""

    fits: list[Any]
    latest: Any
    applied: Any
    threshold: float
    horizon_days: float
    chance: float | None
    chance_constants: float | None

    @property
    def chance_text(self) -> str:
        return _percent(self.chance)

    @property
    def chance_constants_text(self) -> str:
        return _percent(self.chance_constants)

    @property
    def improvement_text(self) -> str:
        """'4.2 % better' (or worse) than the constants, or empty."""
        gain = self.improvement
        if gain is None:
            return ""
        return f"{abs(gain) * 100:.1f} % {'better' if gain >= 0 else 'worse'}"

    @property
    def improvement(self) -> float | None:
        """How much lower the latest fit's validation loss is than the constants', 0-1."""
        fit = self.latest
        if fit is None or not fit.validation_loss or not fit.default_validation_loss:
            return None
        return 1.0 - fit.validation_loss / fit.default_validation_loss


def _percent(chance: float | None) -> str:
    if chance is None:
        return "unknown"
    percent = chance * 100
    return (
        f"{percent:.2g} %"
        if percent < 1
        else f"{percent:.1f} %"
        if percent < 10
        else f"{percent:.0f} %"
    )


def decay_fit_summary(namespace: Namespace, *, ceiling: int) -> DecayFitSummary:
    fits = list(decay_fits_visible(namespace, ceiling=ceiling)[:FITS_SHOWN])
    latest = fits[0] if fits else None
    applied = namespace.applied_fit
    threshold = settings.FORGET_THRESHOLD
    chance = chance_constants = None
    if latest is not None and latest.n_uses_train:
        chance = threshold_probability(
            latest.params(),
            latest.rate,
            threshold=threshold,
            horizon_days=FORGET_CHANCE_HORIZON_DAYS,
        )
        chance_constants = threshold_probability(
            namespace_constants(namespace),
            latest.default_rate,
            threshold=threshold,
            horizon_days=FORGET_CHANCE_HORIZON_DAYS,
        )
    return DecayFitSummary(
        fits=fits,
        latest=latest,
        applied=applied if applied is not None and applied.classification <= ceiling else None,
        threshold=threshold,
        horizon_days=FORGET_CHANCE_HORIZON_DAYS,
        chance=chance,
        chance_constants=chance_constants,
    )
