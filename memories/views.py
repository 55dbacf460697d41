"""Dashboard pages for memories, namespaces and tokens.

Function views. Every read goes through the person's Scope (all of their namespaces, at
every classification), so another user's ids answer 404; every write calls one service of
memories.services. With an HX-Request a view answers with the named partial of its page
({% partialdef %}) instead of the whole page.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_POST

from config.web import render_page, safe_next, see_other
from memories import selectors, services
from memories.auth import Scope
from memories.decay import decay_curve
from memories.forms import (
    SORTS,
    BulkActionForm,
    ForgetForm,
    MemoryAddForm,
    MemoryEditForm,
    MemoryFilterForm,
    NamespaceCreateForm,
    NamespaceSettingsForm,
    SupersededByForm,
    SupersedeForm,
    TokenForm,
    WebhookForm,
    add_service_errors,
)
from memories.models import (
    LIVE_STATUSES,
    ApiToken,
    Memory,
    MemoryEvent,
    Namespace,
    WebhookDelivery,
    WebhookSubscription,
)
from memories.plots import decay_curve_svg
from memories.selectors import (
    decay_thresholds,
    near_duplicates_of,
    session_turns,
    superseded_by,
)
from memories.services import webhooks as webhook_services

PAGE_SIZE = 25
HISTORY_LIMIT = 50
DASHBOARD_SOURCE = "dashboard"


def _event_changes(event: MemoryEvent) -> list[tuple[str, Any, Any]]:
    """(field, before, after) for each value an event recorded after it."""
    if event.kind == MemoryEvent.Kind.CREATED:
        return []  # the whole memory; its current state is on the page
    before = event.before if isinstance(event.before, dict) else {}
    after = event.after if isinstance(event.after, dict) else {}
    return [(key, before.get(key), value) for key, value in after.items()]


def _memory(request: HttpRequest, pk: int) -> Memory:
    return get_object_or_404(Scope.of(request).memories().select_related("namespace"), pk=pk)


# --- Memories ----------------------------------------------------------------------------


@require_GET
@login_required
def memory_list(request: HttpRequest) -> HttpResponse:
    """Memories of every namespace, filtered, sorted and paginated."""
    scope = Scope.of(request)
    namespaces = list(scope.namespaces().order_by("name"))
    form = MemoryFilterForm(request.GET or None, namespaces=namespaces)
    f = form.filters() if request.GET else {}
    if "namespace" in f:
        # The form accepts only the slugs of these namespaces.
        f["namespace"] = next(ns for ns in namespaces if ns.slug == f["namespace"])
    sort = f.get("sort", "new")
    memories = selectors.memory_list(scope=scope, filters=f, ordering=SORTS[sort])
    page = Paginator(memories, PAGE_SIZE).get_page(request.GET.get("page"))
    now = timezone.now()
    params = {ns.pk: ns.decay_params() for ns in namespaces}
    rows = [
        {
            "memory": memory,
            "score": memory.decay_score(now, params[memory.namespace_id]),
        }
        for memory in page
    ]
    context = {
        "form": form,
        "page": page,
        "rows": rows,
        "sort": sort,
        "now": now,
        "bulk_form": BulkActionForm(ceiling=scope.ceiling),
        # What an empty list should say: no namespace yet, nothing yet, or the filters.
        "has_namespaces": bool(namespaces),
        "filtered": any(value for name, value in request.GET.items() if name != "sort"),
    }
    return render_page(request, "memories/memory_list.html", context, partial="results")


def _add_page(
    request: HttpRequest, form: MemoryAddForm, *, existing: Memory | None = None
) -> HttpResponse:
    form.focus_first_error(default="content")
    has_namespaces = bool(form.fields["namespace"].choices)
    context = {"form": form, "existing": existing, "has_namespaces": has_namespaces}
    return render_page(request, "memories/memory_add.html", context)


def _add_form(request: HttpRequest, data=None, **kwargs: Any) -> MemoryAddForm:
    scope = Scope.of(request)
    namespaces = list(scope.namespaces().order_by("name"))
    return MemoryAddForm(data, namespaces=namespaces, ceiling=scope.ceiling, **kwargs)


@require_GET
@login_required
def memory_add(request: HttpRequest) -> HttpResponse:
    """The Add memory page; `?namespace=<slug>` (the list's) picks the namespace."""
    initial = {"namespace": request.GET.get("namespace", "")}
    return _add_page(request, _add_form(request, initial=initial))


@require_POST
@login_required
def memory_create(request: HttpRequest) -> HttpResponse:
    """Store the memory through memory_create, as the API does (its input rules, the
    person's ceiling for duplicates). A text a live memory of the namespace already holds
    is not stored twice: the page says so and links to that memory."""
    scope = Scope.of(request)
    form = _add_form(request, request.POST)
    if form.is_valid():
        fields = dict(form.memory_fields)
        namespace = scope.namespaces().get(slug=fields.pop("namespace"))  # a choice of them
        try:
            memory = services.memory_create(
                namespace=namespace,
                actor=request.user,
                source=DASHBOARD_SOURCE,
                prevalidated=True,  # MemoryAddForm ran the API's input rules
                dedupe_ceiling=scope.ceiling,
                **fields,
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            if memory.deduplicated:
                fresh = _add_form(request, initial={"namespace": namespace.slug})
                return _add_page(request, fresh, existing=memory)
            messages.success(request, f"Memory #{memory.pk} added to {namespace.name}.")
            return see_other(reverse("memory-detail", args=[memory.pk]))
    return _add_page(request, form)


BULK_EXAMPLES = 10


@require_POST
@login_required
def memory_bulk(request: HttpRequest) -> HttpResponse:
    """An action on the memories selected on the list, in two steps: the first names the
    count and asks ("Forget 3 memories?"), the second (`confirmed`) runs it through
    memories_bulk_apply and returns to the list (`next`) with what changed. Ids the person
    cannot see (another user's, above the ceiling, gone) are left out exactly as missing
    ones: never acted on, counted or shown. With htmx the question is a panel of the list;
    without, a page of its own."""
    scope = Scope.of(request)
    back = safe_next(request, reverse("memory-list"))
    htmx = getattr(request, "htmx", None)
    # The panel htmx puts under the list's own bulk form needs ids of its own: the same
    # ids twice left its fields without labels (a label names the first of them).
    form = BulkActionForm(
        request.POST, ceiling=scope.ceiling, **({"auto_id": "confirm_%s"} if htmx else {})
    )
    action, values, count, selected = None, {}, 0, Memory.objects.none()
    form.is_valid()
    if form.cleaned_data.get("selected"):
        # The selection is kept (and shown) whatever else needs fixing.
        selected = scope.memories().filter(pk__in=form.cleaned_data["selected"])
        count = selected.count()
        if not count:
            form.add_error("ids", "Select at least one memory.")
    if form.is_valid():
        try:
            action, values = services.memories_bulk_check(
                action=form.cleaned_data["action"], params=form.params(), ceiling=scope.ceiling
            )
        except ValidationError as error:
            add_service_errors(form, error)
    if form.is_valid() and form.cleaned_data["confirmed"]:
        try:
            action, values, changed = services.memories_bulk_apply(
                action=form.cleaned_data["action"],
                memories=selected,
                params=form.params(),
                actor=request.user,
                source=DASHBOARD_SOURCE,
                ceiling=scope.ceiling,
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            text = services.bulk_action_text(action, values, count=changed, selected=count)
            messages.success(request, text)
            return see_other(back)
    question = services.bulk_action_text(action, values, count=count) if form.is_valid() else ""
    form.focus_first_error()
    context = {
        "form": form,
        "question": question,
        "values": values,
        "ids": list(selected.values_list("pk", flat=True)) if count else [],
        "examples": list(
            selected.select_related("namespace").order_by("-created_at", "-id")[:BULK_EXAMPLES]
        )
        if count
        else [],
        "count": count,
        "next": back,
    }
    # A refusal is a 400 page naming the field; htmx swaps in 2xx answers only, so its
    # panel with the same errors comes back as a 200.
    status = 200 if form.is_valid() or htmx else 400
    return render_page(
        request, "memories/memory_bulk.html", context, partial="confirm", status=status
    )


@require_GET
@login_required
def memory_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A memory: content, metadata, schedule, history, recalls, links and its decay curve."""
    return _detail_page(request, _memory(request, pk))


def _detail_page(
    request: HttpRequest,
    memory: Memory,
    *,
    forget_form: ForgetForm | None = None,
    superseded_by_form: SupersededByForm | None = None,
) -> HttpResponse:
    """The memory's page; a refused forget or supersede shows it again with its form's
    error on the field, the typed value kept and the focus there (a message at the top left
    the keyboard on the page itself and the value lost)."""
    scope = Scope.of(request)
    ceiling = scope.ceiling
    visible = scope.memories().values("pk")
    now = timezone.now()
    params = memory.namespace.decay_params()
    points = decay_curve(
        use_count=memory.use_count,
        last_used_at=memory.last_used_at,
        strength=memory.strength,
        now=now,
        params=params,
        days=30,
    )
    events = [
        {"event": event, "changes": _event_changes(event)}
        for event in MemoryEvent.objects.filter(memory_ref=memory.pk).select_related("actor")[
            :HISTORY_LIMIT
        ]
    ]
    context = {
        "memory": memory,
        "score": memory.decay_score(now, params),
        "curve": decay_curve_svg(points, thresholds=decay_thresholds()),
        "events": events,
        # Links as the API lists them: both ends visible, the link within the ceiling.
        "links_out": list(
            memory.links_out.filter(target__in=visible, classification__lte=ceiling).select_related(
                "target"
            )
        ),
        "links_in": list(
            memory.links_in.filter(source__in=visible, classification__lte=ceiling).select_related(
                "source"
            )
        ),
        "relations": list(
            memory.relations.filter(namespace_id=memory.namespace_id)
            .within_ceiling(ceiling)
            .select_related("subject", "object")
        ),
        "session": session_turns(memory),
        "superseded_by": _visible_successor(memory, scope),
        "successor_gone": memory.is_superseded
        and selectors.successor_gone(memory, ceiling=ceiling),
        "near_duplicates": near_duplicates_of(memory, ceiling=ceiling),
        # Only a live memory with no end of validity is offered its group (the service
        # refuses a forgotten or superseded one).
        "can_merge": memory.valid_until is None and memory.status in LIVE_STATUSES,
        "superseded_by_form": superseded_by_form or SupersededByForm(),
        "forget_form": forget_form or ForgetForm(),
        "forgetting": selectors.forgetting_explanation(memory, now),
        "now": now,
    }
    return render_page(request, "memories/memory_detail.html", context)


def _visible_successor(memory: Memory, scope: Scope) -> int | None:
    """The id of the memory that superseded this one when the viewer may see it, else None
    (the page then says "superseded" with no link)."""
    if not memory.is_superseded:
        return None
    successor = superseded_by(memory, ceiling=scope.ceiling)
    if successor is None or not scope.memories().filter(pk=successor).exists():
        return None
    return successor


LET_GO_REASON = "let go: about to be forgotten"


@require_GET
@login_required
def memory_forgetting(request: HttpRequest) -> HttpResponse:
    """The about-to-forget digest: what decay will forget within FORGET_DIGEST_DAYS unless
    it is used, soonest first, each with Keep (a use), Review now (its card due now), Let
    go (forget now, with a reason) and its page. Keep and Review now for all of them are
    the bulk actions keep and review_now, confirmed by the button itself; Let go for all
    goes through the bulk action's confirmation. Each returns here with a message."""
    scope = Scope.of(request)
    namespace = None
    if request.GET.get("namespace"):
        namespace = get_object_or_404(scope.namespaces(), slug=request.GET["namespace"])
    now = timezone.now()
    digest = selectors.about_to_forget(
        scope=scope, now=now, days=settings.FORGET_DIGEST_DAYS, namespace=namespace
    )
    context = {"digest": digest, "namespace": namespace, "let_go_reason": LET_GO_REASON, "now": now}
    return render_page(request, "memories/forgetting.html", context)


@require_GET
@login_required
def memory_edit(request: HttpRequest, pk: int) -> HttpResponse:
    memory = _memory(request, pk)
    form = MemoryEditForm(memory=memory)
    next_url = safe_next(request, reverse("memory-detail", args=[memory.pk]))
    return render_page(
        request, "memories/memory_edit.html", {"memory": memory, "form": form, "next": next_url}
    )


@require_POST
@login_required
def memory_update(request: HttpRequest, pk: int) -> HttpResponse:
    memory = _memory(request, pk)
    form = MemoryEditForm(request.POST, memory=memory)
    next_url = safe_next(request, reverse("memory-detail", args=[memory.pk]))
    if form.is_valid():
        try:
            services.memory_update(
                memory=memory, changes=form.changes(), actor=request.user, source=DASHBOARD_SOURCE
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, "Memory saved.")
            return see_other(next_url)
    return render_page(
        request,
        "memories/memory_edit.html",
        {"memory": memory, "form": form, "next": next_url},
    )


@require_POST
@login_required
def memory_forget(request: HttpRequest, pk: int) -> HttpResponse:
    memory = _memory(request, pk)
    form = ForgetForm(request.POST)
    form.is_valid()
    page = reverse("memory-detail", args=[memory.pk])
    try:
        services.memory_forget(
            memory=memory,
            reason=form.cleaned_data.get("reason", ""),
            actor=request.user,
            source=DASHBOARD_SOURCE,
        )
    except ValidationError as error:
        if safe_next(request, page) == page:
            add_service_errors(form, _as_field(error, "reason"))
            return _detail_page(request, memory, forget_form=form)
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, "Memory forgotten. It can be restored until it is purged.")
    return see_other(safe_next(request, page))


def _as_field(error: ValidationError, field: str) -> ValidationError:
    """A service's refusal without a field, put on the one field the form has."""
    return error if hasattr(error, "error_dict") else ValidationError({field: error.messages})


@require_POST
@login_required
def memory_restore(request: HttpRequest, pk: int) -> HttpResponse:
    memory = _memory(request, pk)
    restored = services.memory_restore(memory=memory, actor=request.user, source=DASHBOARD_SOURCE)
    messages.success(request, f"Memory restored ({restored.get_status_display().lower()}).")
    return see_other(safe_next(request, reverse("memory-detail", args=[memory.pk])))


@require_POST
@login_required
def memory_reinstate(request: HttpRequest, pk: int) -> HttpResponse:
    """A superseded memory is true again: its valid_until cleared, as the API's
    PATCH {"valid_until": null} does (memory_update, an 'updated' event)."""
    memory = _memory(request, pk)
    services.memory_update(
        memory=memory, changes={"valid_until": None}, actor=request.user, source=DASHBOARD_SOURCE
    )
    messages.success(request, "Memory reinstated: it is back in recall, lists and review.")
    return see_other(safe_next(request, reverse("memory-detail", args=[memory.pk])))


@require_POST
@login_required
def memory_boost(request: HttpRequest, pk: int) -> HttpResponse:
    """Count a use and strengthen the memory (x1.1, capped), as an agent's touch would."""
    memory = _memory(request, pk)
    now = timezone.now()
    params = memory.namespace.decay_params()
    before = (memory.use_count, memory.strength, memory.decay_score(now, params))
    was_cold = memory.storage == Memory.Storage.COLD
    back = safe_next(request, reverse("memory-detail", args=[memory.pk]))
    try:
        touched = services.memory_touch(
            memory=memory, boost_strength=True, actor=request.user, source=DASHBOARD_SOURCE
        )
    except services.MemoryNotLive as refusal:
        messages.error(request, str(refusal))
        return see_other(back)
    touched.namespace = memory.namespace
    after = touched.decay_score(timezone.now(), params)
    # Say what changed and why: people saw a score double without a word (issue 17).
    warmed = " It is back in hot storage, where recall finds it." if was_cold else ""
    messages.success(
        request,
        f"Boosted: one more use ({before[0]} → {touched.use_count}), strength "
        f"{before[1]:.2f} → {touched.strength:.2f} and used just now, so the decay score "
        f"went {before[2]:.2f} → {after:.2f} (uses count as (n+1)^{params.beta:g}, "
        f"times strength, times the time-decay since the last use).{warmed}",
    )
    return see_other(back)


def _supersede(request: HttpRequest, *, new: Memory, old: Memory, back: str) -> HttpResponse:
    """`new` replaces `old` (memories_supersede); back to `next`, or `back`, with a message.
    A refusal (itself, a cycle, another namespace, valid only from later) writes nothing and
    says why."""
    try:
        ended = services.memories_supersede(
            new=new, old=[old], actor=request.user, source=DASHBOARD_SOURCE
        )
    except ValidationError as error:
        messages.error(request, f"Memory #{old.pk} was not superseded: {' '.join(error.messages)}")
    else:
        _superseded_message(request, ended, new=new, old=old)
    return see_other(safe_next(request, back))


def _superseded_message(request: HttpRequest, ended, *, new: Memory, old: Memory) -> None:
    if ended:
        messages.success(request, f"Memory #{old.pk} superseded by memory #{new.pk}.")
    else:
        messages.warning(
            request,
            f"Memory #{old.pk} had already stopped being valid; it is now linked as "
            f"replaced by memory #{new.pk}.",
        )


@require_POST
@login_required
def memory_supersede(request: HttpRequest, pk: int) -> HttpResponse:
    """This memory, the newer, replaces the memory `old` (recall's conflict warning offers it)."""
    new = _memory(request, pk)
    back = reverse("memory-detail", args=[new.pk])
    form = SupersedeForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Name the memory it replaces by its number.")
        return see_other(safe_next(request, back))
    old = Scope.of(request).memories().filter(pk=form.cleaned_data["old"]).first()
    if old is None:
        messages.error(request, f"There is no memory #{form.cleaned_data['old']} of yours.")
        return see_other(safe_next(request, back))
    return _supersede(request, new=new, old=old, back=back)


@require_POST
@login_required
def memory_superseded_by(request: HttpRequest, pk: int) -> HttpResponse:
    """This memory, the older, is replaced by the memory `new` (typed on its page)."""
    old = _memory(request, pk)
    back = reverse("memory-detail", args=[old.pk])
    form = SupersededByForm(request.POST)
    if not form.is_valid():
        return _detail_page(request, old, superseded_by_form=form)
    new = Scope.of(request).memories().filter(pk=form.cleaned_data["new"]).first()
    if new is None:
        # A mistyped number: said on the field, as the other refusals are, not a 404; another
        # user's number gets the same words.
        form.add_error("new", f"There is no memory #{form.cleaned_data['new']} of yours.")
        return _detail_page(request, old, superseded_by_form=form)
    try:
        ended = services.memories_supersede(
            new=new, old=[old], actor=request.user, source=DASHBOARD_SOURCE
        )
    except ValidationError as error:
        form.add_error("new", error.messages)
        return _detail_page(request, old, superseded_by_form=form)
    _superseded_message(request, ended, new=new, old=old)
    return see_other(safe_next(request, back))


@require_POST
@login_required
def memory_merge(request: HttpRequest, pk: int) -> HttpResponse:
    """Merge the memory's near-duplicates the person may see into it
    (near_duplicates_merge, source dashboard); back to `next` or its page, with a message.
    A refusal (the memory is forgotten or superseded) writes nothing and says why."""
    memory = _memory(request, pk)
    try:
        merged = services.near_duplicates_merge(
            keep=memory,
            ceiling=Scope.of(request).ceiling,
            actor=request.user,
            source=DASHBOARD_SOURCE,
        )
    except ValidationError as error:
        messages.error(request, f"Nothing was merged: {' '.join(error.messages)}")
    else:
        if merged:
            count = len(merged)
            messages.success(
                request,
                f"Merged {count} {'memory' if count == 1 else 'memories'} "
                f"into memory #{memory.pk}.",
            )
        else:
            messages.info(request, "Nothing to merge.")
    return see_other(safe_next(request, reverse("memory-detail", args=[memory.pk])))


# --- Namespaces --------------------------------------------------------------------------


def _namespace_rows(scope: Scope) -> list[dict[str, Any]]:
    namespaces = list(scope.namespaces().order_by("name"))
    by_status: dict[int, dict[str, int]] = {}
    rows = (
        Memory.objects.filter(namespace_id__in=scope.namespace_ids)
        .values("namespace_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        by_status.setdefault(row["namespace_id"], {})[row["status"]] = row["n"]
    return [
        {
            "namespace": ns,
            "live": sum(
                by_status.get(ns.pk, {}).get(s, 0)
                for s in (Memory.Status.ACTIVE, Memory.Status.PROMOTED)
            ),
            "forgotten": by_status.get(ns.pk, {}).get(Memory.Status.FORGOTTEN, 0),
            "archived": by_status.get(ns.pk, {}).get(Memory.Status.ARCHIVED, 0),
        }
        for ns in namespaces
    ]


def _namespace_page(request: HttpRequest, form: NamespaceCreateForm) -> HttpResponse:
    rows = _namespace_rows(Scope.of(request))
    context = {"rows": rows, "namespaces": [row["namespace"] for row in rows], "form": form}
    return render_page(request, "memories/namespace_list.html", context)


@require_GET
@login_required
def namespace_list(request: HttpRequest) -> HttpResponse:
    return _namespace_page(request, NamespaceCreateForm())


@require_POST
@login_required
def namespace_create(request: HttpRequest) -> HttpResponse:
    form = NamespaceCreateForm(request.POST)
    if form.is_valid():
        try:
            namespace = services.namespace_create(owner=request.user, **form.values())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, f"Namespace “{namespace.name}” created.")
            return see_other(reverse("namespace-detail", args=[namespace.slug]))
    elif "name" not in form.errors and "slug" not in form.errors:
        # Other fields refused: the taken slug is said in the same answer.
        clash = services.namespace_slug_taken(
            owner=request.user,
            name=form.cleaned_data.get("name", ""),
            slug=form.cleaned_data.get("slug"),
        )
        if clash:
            form.add_error(*clash)
    return _namespace_page(request, form)


def _namespace(request: HttpRequest, slug: str) -> Namespace:
    return get_object_or_404(Scope.of(request).namespaces(), slug=slug)


def _namespace_detail_page(
    request: HttpRequest,
    namespace: Namespace,
    form: NamespaceSettingsForm,
    *,
    webhook_form: WebhookForm | None = None,
    created_webhook: WebhookSubscription | None = None,
) -> HttpResponse:
    counts = dict(
        Memory.objects.filter(namespace=namespace)
        .values("status")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("status", "n")
    )
    context = {
        "namespace": namespace,
        "form": form,
        "counts": [(label, counts.get(value, 0)) for value, label in Memory.Status.choices],
        "weights": namespace.ranking_weights(),
        "decay": namespace.decay_params(),
        "decay_fit": selectors.decay_fit_summary(namespace, ceiling=Scope.of(request).ceiling),
        "webhooks": WebhookSubscription.objects.filter(namespace=namespace).order_by("id"),
        "webhook_form": webhook_form or WebhookForm(),
        "created_webhook": created_webhook,
    }
    # The webhook forms post with htmx and swap in the section (a reload of the page then
    # asks for it again, without posting or showing the secret).
    response = render_page(request, "memories/namespace_detail.html", context, partial="webhooks")
    if created_webhook:
        # The secret is in this response only: no cache may keep a copy.
        add_never_cache_headers(response)
    return response


@require_GET
@login_required
def namespace_detail(request: HttpRequest, slug: str) -> HttpResponse:
    namespace = _namespace(request, slug)
    return _namespace_detail_page(request, namespace, NamespaceSettingsForm(namespace=namespace))


@require_POST
@login_required
def namespace_update(request: HttpRequest, slug: str) -> HttpResponse:
    namespace = _namespace(request, slug)
    form = NamespaceSettingsForm(request.POST, namespace=namespace)
    if form.is_valid():
        try:
            services.namespace_update(namespace=namespace, changes=form.changes())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            messages.success(request, "Settings saved.")
            return see_other(reverse("namespace-detail", args=[namespace.slug]))
    return _namespace_detail_page(request, namespace, form)


@require_POST
@login_required
def namespace_decay_fit(request: HttpRequest, slug: str) -> HttpResponse:
    """Fit now: queue a fit of the namespace's decay to its uses for the worker."""
    namespace = _namespace(request, slug)
    services.decay_fit_request(namespace=namespace)
    messages.success(
        request, "A fit is queued: the worker fits it in a few seconds; reload to see it."
    )
    return see_other(reverse("namespace-detail", args=[namespace.slug]) + "#decay-fit-heading")


# --- Tokens ------------------------------------------------------------------------------


def _token_page(
    request: HttpRequest,
    form: TokenForm,
    *,
    created: ApiToken | None = None,
    secret: str = "",
) -> HttpResponse:
    tokens = ApiToken.objects.filter(owner=request.user).prefetch_related("namespaces")
    context = {
        "form": form,
        "tokens": tokens,
        "created": created,
        "secret": secret,
        "now": timezone.now(),
        "has_namespaces": bool(Scope.of(request).namespace_ids),
    }
    response = render_page(request, "memories/token_list.html", context, partial="main")
    if secret:
        # The secret is in this response only: no cache may keep a copy.
        add_never_cache_headers(response)
    return response


@require_GET
@login_required
def token_list(request: HttpRequest) -> HttpResponse:
    return _token_page(request, TokenForm(owner=request.user))


@require_POST
@login_required
def token_create(request: HttpRequest) -> HttpResponse:
    """Create a token and show its secret once, in this response (never stored)."""
    form = TokenForm(request.POST, owner=request.user)
    if form.is_valid():
        try:
            token, secret = services.token_create(owner=request.user, **form.values())
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            return _token_page(request, TokenForm(owner=request.user), created=token, secret=secret)
    return _token_page(request, form)


@require_POST
@login_required
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(ApiToken.objects.filter(owner=request.user), pk=pk)
    services.token_revoke(token=token)
    messages.success(request, f"Token “{token.name}” revoked.")
    if getattr(request, "htmx", None):
        return _token_page(request, TokenForm(owner=request.user))
    return redirect("token-list")


# --- Webhooks (docs/webhooks.md) ---------------------------------------------------------


def _webhook(request: HttpRequest, slug: str, pk: int) -> WebhookSubscription:
    namespace = _namespace(request, slug)
    return get_object_or_404(WebhookSubscription.objects.filter(namespace=namespace), pk=pk)


@require_POST
@login_required
def webhook_create(request: HttpRequest, slug: str) -> HttpResponse:
    """Subscribe a URL; the page that answers shows its secret, this once."""
    namespace = _namespace(request, slug)
    form = WebhookForm(request.POST)
    if form.is_valid():
        try:
            created = webhook_services.webhook_subscription_create(
                namespace=namespace, **form.cleaned_data
            )
        except ValidationError as error:
            add_service_errors(form, error)
        else:
            return _namespace_detail_page(
                request,
                namespace,
                NamespaceSettingsForm(namespace=namespace),
                created_webhook=created,
            )
    form.focus_first_error()
    return _namespace_detail_page(
        request, namespace, NamespaceSettingsForm(namespace=namespace), webhook_form=form
    )


@require_POST
@login_required
def webhook_toggle(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Enable (clearing its failures) or disable a subscription."""
    subscription = _webhook(request, slug, pk)
    webhook_services.webhook_subscription_update(
        subscription=subscription, changes={"enabled": not subscription.enabled}
    )
    state = "disabled" if subscription.enabled else "enabled"
    messages.success(request, f"Webhook {subscription.url} {state}.")
    return see_other(safe_next(request, reverse("namespace-detail", args=[slug])))


@require_POST
@login_required
def webhook_delete(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    subscription = _webhook(request, slug, pk)
    webhook_services.webhook_subscription_delete(subscription=subscription)
    messages.success(request, f"Webhook {subscription.url} deleted.")
    return see_other(reverse("namespace-detail", args=[slug]))


@require_GET
@login_required
def webhook_detail(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """A subscription's delivery log, newest first, a page at a time."""
    subscription = _webhook(request, slug, pk)
    deliveries = WebhookDelivery.objects.filter(subscription=subscription).order_by("-id")
    page = Paginator(deliveries, 50).get_page(request.GET.get("page"))
    context = {"namespace": subscription.namespace, "subscription": subscription, "page": page}
    return render_page(request, "memories/webhook_detail.html", context, partial="log")


@require_POST
@login_required
def webhook_redeliver(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    namespace = _namespace(request, slug)
    delivery = get_object_or_404(
        WebhookDelivery.objects.filter(subscription__namespace=namespace), pk=pk
    )
    webhook_services.webhook_delivery_redeliver(delivery=delivery)
    messages.success(request, f"Delivery {delivery.webhook_id} queued again.")
    return see_other(
        safe_next(request, reverse("webhook-detail", args=[slug, delivery.subscription_id]))
    )
