"""The dashboard's search page: recall.services.recall_run with its filters, explained.

The query string holds the whole search (q, namespace, topic, tier, since, until,
classification, include_expired), so a search is a link that can be shared; htmx swaps
only the results as one types. A person looking is not an agent using a memory, so the
page recalls with track=False: no boosts, no use counts (the RecallEvent is still kept).
What each result matched, its relevance and why associative results and digests are there
are recall.explain's; the page shows recall's results in recall's order, less the
associative results and digests below the relevance floor.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from config.web import render_page, user_tz
from memories.auth import Scope
from memories.forms import DashboardForm, add_service_errors
from memories.models import Classification, Memory, Namespace
from recall import selectors
from recall.explain import (
    RELEVANCE_FLOOR,
    DigestExplanation,
    explain_digests,
    explain_hits,
    highlight,
    relevance_help,
)
from recall.pipeline import RecallHit, RecallResult
from recall.services import MAX_LIMIT, recall_run
from recall.stages.query import analyse_query

STAGE_NAMES = {
    "Sf": "Full text",
    "Se": "Embeddings",
    "Ss": "Signature",
    "S6": "Digests",
    "S8": "Relations",
}
BOOST_NAMES = {
    "keyword": "keyword match",
    "association": "association",
    "episode": "same episode",
    "temporal": "written on the date asked about",
}
LIMITS = (10, 20, 50)
TIER_LABELS = dict(Memory.Tier.choices)


class SearchForm(DashboardForm):
    q = forms.CharField(required=False, max_length=500, label="Search")
    namespace = forms.ChoiceField(required=False)
    topic = forms.CharField(required=False, max_length=100)
    tier = forms.ChoiceField(required=False, choices=[("", "Any tier"), *Memory.Tier.choices])
    since = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    until = forms.DateField(
        required=False, label="To", widget=forms.DateInput(attrs={"type": "date"})
    )
    classification = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=None,
        label="Up to",
        choices=[("", "Any classification"), *((str(c.value), c.label) for c in Classification)],
    )
    include_expired = forms.BooleanField(required=False, label="Include expired")
    limit = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=LIMITS[0],
        choices=[(str(n), f"{n} results") for n in LIMITS if n <= MAX_LIMIT],
        label="Show",
    )

    def __init__(self, *args: Any, namespaces: list[Namespace], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["namespace"].choices = [("", "All namespaces")] + [
            (ns.slug, ns.name) for ns in namespaces
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            # Said, rather than an empty result that looks like "nothing was written then".
            self.add_error("until", "Must not be before “From”.")
        return data


def _day_bounds(since: date | None, until: date | None) -> tuple[datetime | None, datetime | None]:
    """Local days to instants: from the start of `since` to the end of `until` (inclusive)."""
    tz = user_tz()
    start = datetime.combine(since, time.min, tzinfo=tz) if since else None
    end = None
    if until:
        end = datetime.combine(until + timedelta(days=1), time.min, tzinfo=tz) - timedelta(
            microseconds=1
        )
    return start, end


def _supersede_offers(hit: RecallHit, namespaces: dict[int, str]) -> list[dict[str, int]]:
    """For each result this one contradicts in its own namespace (memories_supersede keeps to
    one): the older memory and the newer that would replace it."""
    offers = []
    for conflict in hit.conflicts:
        other, newer = conflict["memory_id"], conflict["newer_id"]
        if namespaces.get(other) == hit.namespace:
            offers.append({"old": other if newer == hit.memory_id else hit.memory_id, "new": newer})
    return offers


def _hit_rows(
    result: RecallResult, terms: list[str], namespace_ids: set[int]
) -> tuple[list[dict[str, Any]], int]:
    """The results the page shows, each with its explanation (recall.explain), and how many
    associative results it leaves out below the relevance floor."""
    hits = result.results
    namespaces = {hit.memory_id: hit.namespace for hit in hits}
    direct = [hit.memory_id for hit in hits if not hit.associative]
    associative = [hit.memory_id for hit in hits if hit.associative]
    explanations = explain_hits(
        hits,
        terms=terms,
        originals=selectors.original_texts(direct),
        links=selectors.links_between(associative, direct, namespace_ids),
        spread=settings.RECALL_ASSOCIATION_SPREAD,
    )
    rows = [
        {
            "hit": hit,
            "why": why,
            "supersede": _supersede_offers(hit, namespaces),
            "content": highlight(hit.content, terms),
            "tier": TIER_LABELS.get(hit.metadata.get("tier"), hit.metadata.get("tier") or ""),
            "stages": [(code, STAGE_NAMES.get(code, code)) for code in hit.stages],
            "stage_scores": [
                (STAGE_NAMES.get(code, code), score) for code, score in hit.stage_scores.items()
            ],
            "boosts": [(BOOST_NAMES.get(name, name), value) for name, value in hit.boosts.items()],
        }
        for hit, why in zip(hits, explanations, strict=True)
        if why.shown
    ]
    return rows, len(hits) - len(rows)


@require_GET
@login_required
def search(request: HttpRequest) -> HttpResponse:
    """Recall over the person's namespaces, with filters, explanations and stage timings."""
    scope = Scope.of(request)
    namespaces = list(scope.namespaces().order_by("name"))
    form = SearchForm(request.GET or None, namespaces=namespaces)
    result = None
    rows: list[dict[str, Any]] = []
    digests: list[DigestExplanation] = []
    hidden_results = 0
    query = ""
    if form.is_bound and form.is_valid():
        f = form.cleaned_data
        query = f["q"].strip()
        chosen = [ns for ns in namespaces if ns.slug == f["namespace"]] or namespaces
        if query and chosen:
            ceiling = scope.ceiling
            if f["classification"] is not None:
                ceiling = min(ceiling, f["classification"])
            time_start, time_end = _day_bounds(f["since"], f["until"])
            try:
                result = recall_run(
                    namespaces=chosen,
                    ceiling=ceiling,
                    query=query,
                    limit=f["limit"] or LIMITS[0],
                    topic=f["topic"] or None,
                    tier=f["tier"] or None,
                    time_start=time_start,
                    time_end=time_end,
                    include_expired=f["include_expired"],
                    track=False,
                    user=request.user,
                )
            except ValidationError as error:
                add_service_errors(form, error)
            else:
                terms = analyse_query(query).terms
                rows, hidden_results = _hit_rows(result, terms, {ns.pk for ns in chosen})
                digests = explain_digests(result.digests, terms=terms)
    timings = []
    if result is not None:
        timings = [
            {"code": code, "name": STAGE_NAMES.get(code, code), **timing}
            for code, timing in result.stage_timings.items()
        ]
    shown_digests = [d for d in digests if d.shown]
    context = {
        "form": form,
        "query": query,
        "result": result,
        "rows": rows,
        "digests": shown_digests,
        "hidden_results": hidden_results,
        "hidden_digests": len(digests) - len(shown_digests),
        "relevance_floor": RELEVANCE_FLOOR,
        "relevance_help": relevance_help(settings.RECALL_ASSOCIATION_SPREAD),
        "timings": timings,
        "has_namespaces": bool(namespaces),
    }
    return render_page(request, "recall/search.html", context, partial="results")
