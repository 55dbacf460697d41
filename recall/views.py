"""The dashboard's search page: recall.services.recall_run with its filters, explained.

The query string holds the whole search (q, namespace, topic, tier, since, until,
classification, include_expired), so a search is a link that can be shared; htmx swaps
only the results as one types. A person looking is not an agent using a memory, so the
page recalls with track=False: no boosts, no use counts (the RecallEvent is still kept).
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET

from config.web import render_page, user_tz
from memories.auth import Scope
from memories.forms import DashboardForm, add_service_errors
from memories.models import Classification, Memory, Namespace
from memories.text import fold
from recall.pipeline import RecallHit
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
}
LIMITS = (10, 20, 50)
TIER_LABELS = dict(Memory.Tier.choices)
_WORD = re.compile(r"\w+")


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


def highlight(text: str, terms: list[str]) -> SafeString:
    """The text, escaped, with the words that match a query term wrapped in <mark>.

    Terms are folded query words (recall.stages.analyse_query); a word matches when its
    folded form starts with a term, or a term starts with it (stems: "database" and
    "databases"), so the marks follow what full-text search matched closely enough.
    """
    if not terms:
        return escape(text)
    parts: list[str] = []
    last = 0
    for match in _WORD.finditer(text):
        word = fold(match.group())
        if any(word.startswith(t) or (len(word) >= 4 and t.startswith(word)) for t in terms):
            parts.append(escape(text[last : match.start()]))
            parts.append(f"<mark>{escape(match.group())}</mark>")
            last = match.end()
    parts.append(escape(text[last:]))
    # Every piece was escaped above, so the joined string is safe.
    return mark_safe("".join(parts))


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


def _hit_rows(result, terms: list[str]) -> list[dict[str, Any]]:
    namespaces = {hit.memory_id: hit.namespace for hit in result.results}
    return [
        {
            "hit": hit,
            "supersede": _supersede_offers(hit, namespaces),
            "content": highlight(hit.content, terms),
            "tier": TIER_LABELS.get(hit.metadata.get("tier"), hit.metadata.get("tier") or ""),
            "stages": [(code, STAGE_NAMES.get(code, code)) for code in hit.stages],
            "stage_scores": [
                (STAGE_NAMES.get(code, code), score) for code, score in hit.stage_scores.items()
            ],
            "boosts": [(BOOST_NAMES.get(name, name), value) for name, value in hit.boosts.items()],
        }
        for hit in result.results
    ]


@require_GET
@login_required
def search(request: HttpRequest) -> HttpResponse:
    """Recall over the person's namespaces, with filters, explanations and stage timings."""
    scope = Scope.of(request)
    namespaces = list(scope.namespaces().order_by("name"))
    form = SearchForm(request.GET or None, namespaces=namespaces)
    result = None
    rows: list[dict[str, Any]] = []
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
                rows = _hit_rows(result, analyse_query(query).terms)
    timings = []
    if result is not None:
        timings = [
            {"code": code, "name": STAGE_NAMES.get(code, code), **timing}
            for code, timing in result.stage_timings.items()
        ]
    context = {
        "form": form,
        "query": query,
        "result": result,
        "rows": rows,
        "timings": timings,
        "has_namespaces": bool(namespaces),
    }
    return render_page(request, "recall/search.html", context, partial="results")
