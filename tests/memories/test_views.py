"""memories' pages: the memory list and page, edits through the services, namespaces, tokens."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memories import services
from memories.models import ApiToken, Memory, MemoryEvent, Namespace
from tests.support.dashboard import HX, add_memories, memory_with_history

pytestmark = pytest.mark.django_db


# --- Memories ----------------------------------------------------------------------------


def test_the_memory_list_filters_sorts_and_paginates(ada_client, user, personal):
    add_memories(personal, user, 30)
    forgotten = Memory.objects.filter(topic="geo").first()
    services.memory_forget(memory=forgotten, reason="old")
    page = ada_client.get(reverse("memory-list"))
    assert page.context["page"].paginator.count == 29
    assert len(page.context["rows"]) == 25
    second = ada_client.get(reverse("memory-list"), {"page": 2})
    assert len(second.context["rows"]) == 4
    geo = ada_client.get(reverse("memory-list"), {"topic": "geo"})
    assert geo.context["page"].paginator.count == 14
    assert (
        ada_client.get(reverse("memory-list"), {"status": "forgotten"})
        .context["page"]
        .paginator.count
        == 1
    )
    assert (
        ada_client.get(reverse("memory-list"), {"status": "any"}).context["page"].paginator.count
        == 30
    )
    text = ada_client.get(reverse("memory-list"), {"q": "country 17 "})
    assert [row["memory"].content[:8] for row in text.context["rows"]] == ["Fact 17:"]
    oldest = ada_client.get(reverse("memory-list"), {"sort": "old"}).context["rows"][0]
    assert oldest["memory"].content.startswith("Fact 0:")
    # A bad value in one filter leaves the others working.
    assert (
        ada_client.get(reverse("memory-list"), {"tier": "nope", "topic": "geo"})
        .context["page"]
        .paginator.count
        == 14
    )


def test_the_memory_list_answers_htmx_with_its_results_only(ada_client, user, personal):
    add_memories(personal, user, 3)
    response = ada_client.get(reverse("memory-list"), {"topic": "geo"}, **HX)
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="memory-results"')
    assert "<html" not in body and "<form" not in body
    assert "HX-Request" in response["Vary"]
    full = ada_client.get(reverse("memory-list"), {"topic": "geo"}).content.decode()
    assert "<html" in full and 'value="geo"' in full


def test_the_memory_page_shows_content_schedule_history_links_and_curve(ada_client, user, personal):
    memories = add_memories(personal, user, 6)
    memory = memory_with_history(personal, user, memories, 2)
    response = ada_client.get(reverse("memory-detail", args=[memory.pk]))
    body = response.content.decode()
    assert memory.content.splitlines()[0] in body
    assert 'class="plot plot-curve"' in body and "<title>Decay score over the next 30 days" in body
    for threshold in ("0.05", "0.15", "0.35", "0.65"):
        assert f'data-threshold="{threshold}"' in body
    assert "Updated" in body and "utility" in body  # history
    assert "query 0" in body and "query 1" in body  # recall history
    assert body.count('href="/memories/') >= 4  # associations both ways
    assert "a0 —[knows]→ b0" in body
    assert response.context["card"].total_reviews == 2


def test_editing_a_memory_goes_through_memory_update(ada_client, user, personal):
    memory = services.memory_create(
        namespace=personal, content="Old text\nline two", topic="t", keywords=["a", "b"]
    )
    url = reverse("memory-update", args=[memory.pk])
    page = ada_client.get(reverse("memory-edit", args=[memory.pk]))
    form = page.context["form"]
    data = {name: form[name].value() or "" for name in form.fields}
    data.update(content="New text\r\nline two", keywords="a, c", next="/memories/")
    data["expires_at"] = ""
    response = ada_client.post(url, data)
    assert response.status_code == 303 and response["Location"] == "/memories/"
    memory.refresh_from_db()
    assert memory.content == "New text\nline two"
    assert memory.keywords == ["a", "c"]
    event = MemoryEvent.objects.get(memory=memory, kind=MemoryEvent.Kind.UPDATED)
    assert set(event.after) == {"content", "keywords"}  # nothing else looked changed
    assert event.source == "dashboard" and event.actor == user


def test_an_invalid_edit_shows_the_services_error_and_changes_nothing(
    ada_client, personal, nothing_written
):
    memory = services.memory_create(namespace=personal, content="Keep me")
    page = ada_client.get(reverse("memory-edit", args=[memory.pk]))
    form = page.context["form"]
    data = {name: form[name].value() or "" for name in form.fields}
    data.update(strength="7.5", keywords="")
    with nothing_written():
        response = ada_client.post(reverse("memory-update", args=[memory.pk]), data)
    assert response.status_code == 200
    assert response.context["form"].errors["strength"]
    memory.refresh_from_db()
    assert memory.strength == 1.0
    assert not MemoryEvent.objects.filter(kind=MemoryEvent.Kind.UPDATED).exists()


def test_forget_restore_and_boost(ada_client, personal, nothing_written):
    memory = services.memory_create(namespace=personal, content="Fleeting")
    detail = reverse("memory-detail", args=[memory.pk])
    with nothing_written():
        response = ada_client.post(reverse("memory-forget", args=[memory.pk]), {"reason": ""})
    assert response.status_code == 303
    memory.refresh_from_db()
    assert memory.status == Memory.Status.ACTIVE  # the service wants a reason
    assert "Say why" in ada_client.get(detail).content.decode()

    ada_client.post(reverse("memory-forget", args=[memory.pk]), {"reason": "obsolete"})
    memory.refresh_from_db()
    assert memory.status == Memory.Status.FORGOTTEN and memory.forgotten_reason == "obsolete"
    assert "obsolete" in ada_client.get(detail).content.decode()

    ada_client.post(reverse("memory-restore", args=[memory.pk]))
    memory.refresh_from_db()
    assert memory.status == Memory.Status.ACTIVE

    ada_client.post(reverse("memory-boost", args=[memory.pk]))
    memory.refresh_from_db()
    assert memory.strength == pytest.approx(1.1) and memory.use_count == 1
    assert MemoryEvent.objects.filter(memory=memory, kind="touched", source="dashboard").exists()


def test_next_never_leaves_the_site(ada_client, personal):
    memory = services.memory_create(namespace=personal, content="Stay")
    response = ada_client.post(
        reverse("memory-boost", args=[memory.pk]), {"next": "https://evil.example/"}
    )
    assert response["Location"] == reverse("memory-detail", args=[memory.pk])


# --- Namespaces and tokens ---------------------------------------------------------------


def test_creating_a_namespace_with_its_mode_and_settings(ada_client, user, nothing_written):
    response = ada_client.post(
        reverse("namespace-create"),
        {
            "name": "Agent 42",
            "slug": "",
            "mode": "agent_memory",
            "description": "",
            "scheduler": "fsrs",
            "desired_retention": "0.85",
            "new_cards_per_day": "7",
            "decay_model": "power_law",
            "decay_half_life_days": "5",
            "dedupe": "exact",
        },
    )
    namespace = Namespace.objects.get(owner=user)
    assert response.status_code == 303
    assert response["Location"] == reverse("namespace-detail", args=["agent-42"])
    assert (namespace.slug, namespace.mode, namespace.scheduler) == (
        "agent-42",
        "agent_memory",
        "fsrs",
    )
    assert namespace.new_cards_per_day == 7 and namespace.decay_half_life_days == 5
    assert namespace.decay_model == "power_law" and namespace.decay_beta is None

    with nothing_written():
        again = ada_client.post(
            reverse("namespace-create"),
            {
                "name": "Agent 42",
                "mode": "personal",
                "scheduler": "sm2",
                "desired_retention": "0.9",
                "new_cards_per_day": "5",
            },
        )
    assert again.status_code == 200
    assert again.context["form"].errors  # the unique slug, from the model's constraint
    assert Namespace.objects.filter(owner=user).count() == 1


def test_namespace_settings_go_through_namespace_update(ada_client, personal, nothing_written):
    page = ada_client.get(reverse("namespace-detail", args=[personal.slug]))
    form = page.context["form"]
    data = {
        name: form[name].value() if form[name].value() is not None else "" for name in form.fields
    }
    data.update(name="Renamed", new_cards_per_day="12", weight_recency="0.4")
    response = ada_client.post(reverse("namespace-update", args=[personal.slug]), data)
    assert response.status_code == 303
    personal.refresh_from_db()
    assert personal.name == "Renamed" and personal.new_cards_per_day == 12
    assert personal.weight_recency == 0.4 and personal.slug == "personal"
    data.update(desired_retention="1.5", name="Renamed again")
    with nothing_written():
        bad = ada_client.post(reverse("namespace-update", args=[personal.slug]), data)
    assert bad.status_code == 200 and bad.context["form"].errors["desired_retention"]


def test_a_token_secret_is_shown_once_and_only_its_hash_is_kept(ada_client, user, personal):
    response = ada_client.post(
        reverse("token-create"),
        {"name": "agent", "namespaces": [personal.slug], "access": "write", "ceiling": "2"},
    )
    assert response.status_code == 200
    secret = response.context["secret"]
    token = ApiToken.objects.get(owner=user)
    assert secret.startswith(f"eng_{token.prefix}_") and secret in response.content.decode()
    assert token.secret_hash == services.token_hash(secret) and secret not in token.secret_hash
    assert (token.access, token.ceiling) == ("write", 2)
    assert list(token.namespaces.all()) == [personal]
    assert "no-store" in response["Cache-Control"]
    assert secret not in ada_client.get(reverse("token-list")).content.decode()
    assert secret not in str(dict(ada_client.session))


def test_a_token_needs_namespaces(ada_client, user, personal, nothing_written):
    with nothing_written():
        response = ada_client.post(
            reverse("token-create"), {"name": "x", "access": "read", "ceiling": "1"}
        )
    assert response.status_code == 200
    assert response.context["form"].errors["namespaces"]
    assert not ApiToken.objects.exists()
    with nothing_written():
        past = ada_client.post(
            reverse("token-create"),
            {
                "name": "x",
                "all_namespaces": "on",
                "access": "read",
                "ceiling": "1",
                "expires_at": "2001-01-01T10:00",
            },
        )
    assert past.context["form"].errors["expires_at"]


def test_tokens_are_created_and_revoked_with_htmx(ada_client, user, personal, api):
    created = ada_client.post(
        reverse("token-create"),
        {"name": "agent", "namespaces": [personal.slug], "access": "read", "ceiling": "1"},
        **HX,
    )
    body = created.content.decode()
    assert body.lstrip().startswith('<div id="tokens-main"') and "<html" not in body
    secret = created.context["secret"]
    assert api(secret).get("/api/v1/memories").status_code == 200
    token = ApiToken.objects.get()
    revoked = ada_client.post(reverse("token-revoke", args=[token.pk]), **HX)
    assert revoked.status_code == 200
    assert 'hx-swap-oob="true"' in revoked.content.decode()  # the "revoked" message
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert api(secret).get("/api/v1/memories").status_code == 401
    page = ada_client.get(reverse("token-list")).content.decode()
    assert "revoked" in page and "agent" in page
