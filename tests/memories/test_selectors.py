from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import selectors, services
from memories.auth import Scope
from memories.models import Classification, Memory, Namespace

pytestmark = pytest.mark.django_db


@pytest.fixture
def scope(user) -> Scope:
    """Ada's dashboard scope: every namespace of hers, every classification."""
    return Scope(user=user, token=None)


@pytest.fixture
def home(user) -> Namespace:
    return services.namespace_create(owner=user, name="Home", mode=Namespace.Mode.PERSONAL)


def listed(scope: Scope, **filters) -> set[str]:
    return {memory.content for memory in selectors.memory_list(scope=scope, filters=filters)}


def test_it_hides_forgotten_memories_unless_a_status_asks_for_them(scope, make_memory):
    make_memory("kept")
    services.memory_forget(memory=make_memory("dropped"), reason="old")
    assert listed(scope) == {"kept"}
    assert listed(scope, status=Memory.Status.FORGOTTEN) == {"dropped"}
    assert listed(scope, status=Memory.Status.ACTIVE) == {"kept"}
    assert listed(scope, status=selectors.ANY_STATUS) == {"kept", "dropped"}


def test_it_lists_only_the_scopes_namespaces_within_its_ceiling(
    user, other_user, namespace, make_memory, make_token
):
    make_memory("internal", classification=Classification.INTERNAL)
    make_memory("confidential", classification=Classification.CONFIDENTIAL)
    theirs = services.namespace_create(owner=other_user, name="Bob's", mode="personal")
    services.memory_create(namespace=theirs, content="Bob's secret.")
    token, _ = make_token(user, namespaces=[namespace], ceiling=Classification.INTERNAL)
    assert listed(Scope(user=user, token=None)) == {"internal", "confidential"}
    assert listed(Scope(user=user, token=token)) == {"internal"}


def test_it_filters_by_namespace(scope, namespace, home, make_memory):
    make_memory("at work")
    make_memory("at home", namespace=home)
    assert listed(scope, namespace=home) == {"at home"}
    assert listed(scope, namespace=namespace) == {"at work"}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("topic", "geo"),
        ("tier", Memory.Tier.CORE),
        ("memory_type", Memory.MemoryType.PROCEDURAL),
        ("classification", Classification.CONFIDENTIAL),
    ],
)
def test_it_keeps_the_memories_whose_field_equals_the_filter(scope, make_memory, name, value):
    make_memory("plain", topic="misc")
    make_memory("matching", **{name: value})
    assert listed(scope, **{name: value}) == {"matching"}


def test_it_filters_by_creation_time_after_inclusive_before_exclusive(scope, make_memory):
    now = timezone.now()
    make_memory("old", created_at=now - timedelta(days=10))
    make_memory("edge", created_at=now - timedelta(days=5))
    make_memory("new", created_at=now)
    assert listed(scope, created_after=now - timedelta(days=5)) == {"edge", "new"}
    assert listed(scope, created_before=now - timedelta(days=5)) == {"old"}


def test_it_finds_memories_containing_the_text(scope, make_memory):
    make_memory("Crème brûlée sets at 80 °C")
    make_memory("Bread wants a hot oven")
    assert listed(scope, q="BRULEE") == {"Crème brûlée sets at 80 °C"}
    assert listed(scope, q="") == {"Crème brûlée sets at 80 °C", "Bread wants a hot oven"}


def test_it_orders_only_when_asked_and_ignores_other_keys(scope, make_memory):
    now = timezone.now()
    make_memory("b", topic="b", created_at=now - timedelta(days=1))
    make_memory("a", topic="a", created_at=now)
    make_memory("c", topic="c", created_at=now - timedelta(days=2))
    paging = {"cursor": "x", "limit": 5, "sort": "old", "page": "2"}
    by_topic = selectors.memory_list(scope=scope, filters=paging, ordering=("topic", "-id"))
    assert [memory.content for memory in by_topic] == ["a", "b", "c"]
    # The model's order (newest first) when the caller's paginator does the sorting.
    assert [m.content for m in selectors.memory_list(scope=scope, filters={})] == ["a", "b", "c"]
    oldest = selectors.memory_list(scope=scope, filters={}, ordering=("created_at", "id"))
    assert [memory.content for memory in oldest] == ["c", "b", "a"]


def test_it_loads_the_namespace_with_the_memories(scope, make_memory, django_assert_num_queries):
    for i in range(3):
        make_memory(f"m{i}")
    scope.namespace_ids  # noqa: B018 (the scope's own query, made once a request)
    with django_assert_num_queries(1):
        names = {memory.namespace.name for memory in selectors.memory_list(scope=scope, filters={})}
    assert names == {"Work"}


# --- Its callers' query counts ---------------------------------------------------------


def add_memories(namespaces: list[Namespace], count: int) -> None:
    for i in range(count):
        services.memory_create(
            namespace=namespaces[i % len(namespaces)],
            content=f"Fact {i}: the capital of country {i}.",
            topic="geo" if i % 2 else "misc",
        )


def test_the_api_list_costs_a_fixed_number_of_queries(
    user, namespace, home, make_token, api, django_assert_num_queries
):
    add_memories([namespace, home], 30)
    _, secret = make_token(user)
    client = api(secret)
    client.get("/api/v1/memories")  # warm: the token's first use stamps last_used_at
    params = {"namespace": home.slug, "topic": "geo", "q": "capital", "limit": 100}
    # token (with owner); throttle read and write (4, in a savepoint); the named
    # namespace; the scope's namespace ids; the page
    with django_assert_num_queries(8):
        response = client.get("/api/v1/memories", params)
    assert response.status_code == 200
    assert len(response.json()["results"]) == 15


def test_the_dashboard_list_costs_a_fixed_number_of_queries(
    client, user, namespace, home, django_assert_num_queries
):
    add_memories([namespace, home], 30)
    client.force_login(user)
    params = {"namespace": home.slug, "topic": "geo", "q": "capital", "sort": "uses"}
    # session, user, namespaces (the form's choices), scope's namespace ids, count, page,
    # the page's cards (one query, the list's next-review column)
    with django_assert_num_queries(7):
        response = client.get(reverse("memory-list"), params)
    assert response.status_code == 200
    assert response.context["page"].paginator.count == 15
