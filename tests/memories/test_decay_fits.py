"""Decay fitted to a namespace's own uses (issue 19, item 1), through the database: the use
log every use path writes, a fit stored and applied under auto (and only then), the sweep's
SQL deciding with the applied fit, the API and the namespace page. The fit itself is
tested on synthetic data in test_decay_fit.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.urls import reverse

from memories import decay_fit, services
from memories.decay import DecayParams, decay_score
from memories.models import Classification, DecayFit, Memory, MemoryUse, Namespace
from memories.services.decay_fits import decay_fit_run, decay_fits_run, namespace_history
from memories.services.uses import uses_prune
from memories.sweep import sweep_run
from memories.tracking import memories_track_recall
from tests.support.decay_fits import make_decay_fit

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
# Faster than the constants (3 days, beta 0.6) by 6x; the rate gives about 1,600 uses of 1,500
# memories in 40 days, none running away.
FAST = DecayParams(half_life_days=0.5, beta=0.3)
FAST_RATE = 1e-5


def _uses(memory: Memory) -> list[int]:
    return list(
        MemoryUse.objects.filter(memory_ref=memory.pk)
        .order_by("id")
        .values_list("use_count", flat=True)
    )


# --- The use log ---------------------------------------------------------------------------


def test_every_use_path_logs_a_use_and_nothing_else_does(
    user, namespace, make_memory, make_token, api
):
    memory = make_memory("The deploy key rotates every Monday.")
    other = make_memory("Lunch is at noon on Fridays.")
    assert _uses(memory) == []  # a create is not a use
    _, secret = make_token(user)
    client = api(secret)
    assert client.post(f"/api/v1/memories/{memory.pk}/touch", {}, format="json").status_code == 200
    assert _uses(memory) == [1]
    # A recall's direct hit is a use; an associative hit is not.
    memories_track_recall(direct_ids=[memory.pk], associative_ids=[other.pk], now=NOW)
    assert _uses(memory) == [1, 2] and _uses(other) == []
    # A deduplicated create is a use of the memory it repeats.
    answer = client.post(
        "/api/v1/memories",
        {"namespace": namespace.slug, "content": "The deploy key rotates every Monday."},
        format="json",
    )
    assert answer.status_code == 200 and answer.json()["deduplicated"] is True
    assert _uses(memory) == [1, 2, 3]
    memory.refresh_from_db()
    assert memory.use_count == 3
    row = MemoryUse.objects.filter(memory_ref=memory.pk).order_by("id")[1]
    assert row.namespace_id == namespace.pk and row.used_at == NOW


def test_the_recall_endpoint_logs_its_direct_hits(user, namespace, make_memory, make_token, api):
    memory = make_memory("Kyoto temples open at dawn.")
    _, secret = make_token(user)
    response = api(secret).post("/api/v1/recall", {"query": "kyoto temples"}, format="json")
    assert response.status_code == 200
    assert memory.content in [hit["content"] for hit in response.json()["results"]]
    assert _uses(memory) == [1]


def test_old_uses_are_pruned(namespace, make_memory, settings):
    memory = make_memory()
    services.memory_touch(memory=memory, now=NOW - timedelta(days=400))
    services.memory_touch(memory=memory, now=NOW - timedelta(days=1))
    settings.DECAY_FIT_HISTORY_DAYS = 180
    assert uses_prune(now=NOW) == 1
    assert _uses(memory) == [2]


# --- Fitting through the database ----------------------------------------------------------


def _load(namespace: Namespace, params: DecayParams, *, rate: float, memories: int, seed: int):
    """A namespace whose uses were drawn from `params`, written through the services: each
    memory created at its time, each use a touch at its time, in the order they happened.
    The history ends at NOW."""
    drawn = decay_fit.simulate(
        params, rate, n_memories=memories, days=40, rng=np.random.default_rng(seed)
    )
    shift = NOW.timestamp() - float(drawn["memory_end"][0])
    created = services.memory_bulk_create(
        items=[
            {
                "namespace": namespace,
                "content": f"Fact number {i} about the simulated project.",
                "created_at": datetime.fromtimestamp(at + shift, UTC),
            }
            for i, at in enumerate(drawn["memory_start"])
        ]
    )
    order = np.argsort(drawn["use_at"], kind="stable")
    for index in order:
        at = datetime.fromtimestamp(float(drawn["use_at"][index]) + shift, UTC)
        services.memory_touch(memory=created[int(drawn["use_memory"][index])], now=at)
    return created, len(order)


def test_history_is_read_as_the_pure_fit_takes_it(namespace):
    _, uses = _load(namespace, FAST, rate=FAST_RATE, memories=40, seed=3)
    history = namespace_history(namespace, now=NOW)
    assert len(history.memory_start) == 40
    assert len(history.use_at) == uses  # every memory's history is complete
    assert (history.memory_start_count == 0).all()
    assert history.classification == Classification.INTERNAL


def test_a_fit_under_auto_learns_the_namespace_and_the_sweep_follows_it(namespace, settings):
    settings.PROMOTE_USE_COUNT = 10_000  # only the forget rule applies to these rows
    Namespace.objects.filter(pk=namespace.pk).update(decay_fit=Namespace.DecayFitMode.AUTO)
    _, uses = _load(namespace, FAST, rate=FAST_RATE, memories=1500, seed=7)
    assert uses >= decay_fit.MIN_USES / 0.7
    fit = decay_fit_run(namespace=namespace, now=NOW)
    assert fit.accepted, fit.reason
    assert abs(fit.half_life_days - 0.5) / 0.5 < 0.3
    assert fit.validation_loss < fit.default_validation_loss
    namespace.refresh_from_db()
    assert namespace.decay_fit_applied_id == fit.pk
    params = namespace.decay_params()
    assert params == fit.params() and params.half_life_days != 3.0
    # The sweep's SQL decides with the applied fit: it forgets exactly what the pure rule
    # with the fitted parameters forgets.
    later = NOW + timedelta(hours=6)
    report = sweep_run(namespace=namespace, now=later, dry_run=True, purge=False)
    expected = sum(
        decay_score(
            use_count=m.use_count,
            last_used_at=m.last_used_at,
            strength=m.strength,
            now=later,
            params=params,
        )
        < 0.05
        for m in Memory.objects.filter(namespace=namespace, tier="short_term", status="active")
    )
    assert report.forgotten == expected > 0
    # Under the constants (3-day half-life) fewer would go.
    Namespace.objects.filter(pk=namespace.pk).update(decay_fit=Namespace.DecayFitMode.SUGGEST)
    constants = sweep_run(namespace=namespace, now=later, dry_run=True, purge=False)
    assert constants.forgotten < report.forgotten
    # Switching modes: off applies no fit; auto again applies the latest accepted one.
    namespace.refresh_from_db()
    updated = services.namespace_update(namespace=namespace, changes={"decay_fit": "off"})
    assert updated.decay_fit_applied_id is None
    assert Namespace.objects.get(pk=namespace.pk).decay_params() == DecayParams()
    updated = services.namespace_update(namespace=updated, changes={"decay_fit": "auto"})
    assert updated.decay_fit_applied_id == fit.pk
    assert Namespace.objects.get(pk=namespace.pk).decay_params() == fit.params()


def test_suggest_fits_and_shows_but_never_changes_behaviour(namespace):
    Namespace.objects.filter(pk=namespace.pk).update(decay_fit=Namespace.DecayFitMode.SUGGEST)
    _load(namespace, FAST, rate=FAST_RATE, memories=1500, seed=11)
    before = Namespace.objects.get(pk=namespace.pk).decay_params()
    counts = decay_fits_run(now=NOW)
    assert counts["fitted"] == counts["accepted"] == 1  # a good fit, only shown
    namespace.refresh_from_db()
    assert namespace.decay_fit_applied_id is None
    assert namespace.decay_params() == before == DecayParams()
    assert DecayFit.objects.filter(namespace=namespace).count() == 1


def test_too_little_history_never_changes_behaviour(namespace):
    Namespace.objects.filter(pk=namespace.pk).update(decay_fit=Namespace.DecayFitMode.AUTO)
    memory = services.memory_create(
        namespace=namespace, content="A lone fact.", created_at=NOW - timedelta(days=10)
    )
    for day in (9, 7, 4):
        services.memory_touch(memory=memory, now=NOW - timedelta(days=day))
    fit = decay_fit_run(namespace=namespace, now=NOW)
    assert not fit.accepted and "not enough history" in fit.reason
    namespace.refresh_from_db()
    assert namespace.decay_fit_applied_id is None and namespace.decay_params() == DecayParams()


def test_off_namespaces_are_not_fitted_by_the_schedule(namespace, make_memory):
    make_memory()
    assert decay_fits_run(now=NOW)["fitted"] == 0
    assert not DecayFit.objects.exists()


# --- API and dashboard --------------------------------------------------------------------


def _fit(namespace: Namespace, *, level: int, accepted: bool = True) -> DecayFit:
    return make_decay_fit(
        namespace,
        created_at=NOW,
        half_life_days=0.5,
        rate=2.5e-6,
        n_memories=300,
        n_uses_train=1500,
        n_uses_validation=400,
        validation_loss=0.41,
        default_validation_loss=0.47,
        model_losses={"exponential": 0.41},
        accepted=accepted,
        reason="the fit beats the constants by 12.8 %",
        classification=level,
    )


def test_the_api_lists_fits_within_the_ceiling_and_queues_one(
    user, namespace, make_memory, make_token, api, committed
):
    public = _fit(namespace, level=Classification.PUBLIC)
    _fit(namespace, level=Classification.RESTRICTED)
    _, low = make_token(user, ceiling=Classification.PUBLIC)
    _, high = make_token(user, ceiling=Classification.RESTRICTED)
    url = f"/api/v1/namespaces/{namespace.slug}/decay-fits"
    seen_low = api(low).get(url).json()
    assert [f["id"] for f in seen_low] == [public.pk]
    assert seen_low[0]["classification"] == "public" and seen_low[0]["applied"] is False
    assert len(api(high).get(url).json()) == 2
    make_memory()
    with committed():  # the worker runs it after the commit (sync in tests)
        answer = api(high).post(url, {}, format="json")
    assert answer.status_code == 202 and answer.json() == {"queued": True}
    latest = DecayFit.objects.filter(namespace=namespace).order_by("-id").first()
    assert latest.trigger == DecayFit.Trigger.REQUEST and not latest.accepted
    # decay_fit is a namespace setting like the others, checked the same way.
    bad = api(high).patch(
        f"/api/v1/namespaces/{namespace.slug}", {"decay_fit": "always"}, format="json"
    )
    assert bad.status_code == 400 and "decay_fit" in bad.json()["error"]["fields"]
    good = api(high).patch(
        f"/api/v1/namespaces/{namespace.slug}", {"decay_fit": "auto"}, format="json"
    )
    assert good.status_code == 200 and good.json()["decay_fit"] == "auto"


def test_another_users_namespace_is_a_404(user, other_user, make_token, api):
    theirs = services.namespace_create(owner=other_user, name="Theirs")
    _, secret = make_token(user)
    url = f"/api/v1/namespaces/{theirs.slug}/decay-fits"
    assert api(secret).get(url).status_code == 404
    assert api(secret).post(url, {}, format="json").status_code == 404


def test_the_namespace_page_shows_the_fit_and_its_chance(client, user, namespace, committed):
    Namespace.objects.filter(pk=namespace.pk).update(decay_fit=Namespace.DecayFitMode.AUTO)
    fit = _fit(namespace, level=Classification.INTERNAL)
    Namespace.objects.filter(pk=namespace.pk).update(decay_fit_applied=fit)
    client.force_login(user)
    page = client.get(reverse("namespace-detail", args=[namespace.slug])).content.decode()
    assert "Decay fitted to use" in page
    assert "Decay here follows the fit of" in page and "half-life 0.50 days" in page
    assert "12.8 % better" in page
    assert "chance a memory is needed in the next 30 days falls under" in page
    with committed():
        answer = client.post(reverse("namespace-decay-fit", args=[namespace.slug]))
    assert answer.status_code == 303
    assert DecayFit.objects.filter(namespace=namespace, trigger="request").exists()


def test_an_empty_namespace_fits_to_nothing_without_failing(namespace):
    fit = decay_fit_run(namespace=namespace, now=NOW)
    assert not fit.accepted and "not enough history" in fit.reason
    assert fit.n_memories == 0 and fit.validation_loss is None


def test_a_read_only_token_cannot_queue_a_fit(user, namespace, make_token, api):
    _, secret = make_token(user, access="read")
    url = f"/api/v1/namespaces/{namespace.slug}/decay-fits"
    answer = api(secret).post(url, {}, format="json")
    assert answer.status_code == 403 and "read-only" in answer.json()["error"]["message"]
    assert api(secret).get(url).status_code == 200
