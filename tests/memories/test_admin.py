from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from memories.forms import MemoryEditForm
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
    # The demo account is an ordinary user: an administrator looks at its data.
    client.force_login(get_user_model().objects.create_superuser("root", password="pw-root-1"))
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


def _memory_form_data(client, memory) -> tuple[str, dict]:
    url = reverse("admin:memories_memory_change", args=[memory.pk])
    form = client.get(url).context["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    data = {k: ("" if v is None else v) for k, v in data.items()}
    for inline in ("events-TOTAL_FORMS", "events-INITIAL_FORMS"):
        data[inline] = "0"
    return url, data


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("keywords", "[1, 2]"),
        ("keywords", '{"a": 1}'),
        ("keywords", '["a\\u0000b"]'),
        ("keywords", str([f"k{i}" for i in range(51)]).replace("'", '"')),
        ("emotion_tags", "5"),
        ("importance_flags", '"urgent"'),
        ("importance_flags", '["' + "x" * 51 + '"]'),
        ("relevance_score", "1e12"),
        ("content", "word " * 5000),
        ("valid_until", "1990-01-01 00:00:00"),
    ],
    ids=lambda v: str(v)[:20],
)
def test_the_memory_admin_refuses_what_the_api_refuses_as_a_form_error(admin_client, field, value):
    # Each of these was a 500 (the service's ValidationError in save_model) or a stored value
    # the API refuses, which then made the namespace's export impossible to import.
    memory = Memory.objects.filter(topic="cooking").first()
    before = {f.name: getattr(memory, f.name) for f in Memory._meta.concrete_fields}
    url, data = _memory_form_data(admin_client, memory)
    if field == "valid_until":
        data["valid_until_0"], data["valid_until_1"] = value.split(" ")
    else:
        data[field] = value
    response = admin_client.post(url, data)
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    memory.refresh_from_db()
    assert {f.name: getattr(memory, f.name) for f in Memory._meta.concrete_fields} == before


def test_the_dashboard_edit_refuses_content_over_the_limit(admin_client, client, settings):
    # The limit was the textarea's maxlength alone: a form posted without it stored 25,000
    # characters, which the export's import then refused.
    settings.API_MAX_CONTENT_LENGTH = 100
    memory = Memory.objects.filter(topic="cooking").first()
    form = MemoryEditForm(memory=memory)
    data = {name: form[name].value() for name in form.fields}
    data = {k: ("" if v is None else v) for k, v in data.items()}
    data["keywords"] = ", ".join(memory.keywords)
    data["content"] = "x" * 101
    client.force_login(memory.namespace.owner)  # the dashboard is the demo's own
    response = client.post(reverse("memory-update", args=[memory.pk]), data)
    assert b"At most 100 characters" in response.content
    memory.refresh_from_db()
    assert memory.content != "x" * 101


@pytest.mark.parametrize(
    "model",
    [Association, Entity, Relation, Consolidation, ApiToken, Card, ReviewLog],
    ids=lambda m: m.__name__,
)
def test_rows_whose_rules_span_tables_are_view_only_in_the_admin(admin_client, model):
    # A card moved to another namespace showed another user's memory in its queue; a link or
    # relation to another user's memory showed its text; a token given another owner, scope
    # or an undone revocation gave a secret powers nobody granted it. The services write them.
    meta = model._meta
    add = admin_client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_add"))
    assert add.status_code == 403
    row = model.objects.first()
    if row is None:
        return
    change = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[row.pk])
    assert admin_client.get(change).status_code == 200  # still shown
    assert admin_client.post(change, {}).status_code == 403


def test_a_namespace_keeps_its_owner_and_slug_in_the_admin(admin_client):
    namespace = Namespace.objects.get(slug="personal")
    other = get_user_model().objects.create_user("eve", password="pw-eve-123456")
    url = reverse("admin:memories_namespace_change", args=[namespace.pk])
    form = admin_client.get(url).context["adminform"].form
    assert "owner" not in form.fields and "slug" not in form.fields
    data = {name: form[name].value() for name in form.fields}
    data = {k: ("" if v is None else v) for k, v in data.items()}
    data |= {"owner": other.pk, "slug": "stolen", "description": "d" * 2001}
    response = admin_client.post(url, data)
    assert response.status_code == 200
    assert "description" in response.context["adminform"].form.errors
    data["description"] = "Mine."
    data["decay_half_life_days"] = "1e9"
    response = admin_client.post(url, data)
    assert "decay_half_life_days" in response.context["adminform"].form.errors
    data["decay_half_life_days"] = "30"
    assert admin_client.post(url, data).status_code == 302
    namespace.refresh_from_db()
    assert (namespace.owner.username, namespace.slug) == ("demo", "personal")
    assert (namespace.description, namespace.decay_half_life_days) == ("Mine.", 30.0)


def _namespace_add_data(admin_client, **values):
    form = admin_client.get(reverse("admin:memories_namespace_add")).context["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    data = {k: ("" if v is None else v) for k, v in data.items()}
    return data | values


def test_the_admin_adds_a_namespace_through_the_service(admin_client, monkeypatch):
    """Add saved the model directly: the service (namespace_create) and its validators were
    skipped, so a taken slug had Django's words and an empty slug was refused instead of
    made from the name, as the API and dashboard make it."""
    from memories import services

    demo = get_user_model().objects.get(username="demo")
    url = reverse("admin:memories_namespace_add")
    taken = _namespace_add_data(admin_client, owner=demo.pk, name="Again", slug="personal")
    response = admin_client.post(url, taken)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["slug"] == [
        "You already have a namespace with this slug."
    ]
    bad = _namespace_add_data(
        admin_client, owner=demo.pk, name="Out", slug="out", decay_half_life_days="1e9"
    )
    assert "decay_half_life_days" in admin_client.post(url, bad).context["adminform"].form.errors
    assert not Namespace.objects.filter(slug="out").exists()

    calls = []
    create = services.namespace_create
    monkeypatch.setattr(services, "namespace_create", lambda **kw: calls.append(kw) or create(**kw))
    good = _namespace_add_data(admin_client, owner=demo.pk, name="Field Notes", slug="")
    assert admin_client.post(url, good).status_code == 302
    made = Namespace.objects.get(owner=demo, slug="field-notes")
    assert made.name == "Field Notes" and [c["name"] for c in calls] == ["Field Notes"]


def test_a_namespace_added_at_the_same_moment_in_the_admin_is_a_form_error(
    admin_client, monkeypatch
):
    """Two administrators adding the same slug at once: both pass the "already exists?"
    check, and the second insert hits the unique constraint. The service turns it into its
    ValidationError, which the admin let through as a 500; it is the form's error now, in
    the words a sequential duplicate gets, and nothing more is written."""
    from django.db.models import QuerySet

    demo = get_user_model().objects.get(username="demo")
    # The other administrator's namespace, committed after this one's check ran.
    Namespace.objects.create(owner=demo, name="Twin", slug="twin")
    exists = QuerySet.exists
    monkeypatch.setattr(
        QuerySet, "exists", lambda qs: False if qs.model is Namespace else exists(qs)
    )
    url = reverse("admin:memories_namespace_add")
    data = _namespace_add_data(admin_client, owner=demo.pk, name="Twin", slug="twin")
    response = admin_client.post(url, data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["slug"] == [
        "You already have a namespace with this slug."
    ]
    assert Namespace.objects.filter(owner=demo, slug="twin").count() == 1
    # The slug made from the name: the clash is said on the name, as the service says it.
    data = _namespace_add_data(admin_client, owner=demo.pk, name="Twin", slug="")
    response = admin_client.post(url, data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["name"] == [
        "You already have a namespace with this name (slug “twin”)."
    ]


def test_a_refusal_at_the_memory_admins_save_is_a_form_error(admin_client, monkeypatch):
    """The same for every admin that saves through a service: a refusal its write raises
    (a rule the form's check could not see) is said on the form and writes nothing."""
    from memories import services

    memory = Memory.objects.filter(topic="cooking").first()
    before = {f.name: getattr(memory, f.name) for f in Memory._meta.concrete_fields}
    url, data = _memory_form_data(admin_client, memory)
    data["content"] = "Changed at the same moment."

    def refuse(**kwargs):
        raise ValidationError({"content": ["Refused at the write."]})

    monkeypatch.setattr(services, "memory_update", refuse)
    response = admin_client.post(url, data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["content"] == ["Refused at the write."]
    memory.refresh_from_db()
    assert {f.name: getattr(memory, f.name) for f in Memory._meta.concrete_fields} == before
