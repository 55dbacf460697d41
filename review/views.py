"""Dashboard pages for reviewing: the home page, study sessions and cram.

A study session is one card at a time: each grade is one POST (htmx swaps in the next
card) that calls review.services.study_session_grade; undo calls card_undo; cram calls
cram_answer and cram_finish. Reads go through review.selectors inside the person's scope,
so another user's sessions answer 404. "Today" is settings.TIME_ZONE's date.
"""

from __future__ import annotations

import zoneinfo
from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from config.web import render_page, safe_next, see_other, user_tz
from memories.auth import Scope
from memories.forms import DashboardForm
from memories.models import LIVE_STATUSES, BackgroundRun, Memory, MemoryEvent, Namespace
from memories.plots import (
    decay_histogram_svg,
    forecast_svg,
    heatmap_summary,
    heatmap_svg,
    reviews_per_day_svg,
)
from memories.selectors import about_to_forget, decay_histogram, decay_thresholds
from memories.services import memory_update
from memories.sweep import EVENT_SOURCE
from memories.views import DASHBOARD_SOURCE
from review import optimizer, selectors, services
from review.api import card_payload
from review.forms import CramAnswerForm, DeckLimitForm, GradeForm, StartForm
from review.models import Card, ReviewLog, StudySession, reviewable_q
from review.selectors.browser import (
    CARD_SORTS,
    CARD_STATES,
    LEECH,
    NO_TOPIC_DECK,
    browser_cards,
    browser_deck,
    browser_deck_param,
    browser_decks,
    browser_page_source,
)
from review.selectors.cards import fsrs_parameters_in_use
from review.services.sessions import LEARNING_HORIZON
from review.sm2 import Button

BUTTONS = (
    (Button.AGAIN, "again", "1", "Again"),
    (Button.HARD, "hard", "2", "Hard"),
    (Button.GOOD, "good", "3", "Good"),
    (Button.EASY, "easy", "4", "Easy"),
)
RECENT_RUNS = 6
SWEEP_WINDOW_DAYS = 7
# Counts of a run worth showing, in this order; other numeric counts follow.
RUN_COUNT_ORDER = ("promoted", "core", "forgotten", "cold", "archived", "merged", "purged")
RUN_COUNT_HIDDEN = {"duration_seconds", "batches", "examined", "runs_pruned"}
# Session counts and next cards include cards whose memory was forgotten or archived
# mid-session: the page shows such a card with a Restore button rather than skipping it
# (the API, which cannot grade them, skips them). Cards above the ceiling are always hidden.
LIVE_ONLY = False


def format_interval(days: float) -> str:
    """A button's next interval, as Anki labels it: 10 min, 5 h, 6 d, 2.1 mo, 1.3 y."""
    if days < 1 / 24:
        return f"{max(1, round(days * 1440))} min"
    if days < 1:
        return f"{round(days * 24)} h"
    if days < 31:
        return f"{round(days)} d"
    if days < 365:
        return f"{days / 30:.1f} mo"
    return f"{days / 365:.1f} y"


def deck_overview(scope: Scope, tz: zoneinfo.ZoneInfo, now: datetime) -> list[dict[str, Any]]:
    """Per namespace, its decks with cards due today and new cards still allowed today."""
    overview = []
    for namespace in scope.namespaces().order_by("name"):
        decks = selectors.deck_statistics(
            namespace=namespace, tz=tz, now=now, ceiling=scope.ceiling
        )
        overview.append(
            {
                "namespace": namespace,
                "decks": decks,
                "due": sum(d.due_today for d in decks),
                "new": sum(d.new_available_today for d in decks),
                "total": sum(d.total for d in decks),
            }
        )
    return overview


def _active_sessions(request: HttpRequest, mode: str) -> list[StudySession]:
    scope = Scope.of(request)
    return list(
        selectors.study_sessions_resumable(
            namespace_ids=scope.namespace_ids,
            user=request.user,
            mode=mode,
            ceiling=scope.ceiling,
            live_only=LIVE_ONLY,
        ).select_related("namespace")[:10]
    )


# --- Home --------------------------------------------------------------------------------


def _run_counts(run: BackgroundRun) -> list[tuple[str, Any]]:
    counts = run.counts or {}
    ordered = [name for name in RUN_COUNT_ORDER if counts.get(name)]
    ordered += [
        name
        for name, value in counts.items()
        if name not in RUN_COUNT_ORDER
        and name not in RUN_COUNT_HIDDEN
        and isinstance(value, int | float)
        and not isinstance(value, bool)
        and value
    ]
    return [(name.replace("_", " "), counts[name]) for name in ordered]


def _background(request: HttpRequest, now: datetime) -> dict[str, Any]:
    """The last runs that touched the person's namespaces, and what the sweep did to them."""
    scope = Scope.of(request)
    ids = scope.namespace_ids
    runs = list(
        BackgroundRun.objects.filter(Q(namespace__isnull=True) | Q(namespace_id__in=ids))
        .select_related("namespace")
        .order_by("-started_at", "-id")[:RECENT_RUNS]
    )
    # A run over every namespace counts other people's memories too: staff only.
    rows = [
        {
            "run": run,
            "counts": _run_counts(run)
            if run.namespace_id is not None or request.user.is_staff
            else [],
        }
        for run in runs
    ]
    since = now - timedelta(days=SWEEP_WINDOW_DAYS)
    swept = MemoryEvent.objects.filter(
        namespace_id__in=ids, source=EVENT_SOURCE, created_at__gte=since
    ).filter(Q(memory__isnull=True) | Q(memory__classification__lte=scope.ceiling))
    by_kind = dict(swept.values("kind").annotate(n=Count("id")).order_by().values_list("kind", "n"))
    changes = [
        (label, by_kind.get(kind, 0), status)
        for kind, label, status in (
            (MemoryEvent.Kind.PROMOTED, "promoted", "promoted"),
            (MemoryEvent.Kind.FORGOTTEN, "forgotten", "forgotten"),
            (MemoryEvent.Kind.COLD, "moved to cold storage", ""),
            (MemoryEvent.Kind.ARCHIVED, "archived", "archived"),
        )
    ]
    latest = list(swept.select_related("memory").order_by("-created_at", "-id")[:6])
    return {"runs": rows, "changes": changes, "latest": latest, "days": SWEEP_WINDOW_DAYS}


def _stats_context(
    scope: Scope, namespace: Namespace | None, tz: zoneinfo.ZoneInfo, now: datetime
) -> dict[str, Any]:
    if namespace is None:
        return {"selected": None}
    stats = selectors.review_statistics(namespace=namespace, tz=tz, now=now, ceiling=scope.ceiling)
    histogram = decay_histogram([namespace.pk], now)
    return {
        "selected": namespace,
        "stats": stats,
        "reviews_today": stats.reviews_today,
        "reviews_plot": reviews_per_day_svg(stats.reviews_per_day, times=stats.time_per_day),
        "forecast_plot": forecast_svg(stats.forecast),
        "heatmap_plot": heatmap_svg(stats.reviews_per_day_year),
        "heatmap_summary": heatmap_summary(stats.reviews_per_day_year),
        "histogram_plot": decay_histogram_svg(histogram, thresholds=decay_thresholds()),
        "histogram": histogram,
        "memories_scored": histogram.total,
    }


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Due cards per namespace and deck, statistics and plots, the last background runs."""
    scope = Scope.of(request)
    tz, now = user_tz(), timezone.now()
    overview = deck_overview(scope, tz, now)
    wanted = request.GET.get("namespace")
    selected = next((row["namespace"] for row in overview if row["namespace"].slug == wanted), None)
    if selected is None and overview:
        busiest = max(overview, key=lambda row: (row["due"] + row["new"], -overview.index(row)))
        selected = busiest["namespace"]
    context = {
        "overview": overview,
        "active": _active_sessions(request, StudySession.Mode.STUDY),
        "background": _background(request, now),
        "today": timezone.localtime(now, tz).date(),
        # The about-to-forget digest's count (its page lists them): one counting statement.
        "forgetting": about_to_forget(
            scope=scope, now=now, days=settings.FORGET_DIGEST_DAYS, limit=0
        ),
        **_stats_context(scope, selected, tz, now),
    }
    return render_page(request, "review/home.html", context, partial="stats")


# --- Study sessions ----------------------------------------------------------------------


def _session(request: HttpRequest, pk: int, mode: str) -> StudySession:
    scope = Scope.of(request)
    return get_object_or_404(
        selectors.study_sessions_visible(ceiling=scope.ceiling)
        .filter(namespace_id__in=scope.namespace_ids, user=request.user, mode=mode)
        .select_related("namespace"),
        pk=pk,
    )


def _start(request: HttpRequest) -> tuple[Namespace, str | None] | None:
    form = StartForm(request.POST)
    if not form.is_valid():
        return None
    namespace = get_object_or_404(
        Scope.of(request).namespaces(), slug=form.cleaned_data["namespace"]
    )
    deck = form.cleaned_data["deck"] if "deck" in request.POST else None
    return namespace, deck


@require_GET
@login_required
def review_index(request: HttpRequest) -> HttpResponse:
    """Pick what to study: sessions to resume and every deck with its due and new cards."""
    scope = Scope.of(request)
    context = {
        "overview": deck_overview(scope, user_tz(), timezone.now()),
        "active": _active_sessions(request, StudySession.Mode.STUDY),
        # The leeches page's own list, counted (same filters: live, not superseded).
        "leech_count": browser_cards(
            scope=scope, now=timezone.now(), learning_horizon=LEARNING_HORIZON, state=LEECH
        ).count(),
    }
    return render_page(request, "review/index.html", context)


@require_POST
@login_required
def review_start(request: HttpRequest) -> HttpResponse:
    """Snapshot today's queue (all decks or one) into a new study session, or pick up the
    open one of that scope started today (services.study_session_begin)."""
    picked = _start(request)
    if picked is None:
        messages.error(request, "Choose a namespace to study.")
        return see_other(reverse("review-index"))
    namespace, deck = picked
    now = timezone.now()
    session, resumed = services.study_session_begin(
        namespace=namespace,
        tz=user_tz(),
        user=request.user,
        deck=deck,
        now=now,
        ceiling=Scope.of(request).ceiling,
    )
    if resumed:
        messages.info(request, "Picked up where you left off: this session was started today.")
    return see_other(reverse("review-session", args=[session.pk]))


def _card_context(
    card: Card, namespace: Namespace, now: datetime, *, practice: bool = False
) -> dict[str, Any]:
    """A card and its buttons. `practice`: a repeat in a session whose grade does not
    reschedule the card (seed 004), so its buttons show no interval."""
    payload = card_payload(card, namespace, now=now)
    front = selectors.card_front(card.memory, namespace)
    return {
        "card": card,
        "memory": card.memory,
        "payload": payload,
        "front": front,
        "front_label": front.label,
        "practice": practice,
        # When the card was shown (epoch ms): the grade's answer time is measured from it.
        "shown_at": int(now.timestamp() * 1000),
        "live": card.memory.status in LIVE_STATUSES,
        "buttons": [
            {
                "grade": int(button),
                "name": name,
                "key": key,
                "label": label,
                "interval": (
                    ("again" if int(button) < services.SESSION_PASS_QUALITY else "done")
                    if practice
                    else format_interval(payload["preview"][name])
                ),
            }
            for button, name, key, label in BUTTONS
        ],
    }


def _study_context(
    request: HttpRequest, session: StudySession, *, error: str = ""
) -> dict[str, Any]:
    now = timezone.now()
    ceiling = Scope.of(request).ceiling
    progress = selectors.study_session_progress(
        session=session, ceiling=ceiling, live_only=LIVE_ONLY
    )
    item = progress.next_item
    context: dict[str, Any] = {
        "session": session,
        "progress": progress,
        "item": item,
        "error": error,
        "position": min(progress.done + 1, progress.total),
        "percent": round(100 * progress.done / progress.total) if progress.total else 100,
        "can_undo": ReviewLog.objects.filter(
            session=session, user=request.user, undone_at__isnull=True
        ).exists(),
    }
    if item is not None:
        practice = item.first_grade is not None and item.due_at is None
        context.update(_card_context(item.card, session.namespace, now, practice=practice))
    elif progress.waiting_until is not None:
        wait = progress.waiting_until - now
        context["wait_seconds"] = max(1, int(wait.total_seconds()) + 1)
        context["wait_label"] = format_interval(wait.total_seconds() / 86400)
    else:
        context["time"] = selectors.session_answer_time(session=session, ceiling=ceiling)
        grades = selectors.study_session_first_grades(
            session=session, ceiling=ceiling, live_only=LIVE_ONLY
        )
        context["grades"] = [(label, grades.get(int(button), 0)) for button, _, _, label in BUTTONS]
        stats = selectors.review_statistics(
            namespace=session.namespace, tz=user_tz(), now=now, ceiling=ceiling
        )
        context["stats"] = stats
        context["reviews_today"] = stats.reviews_today
    return context


def _study_response(
    request: HttpRequest, session: StudySession, *, error: str = ""
) -> HttpResponse:
    """The card partial for htmx; otherwise back to the session page (303)."""
    if getattr(request, "htmx", None):
        return render_page(
            request,
            "review/session.html",
            _study_context(request, session, error=error),
            partial="card",
        )
    if error:
        messages.error(request, error)
    return see_other(reverse("review-session", args=[session.pk]))


@require_GET
@login_required
def review_session(request: HttpRequest, pk: int) -> HttpResponse:
    session = _session(request, pk, StudySession.Mode.STUDY)
    return render_page(
        request, "review/session.html", _study_context(request, session), partial="card"
    )


@require_POST
@login_required
def review_grade(request: HttpRequest, pk: int) -> HttpResponse:
    """Grade the shown card: its first grade here reschedules it, below Good it comes back."""
    session = _session(request, pk, StudySession.Mode.STUDY)
    form = GradeForm(request.POST)
    if not form.is_valid():
        return _study_response(request, session, error="Choose Again, Hard, Good or Easy.")
    card = get_object_or_404(
        Card.objects.filter(namespace_id=session.namespace_id).select_related(
            "memory", "namespace"
        ),
        pk=form.cleaned_data["card"],
    )
    # The rule the session's next card follows (a page open since the card was suspended,
    # buried or superseded elsewhere must not grade it): the card has left the session.
    studyable = reviewable_q(
        now=timezone.now(), ceiling=Scope.of(request).ceiling, live_only=LIVE_ONLY
    )
    if not Card.objects.filter(studyable, pk=card.pk).exists():
        return _study_response(
            request,
            session,
            error=f"Card #{card.pk} is suspended, buried or superseded: it left the session.",
        )
    error = ""
    shown_at = form.cleaned_data["shown_at"]
    duration_ms = None
    if shown_at is not None:
        # Measured on the server from the moment the page showed the card.
        duration_ms = max(0, int(timezone.now().timestamp() * 1000) - shown_at)
    try:
        services.study_session_grade(
            session=session,
            card=card,
            grade=form.cleaned_data["grade"],
            user=request.user,
            expected_version=form.cleaned_data["version"],
            duration_ms=duration_ms,
        )
    except services.ReviewError as exc:
        error = exc.message
    session.refresh_from_db()
    return _study_response(request, session, error=error)


def _session_card(session: StudySession, raw: str | None) -> Card | None:
    """The session's card named by the form's `card`, or None (never another session's)."""
    if not (raw or "").isdigit():
        return None
    return (
        Card.objects.filter(pk=int(raw), session_items__session=session)
        .select_related("memory", "namespace")
        .first()
    )


@require_POST
@login_required
def review_cue(request: HttpRequest, pk: int) -> HttpResponse:
    """Write or change the shown card's cue (its question), then show the card again."""
    session = _session(request, pk, StudySession.Mode.STUDY)
    card = _session_card(session, request.POST.get("card"))
    if card is None or card.memory.classification > Scope.of(request).ceiling:
        return _study_response(request, session, error="That card is not in this session.")
    error = ""
    try:
        memory_update(
            memory=card.memory,
            changes={"cue": request.POST.get("cue", "").strip()},
            actor=request.user,
            source=DASHBOARD_SOURCE,
        )
    except ValidationError as exc:
        error = " ".join(" ".join(m) for m in exc.message_dict.values())
    return _study_response(request, session, error=error)


@require_POST
@login_required
def review_set_aside(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    """Bury the shown card until tomorrow or suspend it; either way it leaves the session."""
    session = _session(request, pk, StudySession.Mode.STUDY)
    card = _session_card(session, request.POST.get("card"))
    if card is None or card.memory.classification > Scope.of(request).ceiling:
        return _study_response(request, session, error="That card is not in this session.")
    _, tomorrow = selectors.local_day_bounds(user_tz(), timezone.now())
    error = ""
    try:
        services.study_session_set_aside(
            session=session, card=card, suspend=action == "suspend", until=tomorrow
        )
    except services.ReviewError as exc:
        error = exc.message
    else:
        if action == "suspend":
            messages.success(request, "Card suspended: it stays out of review until unsuspended.")
        else:
            messages.success(request, "Card buried: it comes back tomorrow.")
    session.refresh_from_db()
    return _study_response(request, session, error=error)


@require_POST
@login_required
def review_undo(request: HttpRequest, pk: int) -> HttpResponse:
    """Undo this session's last grade that set a schedule; its card comes back first."""
    session = _session(request, pk, StudySession.Mode.STUDY)
    log = (
        ReviewLog.objects.filter(session=session, user=request.user, undone_at__isnull=True)
        .select_related("card")
        .order_by("-id")
        .first()
    )
    error = ""
    if log is None:
        error = "There is no grade to undo in this session."
    else:
        try:
            services.card_undo(card=log.card, user=request.user)
        except services.ReviewError as exc:
            error = exc.message
    session.refresh_from_db()
    return _study_response(request, session, error=error)


@require_POST
@login_required
def review_finish(request: HttpRequest, pk: int) -> HttpResponse:
    session = _session(request, pk, StudySession.Mode.STUDY)
    services.study_session_finish(session=session)
    return _study_response(request, session)


# --- Cram --------------------------------------------------------------------------------


@require_GET
@login_required
def cram_index(request: HttpRequest) -> HttpResponse:
    """Pick a deck to cram: every card of it in random order, nothing rescheduled."""
    context = {
        "overview": deck_overview(Scope.of(request), user_tz(), timezone.now()),
        "active": _active_sessions(request, StudySession.Mode.CRAM),
    }
    return render_page(request, "review/cram_index.html", context)


@require_POST
@login_required
def cram_start(request: HttpRequest) -> HttpResponse:
    picked = _start(request)
    if picked is None:
        messages.error(request, "Choose a deck to cram.")
        return see_other(reverse("cram-index"))
    namespace, deck = picked
    try:
        session = services.cram_start(
            namespace=namespace, user=request.user, deck=deck, ceiling=Scope.of(request).ceiling
        )
    except services.ReviewError as exc:
        messages.error(request, exc.message)
        return see_other(reverse("cram-index"))
    return see_other(reverse("cram-session", args=[session.pk]))


def _cram_context(
    request: HttpRequest, session: StudySession, *, error: str = ""
) -> dict[str, Any]:
    ceiling = Scope.of(request).ceiling
    progress = selectors.study_session_progress(
        session=session, ceiling=ceiling, live_only=LIVE_ONLY
    )
    item = progress.next_item
    context: dict[str, Any] = {
        "session": session,
        "progress": progress,
        "item": item,
        "error": error,
        "position": min(progress.done + 1, progress.total),
        "percent": round(100 * progress.done / progress.total) if progress.total else 100,
    }
    if item is not None:
        context.update(_card_context(item.card, session.namespace, timezone.now()))
    else:
        context["score"] = selectors.cram_score(
            session=session, ceiling=ceiling, live_only=LIVE_ONLY
        )
    return context


def _cram_response(request: HttpRequest, session: StudySession, *, error: str = "") -> HttpResponse:
    if getattr(request, "htmx", None):
        return render_page(
            request,
            "review/cram_session.html",
            _cram_context(request, session, error=error),
            partial="card",
        )
    if error:
        messages.error(request, error)
    return see_other(reverse("cram-session", args=[session.pk]))


@require_GET
@login_required
def cram_session(request: HttpRequest, pk: int) -> HttpResponse:
    session = _session(request, pk, StudySession.Mode.CRAM)
    return render_page(
        request, "review/cram_session.html", _cram_context(request, session), partial="card"
    )


@require_POST
@login_required
def cram_answer(request: HttpRequest, pk: int) -> HttpResponse:
    """Record correct or incorrect; after the last card the session ends with its score."""
    session = _session(request, pk, StudySession.Mode.CRAM)
    form = CramAnswerForm(request.POST)
    if not form.is_valid():
        return _cram_response(request, session, error="Answer correct or incorrect.")
    error = ""
    try:
        services.cram_answer(
            session=session, card=form.cleaned_data["card"], correct=form.cleaned_data["correct"]
        )
    except services.ReviewError as exc:
        error = exc.message
    ceiling = Scope.of(request).ceiling
    progress = selectors.study_session_progress(
        session=session, ceiling=ceiling, live_only=LIVE_ONLY
    )
    if session.is_active and progress.remaining == 0:
        services.cram_finish(session=session, ceiling=ceiling)
    return _cram_response(request, session, error=error)


@require_POST
@login_required
def cram_finish(request: HttpRequest, pk: int) -> HttpResponse:
    session = _session(request, pk, StudySession.Mode.CRAM)
    services.cram_finish(session=session, ceiling=Scope.of(request).ceiling)
    return _cram_response(request, session)


# --- FSRS parameters fitted to the person (review.services.optimize) ---------------------


def _optimize_namespace(request: HttpRequest, slug: str) -> Namespace:
    return get_object_or_404(Scope.of(request).namespaces(), slug=slug)


def _fit_view(fit: Any) -> dict[str, Any] | None:
    """The namespace's fit record for the page: its moments as datetimes, and how much the
    fit lowered (or raised) each figure."""
    if not isinstance(fit, dict):
        return None
    view = dict(fit)
    for key in ("requested_at", "started_at", "finished_at", "evaluated_from", "reset_at"):
        view[key] = _parse_moment(fit.get(key))
    before, after = fit.get("before"), fit.get("after")
    if isinstance(before, dict) and isinstance(after, dict):
        view["rows"] = [
            ("Log loss", before.get("log_loss"), after.get("log_loss")),
            ("RMSE (bins)", before.get("rmse_bins"), after.get("rmse_bins")),
        ]
    return view


def _parse_moment(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _optimize_page(
    request: HttpRequest, namespace: Namespace, *, refusal: str = "", ran: bool = False
) -> HttpResponse:
    scope = Scope.of(request)
    parameters = fsrs_parameters_in_use(namespace)
    in_use = parameters or optimizer.FSRS_DEFAULT_PARAMETERS
    reviews = services.optimize_reviews(namespace=namespace, ceiling=scope.ceiling).count()
    context = {
        "namespace": namespace,
        "fit": _fit_view(namespace.fsrs_fit),
        "pending": services.fit_pending(namespace.fsrs_fit),
        "fitted": parameters is not None,
        "parameters": [
            (index, value, default)
            for index, (value, default) in enumerate(
                zip(in_use, optimizer.FSRS_DEFAULT_PARAMETERS, strict=True)
            )
        ],
        "reviews": reviews,
        "min_reviews": optimizer.MIN_REVIEWS,
        "evaluation_percent": round(optimizer.EVALUATION_SHARE * 100),
        "training_percent": 100 - round(optimizer.EVALUATION_SHARE * 100),
        "in_request_max": services.OPTIMIZE_IN_REQUEST_MAX_REVIEWS,
        "refusal": refusal,
        "ran": ran,
    }
    return render_page(request, "review/optimize.html", context, partial="fit")


@require_GET
@login_required
def optimize_page(request: HttpRequest, slug: str) -> HttpResponse:
    """The namespace's FSRS parameters, its last fit's figures, Optimize and Reset; while a
    fit runs in the worker the panel refreshes itself (htmx), or by a link without JS."""
    namespace = _optimize_namespace(request, slug)
    return _optimize_page(request, namespace, ran="ran" in request.GET)


@require_POST
@login_required
def optimize_run(request: HttpRequest, slug: str) -> HttpResponse:
    """Fit now (or queue the fit); a refusal is shown on the page, nothing written."""
    namespace = _optimize_namespace(request, slug)
    try:
        services.namespace_optimize(namespace=namespace, ceiling=Scope.of(request).ceiling)
    except services.ReviewError as exc:
        return _optimize_page(request, namespace, refusal=exc.message)
    return see_other(reverse("review-optimize", args=[namespace.slug]) + "?ran=1")


@require_POST
@login_required
def optimize_reset(request: HttpRequest, slug: str) -> HttpResponse:
    namespace = _optimize_namespace(request, slug)
    services.namespace_fsrs_reset(namespace=namespace)
    messages.success(request, f"{namespace.name} schedules with FSRS's default parameters again.")
    return see_other(reverse("review-optimize", args=[namespace.slug]))


# --- Card browser ------------------------------------------------------------------------

BROWSER_PAGE_SIZE = 25


class CardBrowserForm(DashboardForm):
    """The card browser's filters and sort, read from the query string; a bad value in one
    field leaves the others working, as on the memory list."""

    namespace = forms.ChoiceField(required=False)
    deck = forms.ChoiceField(required=False)
    state = forms.ChoiceField(required=False, choices=[("", "Any state"), *CARD_STATES])
    sort = forms.ChoiceField(required=False, choices=CARD_SORTS, label="Sort by")

    def __init__(
        self, *args: Any, namespaces: list[Namespace], decks: list[str], **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.fields["namespace"].choices = [
            ("", "All namespaces"),
            *((ns.slug, ns.name) for ns in namespaces),
        ]
        # "" is every deck here (the select's first choice), so the "(no topic)" deck has a
        # value of its own (NO_TOPIC_DECK), as the deck lists' links name it.
        self.fields["deck"].choices = [
            ("", "All decks"),
            *((browser_deck_param(d), d or NO_TOPIC_DECK) for d in decks),
        ]

    def filters(self) -> dict[str, Any]:
        """The valid filters; `deck` is a topic, "" the "(no topic)" deck."""
        self.is_valid()
        found = {name: value for name, value in self.cleaned_data.items() if value}
        if "deck" in found:
            found["deck"] = browser_deck(found["deck"])
        return found


def _card_interval(card: Card) -> str:
    """The interval its last grade gave it (a learning step in minutes), else its days."""
    if card.next_review is not None and card.last_reviewed_at is not None:
        days = (card.next_review - card.last_reviewed_at) / timedelta(days=1)
        return format_interval(max(0.0, days))
    return f"{card.interval_days} d" if card.interval_days else ""


@require_GET
@login_required
def card_browser(request: HttpRequest) -> HttpResponse:
    """Every card the person could review, with its state, due date, interval, ease,
    lapses, reviews and decay score; filters and sort are GET parameters (htmx swaps the
    table, a submit does without JavaScript); 25 a page, a constant number of queries."""
    scope = Scope.of(request)
    now = timezone.now()
    namespaces = list(scope.namespaces().order_by("name"))
    visible = browser_cards(scope=scope, now=now, learning_horizon=LEARNING_HORIZON)
    decks = browser_decks(visible)
    form = CardBrowserForm(request.GET or None, namespaces=namespaces, decks=decks)
    f = form.filters() if request.GET else {}
    cards = browser_cards(
        scope=scope,
        now=now,
        learning_horizon=LEARNING_HORIZON,
        namespace=next((ns for ns in namespaces if ns.slug == f.get("namespace")), None),
        deck=f.get("deck"),
        state=f.get("state"),
    )
    sort = f.get("sort", "due")
    source = browser_page_source(cards, sort=sort, now=now)
    page = Paginator(source, BROWSER_PAGE_SIZE).get_page(request.GET.get("page"))
    params: dict[int, Any] = {}
    rows = []
    for card in page:
        memory = card.memory
        if memory.namespace_id not in params:
            params[memory.namespace_id] = memory.namespace.decay_params()
        rows.append(
            {
                "card": card,
                "memory": memory,
                "score": memory.decay_score(now, params[memory.namespace_id]),
                "interval": _card_interval(card),
            }
        )
    context = {"form": form, "page": page, "rows": rows, "sort": sort, "now": now}
    return render_page(request, "review/card_browser.html", context, partial="cards")


# --- One card's actions (memory page, card browser, leeches) ------------------------------

# What each action says when done; "unleech" is a leech's "back to review": the person
# rewrote it, so its tag goes and its lapses start over.
CARD_ACTIONS = {
    "suspend": "Card suspended: it stays out of review until unsuspended.",
    "unsuspend": "Card unsuspended: it is back in review.",
    "bury": "Card buried: it comes back tomorrow.",
    "unbury": "Card unburied: it is back in today's review.",
    "unleech": "Back in review: the leech tag is gone and its lapses start over.",
}


@require_POST
@login_required
def card_action(request: HttpRequest, pk: int) -> HttpResponse:
    """Suspend, unsuspend, bury (until the person's tomorrow), unbury or unleech one card,
    then go back where the person was (`next`, else the memory page). Another user's card,
    or one above the ceiling, answers 404 like a missing one."""
    scope = Scope.of(request)
    card = get_object_or_404(Card.objects.filter(memory__in=scope.memories()), pk=pk)
    action = request.POST.get("action", "")
    memories = Memory.objects.filter(pk=card.memory_id)
    if action == "suspend":
        services.cards_suspend(memories=memories)
    elif action == "unsuspend":
        services.cards_unsuspend(memories=memories)
    elif action == "unleech":
        services.cards_unsuspend(memories=memories, clear_leech=True)
    elif action == "bury":
        _, tomorrow = selectors.local_day_bounds(user_tz(), timezone.now())
        services.cards_bury(memories=memories, until=tomorrow)
    elif action == "unbury":
        services.cards_unbury(memories=memories)
    if action in CARD_ACTIONS:
        messages.success(request, CARD_ACTIONS[action])
    else:
        messages.error(request, f"action: choose one of {', '.join(CARD_ACTIONS)}.")
    return see_other(safe_next(request, reverse("memory-detail", args=[card.memory_id])))


LEECHES_PAGE_SIZE = 25


@require_GET
@login_required
def leeches(request: HttpRequest) -> HttpResponse:
    """Cards that lapsed the namespace's leech threshold times, most lapses first: rewrite
    one (its memory's edit page) and send it back to review, or forget it."""
    cards = browser_cards(
        scope=Scope.of(request),
        now=timezone.now(),
        learning_horizon=LEARNING_HORIZON,
        state=LEECH,
    ).order_by("-lapses", "id")
    page = Paginator(cards, LEECHES_PAGE_SIZE).get_page(request.GET.get("page"))
    return render_page(request, "review/leeches.html", {"page": page})


# --- Deck options --------------------------------------------------------------------------


def _deck_options_page(
    request: HttpRequest, namespace: Namespace, *, posted: DeckLimitForm | None = None
) -> HttpResponse:
    """The page, each deck with its form; a refused `posted` form in its deck's row with
    its error on the field, the typed value kept and the focus there (or above the table
    when its deck is none of the rows)."""
    scope = Scope.of(request)
    limits = selectors.new_card_limits(namespace)
    decks = selectors.deck_statistics(namespace=namespace, tz=user_tz(), ceiling=scope.ceiling)
    posted_deck = posted.data.get("deck", "") if posted is not None else None
    rows = []
    for i, d in enumerate(decks, 1):
        own = limits.decks.get(d.deck)
        if posted is not None and posted_deck == d.deck:
            form, posted = posted, None
            form.auto_id = f"limit-{i}-%s"
        else:
            form = DeckLimitForm(
                initial={"deck": d.deck, "new_cards_per_day": own},
                default=limits.default,
                auto_id=f"limit-{i}-%s",
            )
        rows.append({"stats": d, "own": own, "limit": limits.of(d.deck), "form": form})
    context = {
        "namespace": namespace,
        "rows": rows,
        "default": limits.default,
        # A refusal about a deck the page does not list (a stale page, a hand-made POST).
        "stray": posted,
    }
    return render_page(request, "review/deck_options.html", context, partial="decks")


@require_http_methods(["GET", "POST"])
@login_required
def deck_options(request: HttpRequest, slug: str) -> HttpResponse:
    """A namespace's decks, each with its own new cards per day or the namespace's; a POST
    sets one deck's (empty: inherit) through review.services.deck_options_set. A refused
    one shows the page again (200; its section under htmx) with the error on the deck's
    field, the typed value kept and the focus there, as the namespace form does."""
    namespace = get_object_or_404(Scope.of(request).namespaces(), slug=slug)
    if request.method != "POST":
        return _deck_options_page(request, namespace)
    form = DeckLimitForm(request.POST, default=namespace.new_cards_per_day)
    if form.is_valid():
        deck, value = form.cleaned_data["deck"], form.cleaned_data["new_cards_per_day"]
        try:
            services.deck_options_set(namespace=namespace, deck=deck, new_cards_per_day=value)
        except services.ReviewError as exc:
            form.add_review_error(exc)
        else:
            # Every message says which deck it is about: the page lists them all.
            name = deck or "(no topic)"
            messages.success(
                request,
                f"{name}: {_new_cards(value)} a day."
                if value is not None
                else f"{name}: the namespace's {_new_cards(namespace.new_cards_per_day)} a day.",
            )
            return see_other(reverse("deck-options", args=[namespace.slug]))
    return _deck_options_page(request, namespace, posted=form)


def _new_cards(count: int) -> str:
    return f"{count} new card{pluralize(count)}"
