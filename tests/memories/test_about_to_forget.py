"""The about-to-forget digest: what decay will forget within FORGET_DIGEST_DAYS, the page
that lists it with Keep and Let go, and the home page's count."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memories import selectors, services
from memories.auth import Scope
from memories.decay import forgetting_outlook
from memories.models import Classification, Memory, Namespace
from memories.sweep import thresholds_from_settings

pytestmark = pytest.mark.django_db

DAY = timedelta(days=1)


def _aged(memory: Memory, days: float, **fields) -> Memory:
    """The memory as if last used `days` ago."""
    Memory.objects.filter(pk=memory.pk).update(
        last_used_at=timezone.now() - timedelta(days=days), **fields
    )
    memory.refresh_from_db()
    return memory


@pytest.fixture
def corpus(user, other_user, namespace, make_memory):
    """With the defaults (3-day half-life, beta 0.6, forget under 0.05) a memory never used
    again is forgotten 12.97 days after its last use."""
    slow = services.namespace_create(
        owner=user, name="Slow", mode=Namespace.Mode.PERSONAL, decay_half_life_days=14.0
    )
    theirs = services.namespace_create(owner=other_user, name="Bob's", mode="personal")
    memories = {
        "fresh": make_memory("fresh"),
        "soon": _aged(make_memory("soon"), 11),  # 1.97 days left
        "later": _aged(make_memory("later"), 9),  # 3.97 days left: after the digest's 3
        "gone": _aged(make_memory("gone"), 30),  # already under: the next sweep
        "long": _aged(make_memory("long"), 30, tier=Memory.Tier.LONG_TERM),
        "secret": _aged(make_memory("secret", classification=Classification.CONFIDENTIAL), 11),
        "slow": _aged(make_memory("slow", namespace=slow), 11),  # 14 x log2 20 = 60 days
        "forgotten": _aged(make_memory("forgotten"), 11),
        "bobs": _aged(services.memory_create(namespace=theirs, content="bobs"), 11),
    }
    services.memory_forget(memory=memories["forgotten"], reason="done")
    return memories


def _contents(digest) -> list[str]:
    return [memory.content for memory, _at, _score in digest.memories]


def test_it_lists_what_decay_will_forget_in_the_window_soonest_first(user, corpus):
    now = timezone.now()
    digest = selectors.about_to_forget(scope=Scope(user=user, token=None), now=now, days=3)
    assert _contents(digest) == ["gone", "soon", "secret"] or _contents(digest) == [
        "gone",
        "secret",
        "soon",
    ]
    assert digest.count == 3
    assert digest.by == now + timedelta(days=3)
    (_gone, gone_at, gone_score), *rest = digest.memories
    assert gone_at == now and gone_score < 0.05
    for _memory, forget_at, _score in rest:
        assert abs((forget_at - now) - 1.97 * DAY) < timedelta(hours=1)


def test_the_digest_agrees_with_the_pure_outlook(user, corpus):
    """Every live short-term memory of hers is listed exactly when forgetting_outlook says
    it falls within the window (each namespace's own decay model)."""
    now = timezone.now()
    listed = set(
        _contents(selectors.about_to_forget(scope=Scope(user=user, token=None), now=now, days=3))
    )
    thresholds = thresholds_from_settings()
    for memory in Memory.objects.filter(namespace__owner=user).select_related("namespace"):
        outlook = forgetting_outlook(
            status=memory.status,
            tier=memory.tier,
            use_count=memory.use_count,
            dt_seconds=(now - memory.last_used_at).total_seconds(),
            strength=memory.strength,
            params=memory.namespace.decay_params(),
            thresholds=thresholds,
        )
        due = outlook.forgettable and outlook.seconds_left is not None
        due = due and outlook.seconds_left <= 3 * 86_400
        assert (memory.content in listed) == due, memory.content


def test_the_ceiling_namespace_and_limit_narrow_it(user, namespace, corpus, make_token):
    now = timezone.now()
    token, _ = make_token(user, namespaces=[namespace], ceiling=Classification.INTERNAL)
    scoped = selectors.about_to_forget(scope=Scope(user=user, token=token), now=now, days=3)
    assert sorted(_contents(scoped)) == ["gone", "soon"]
    slow = Namespace.objects.get(name="Slow")
    scope = Scope(user=user, token=None)
    assert selectors.about_to_forget(scope=scope, now=now, days=3, namespace=slow).count == 0
    assert selectors.about_to_forget(scope=scope, now=now, days=90, namespace=slow).count == 1
    first = selectors.about_to_forget(scope=scope, now=now, days=3, limit=1)
    assert first.count == 3 and _contents(first) == ["gone"]
    counted = selectors.about_to_forget(scope=scope, now=now, days=3, limit=0)
    assert counted.count == 3 and counted.memories == []


def test_the_page_keeps_and_lets_go(ada_client, corpus):
    page = reverse("memory-forgetting")
    body = ada_client.get(page).content.decode()
    assert "3 memories will be forgotten by" in body
    for name in ("gone", "soon", "secret"):
        assert f">{name}</a>" in body
    for name in ("fresh", "later", "long", "slow", "forgotten", "bobs"):
        assert f">{name}</a>" not in body
    assert "at the next sweep" in body

    soon = corpus["soon"]
    response = ada_client.post(reverse("memory-boost", args=[soon.pk]), {"next": page})
    assert response.status_code == 303 and response["Location"] == page
    soon.refresh_from_db()
    assert soon.use_count == 1
    assert ">soon</a>" not in ada_client.get(page).content.decode()

    gone = corpus["gone"]
    ada_client.post(
        reverse("memory-forget", args=[gone.pk]),
        {"next": page, "reason": "let go: about to be forgotten"},
    )
    gone.refresh_from_db()
    assert gone.status == Memory.Status.FORGOTTEN
    assert gone.forgotten_reason == "let go: about to be forgotten"
    body = ada_client.get(page).content.decode()
    assert "1 memory will be forgotten by" in body
    # Let go of all: the bulk action asks first, naming the count.
    asked = ada_client.post(
        reverse("memory-bulk"),
        {"action": "forget", "reason": "let go", "ids": [corpus["secret"].pk], "next": page},
    )
    assert "Forget 1 memory" in asked.content.decode()


def test_the_page_answers_404_for_another_users_namespace(ada_client, corpus, other_user):
    theirs = Namespace.objects.get(owner=other_user)
    response = ada_client.get(reverse("memory-forgetting"), {"namespace": theirs.slug})
    assert response.status_code == 404


def test_the_home_page_counts_them(ada_client, corpus):
    body = ada_client.get(reverse("home")).content.decode()
    assert "3 memories will be forgotten by" in body
    assert reverse("memory-forgetting") in body
    Memory.objects.filter(namespace__owner__username="ada").update(last_used_at=timezone.now())
    assert "will be forgotten by" not in ada_client.get(reverse("home")).content.decode()


def test_the_pages_queries_do_not_grow_with_the_memories_listed(ada_client, user, namespace):
    """Under decay_fit auto too: each listed memory's decay model (the applied fit) comes
    with it."""
    from tests.memories.test_decay_fits import _fit

    def queries(count: int) -> int:
        Memory.objects.all().delete()
        for i in range(count):
            _aged(services.memory_create(namespace=namespace, content=f"Fading {i} here."), 11)
        with CaptureQueriesContext(connection) as context:
            body = ada_client.get(reverse("memory-forgetting")).content.decode()
        assert f"{count} memories will be forgotten by" in body
        return len(context.captured_queries)

    assert queries(3) == queries(12)
    fit = _fit(namespace, level=Classification.INTERNAL)
    Namespace.objects.filter(pk=namespace.pk).update(
        decay_fit=Namespace.DecayFitMode.AUTO, decay_fit_applied=fit
    )
    assert queries(3) == queries(12)


@pytest.mark.django_db
def test_postgresql_has_the_digests_covering_index():
    """Migration 0021: the digest answers from the index alone at 1M memories
    (docs/benchmarks.md); SQLite has no INCLUDE and goes without."""
    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL-only index")
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_forget_digest'")
        (definition,) = cursor.fetchone()
    assert "INCLUDE (id, use_count, last_used_at, strength" in definition
    assert "WHERE" in definition and "short_term" in definition
