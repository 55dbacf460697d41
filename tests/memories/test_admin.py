from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from memories.models import (
    ApiToken,
    Association,
    Consolidation,
    Entity,
    Memory,
    MemoryEvent,
    Namespace,
    Relation,
)
from recall.models import RecallEvent
from review.models import Card, ReviewLog

MODELS = [
    Namespace,
    Memory,
    MemoryEvent,
    Association,
    Entity,
    Relation,
    Consolidation,
    ApiToken,
    Card,
    ReviewLog,
    RecallEvent,
]


@pytest.fixture
def admin_client(client, db):
    call_command("seed_demo", stdout=io.StringIO())
    client.force_login(get_user_model().objects.get(username="demo"))
    return client


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_model_has_a_working_changelist(admin_client, model):
    meta = model._meta
    response = admin_client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
    assert response.status_code == 200


def test_memory_changelist_shows_the_decay_score(admin_client):
    response = admin_client.get(reverse("admin:memories_memory_changelist"))
    assert b"Decay score" in response.content
    memory = Memory.objects.select_related("namespace").get(content__startswith="Allergic")
    # The core memory's score, to three decimals, as computed now.
    assert f"{memory.decay_score(timezone.now()):.3f}".encode()[:4] in response.content


def test_memory_page_opens(admin_client):
    memory = Memory.objects.first()
    response = admin_client.get(reverse("admin:memories_memory_change", args=[memory.pk]))
    assert response.status_code == 200
    assert memory.content.encode() in response.content


def _act(client, action: str, ids: list[int], changelist: str = "memories_memory"):
    response = client.post(
        reverse(f"admin:{changelist}_changelist"),
        {"action": action, "_selected_action": ids},
        follow=True,
    )
    assert response.status_code == 200
    return response


def _message(response) -> str:
    return " ".join(str(message) for message in response.context["messages"])


def test_admin_actions_forget_restore_promote_and_schedule(admin_client):
    memory = Memory.objects.filter(tier="short_term", status="active").first()
    _act(admin_client, "forget_selected", [memory.pk])
    memory.refresh_from_db()
    assert memory.status == "forgotten"
    assert MemoryEvent.objects.filter(memory=memory, kind="forgotten", source="admin").exists()

    _act(admin_client, "restore_selected", [memory.pk])
    memory.refresh_from_db()
    assert memory.status == "active"

    _act(admin_client, "promote_selected", [memory.pk])
    memory.refresh_from_db()
    assert (memory.tier, memory.status) == ("long_term", "promoted")

    no_card = Memory.objects.filter(card__isnull=True).first()
    _act(admin_client, "review_now", [no_card.pk])
    assert Card.objects.get(memory=no_card).next_review is not None


def test_the_memory_review_action_makes_cards_due_now_creating_missing_ones(admin_client):
    later = timezone.now() + timedelta(days=30)
    carded = Card.objects.select_related("memory").first()
    Card.objects.filter(pk=carded.pk).update(next_review=later)
    no_card = Memory.objects.filter(card__isnull=True).first()
    before = timezone.now()
    response = _act(admin_client, "review_now", [carded.memory_id, no_card.pk])
    assert "2 cards are due now." in _message(response)
    rescheduled = Card.objects.get(pk=carded.pk)
    assert before <= rescheduled.next_review <= timezone.now()
    assert rescheduled.version == carded.version + 1  # a grade computed before must not win
    created = Card.objects.get(memory=no_card)
    assert before <= created.next_review <= timezone.now()


def test_the_card_review_action_makes_only_the_selected_cards_due_now(admin_client):
    later = timezone.now() + timedelta(days=30)
    Card.objects.update(next_review=later)
    chosen, other = Card.objects.order_by("pk")[:2]
    before = timezone.now()
    response = _act(admin_client, "review_now", [chosen.pk], changelist="review_card")
    assert "1 cards are due now." in _message(response)
    chosen_after = Card.objects.get(pk=chosen.pk)
    assert before <= chosen_after.next_review <= timezone.now()
    assert chosen_after.version == chosen.version + 1
    other_after = Card.objects.get(pk=other.pk)
    assert (other_after.next_review, other_after.version) == (later, other.version)


def test_the_token_revoke_action_revokes_live_tokens_and_keeps_earlier_revocations(
    admin_client, make_token
):
    demo = get_user_model().objects.get(username="demo")
    live, _ = make_token(demo)
    revoked, _ = make_token(demo)
    earlier = timezone.now() - timedelta(days=3)
    ApiToken.objects.filter(pk=revoked.pk).update(revoked_at=earlier)
    untouched, _ = make_token(demo)
    before = timezone.now()
    response = _act(admin_client, "revoke_selected", [live.pk, revoked.pk], "memories_apitoken")
    assert "Revoked 1 tokens." in _message(response)
    live.refresh_from_db()
    revoked.refresh_from_db()
    untouched.refresh_from_db()
    assert before <= live.revoked_at <= timezone.now()
    assert revoked.revoked_at == earlier
    assert untouched.revoked_at is None


def test_admin_edit_goes_through_the_service(admin_client):
    memory = Memory.objects.filter(topic="cooking").first()
    url = reverse("admin:memories_memory_change", args=[memory.pk])
    form = admin_client.get(url).context["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    data = {k: ("" if v is None else v) for k, v in data.items()}
    data["content"] = "Sourdough starter wants flour and water twice a day."
    for inline in ("events-TOTAL_FORMS", "events-INITIAL_FORMS"):
        data[inline] = "0"
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    memory.refresh_from_db()
    assert "flour and water" in memory.content
    assert "flour and water" in memory.search_text
    event = MemoryEvent.objects.get(memory=memory, kind="updated")
    assert event.source == "admin" and "content" in event.after
