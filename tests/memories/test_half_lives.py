"""The fast half-life of two-component decay is never longer than the slow one (seed 003:
12 hours and 7 days): one rule (memories.decay.half_life_order_error) refused on every
writer of a namespace's settings with a 400 naming the field, held by CHECK constraints on
namespaces and fits, and repaired in stored rows by migration 0030 (swapped, with the
weight, so the curve stays the same)."""

from __future__ import annotations

import io
import math

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from memories import decay, services
from memories.decay import DecayParams, decay_factor
from memories.models import DecayFit, Namespace
from tests.support.dashboard import namespace_form_data
from tests.support.decay_fits import make_decay_fit

pytestmark = pytest.mark.django_db

FAST = "decay_fast_half_life_days"
SLOW = "decay_slow_half_life_days"


def test_the_rule_allows_equal_and_refuses_fast_above_slow():
    half_life_order_error = decay.half_life_order_error
    assert half_life_order_error(0.5, 7.0) is None
    assert half_life_order_error(3.0, 3.0) is None
    assert "fast half-life (10 days)" in half_life_order_error(10.0, 2.0)


def test_the_api_refuses_a_pair_the_wrong_way_round_naming_the_field(
    user, namespace, writer, nothing_written
):
    with nothing_written():
        created = writer.post(
            "/api/v1/namespaces", {"name": "Backwards", FAST: 10, SLOW: 2}, format="json"
        )
        changed = writer.patch(
            f"/api/v1/namespaces/{namespace.slug}", {FAST: 10, SLOW: 2}, format="json"
        )
        # Only the fast one set: the slow one is the global setting (7 days).
        against_setting = writer.patch(
            f"/api/v1/namespaces/{namespace.slug}", {FAST: 8}, format="json"
        )
    for response in (created, changed, against_setting):
        assert response.status_code == 400, response.content
        assert list(response.json()["error"]["fields"]) == [FAST]
    assert "global setting" in against_setting.json()["error"]["fields"][FAST][0]

    assert (
        writer.patch(
            f"/api/v1/namespaces/{namespace.slug}", {FAST: 2, SLOW: 2}, format="json"
        ).status_code
        == 200
    )
    # The slow one shortened below the stored fast one: said on the fast field, which the
    # namespace sets, with both values in the words.
    response = writer.patch(f"/api/v1/namespaces/{namespace.slug}", {SLOW: 1}, format="json")
    assert response.status_code == 400
    assert "slow half-life (1 days)" in response.json()["error"]["fields"][FAST][0]
    namespace.refresh_from_db()
    assert (namespace.decay_fast_half_life_days, namespace.decay_slow_half_life_days) == (2, 2)


def test_a_slow_half_life_below_the_global_fast_one_is_said_on_the_slow_field(namespace, settings):
    settings.DECAY_FAST_HALF_LIFE_DAYS = 2.0
    with pytest.raises(ValidationError) as refused:
        services.namespace_update(namespace=namespace, changes={SLOW: 1.0})
    assert list(refused.value.message_dict) == [SLOW]


def test_the_dashboard_says_it_on_the_field(client, user, namespace, nothing_written):
    client.force_login(user)
    form = client.get(reverse("namespace-detail", args=[namespace.slug])).context["form"]
    data = {n: "" if form[n].value() is None else form[n].value() for n in form.fields}
    data.update({FAST: "10", SLOW: "2"})
    with nothing_written():
        response = client.post(reverse("namespace-update", args=[namespace.slug]), data)
    assert response.status_code == 200
    assert list(response.context["form"].errors) == [FAST]

    create = namespace_form_data(name="Backwards", **{FAST: "10", SLOW: "2"})
    with nothing_written():
        response = client.post(reverse("namespace-create"), create)
    assert response.status_code == 200
    assert FAST in response.context["form"].errors


def test_the_admin_says_it_on_the_field(client):
    call_command("seed_demo", stdout=io.StringIO())
    client.force_login(get_user_model().objects.create_superuser("root", password="pw-root-1"))
    namespace = Namespace.objects.get(owner__username="demo", slug="personal")
    url = reverse("admin:memories_namespace_change", args=[namespace.pk])
    form = client.get(url).context["adminform"].form
    data = {n: "" if form[n].value() is None else form[n].value() for n in form.fields}
    response = client.post(url, data | {FAST: "10", SLOW: "2"})
    assert response.status_code == 200
    assert FAST in response.context["adminform"].form.errors
    namespace.refresh_from_db()
    assert namespace.decay_fast_half_life_days is None

    add = reverse("admin:memories_namespace_add")
    form = client.get(add).context["adminform"].form
    data = {n: "" if form[n].value() is None else form[n].value() for n in form.fields}
    data |= {"owner": namespace.owner_id, "name": "Backwards", "slug": "backwards"}
    response = client.post(add, data | {FAST: "10", SLOW: "2"})
    assert FAST in response.context["adminform"].form.errors
    assert not Namespace.objects.filter(slug="backwards").exists()


def test_the_database_refuses_them_on_namespaces_and_fits(namespace):
    with pytest.raises(IntegrityError), transaction.atomic():
        Namespace.objects.filter(pk=namespace.pk).update(**{FAST: 10.0, SLOW: 2.0})
    # One of them empty: the setting's, which the check cannot see (Namespace.clean does).
    Namespace.objects.filter(pk=namespace.pk).update(**{FAST: 10.0})
    fit = make_decay_fit(namespace)
    with pytest.raises(IntegrityError), transaction.atomic():
        DecayFit.objects.filter(pk=fit.pk).update(fast_half_life_days=30.0, slow_half_life_days=1.0)


def _latest() -> list[tuple[str, str]]:
    graph = MigrationExecutor(connection).loader.graph
    return [node for node in graph.leaf_nodes() if node[0] in ("memories", "review", "recall")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_swaps_stored_pairs_keeping_the_curve(user, settings):
    backwards = services.namespace_create(owner=user, name="Backwards")
    half = services.namespace_create(owner=user, name="Half")
    fine = services.namespace_create(owner=user, name="Fine", **{FAST: 1.0, SLOW: 9.0})
    fit = make_decay_fit(backwards)
    executor = MigrationExecutor(connection)
    executor.migrate([("memories", "0029_cjk_pairs")])
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memories_namespace SET decay_fast_half_life_days = 10, "
                "decay_slow_half_life_days = 2, decay_fast_weight = 0.8 WHERE id = %s",
                [backwards.pk],
            )
            # Against the global setting (7 days slow, 0.7 fast weight).
            cursor.execute(
                "UPDATE memories_namespace SET decay_fast_half_life_days = 9 WHERE id = %s",
                [half.pk],
            )
            cursor.execute(
                "UPDATE memories_decayfit SET fast_half_life_days = 20, "
                "slow_half_life_days = 0.25, fast_weight = 0.1 WHERE id = %s",
                [fit.pk],
            )
    finally:
        MigrationExecutor(connection).migrate(_latest())
    before = DecayParams(
        model="two_component", fast_half_life_days=10, slow_half_life_days=2, fast_weight=0.8
    )
    for namespace in (backwards, half, fine):
        namespace.refresh_from_db()
    assert (backwards.decay_fast_half_life_days, backwards.decay_slow_half_life_days) == (2, 10)
    assert math.isclose(backwards.decay_fast_weight, 0.2)
    after = DecayParams(
        model="two_component",
        fast_half_life_days=2,
        slow_half_life_days=10,
        fast_weight=backwards.decay_fast_weight,
    )
    for days in (0.1, 1, 5, 30):
        assert math.isclose(
            decay_factor(days * 86400, before), decay_factor(days * 86400, after), rel_tol=1e-9
        )
    assert (half.decay_fast_half_life_days, half.decay_slow_half_life_days) == (7.0, 9.0)
    assert math.isclose(half.decay_fast_weight, 1 - settings.DECAY_FAST_WEIGHT)
    assert (fine.decay_fast_half_life_days, fine.decay_slow_half_life_days) == (1.0, 9.0)
    assert fine.decay_fast_weight is None
    fit.refresh_from_db()
    assert (fit.fast_half_life_days, fit.slow_half_life_days) == (0.25, 20)
    assert math.isclose(fit.fast_weight, 0.9)
