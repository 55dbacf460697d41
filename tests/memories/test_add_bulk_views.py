"""The Add memory page and the memory list's bulk actions, through the Django test client
(issue 17, item 6): success, field errors, duplicates, the confirmation naming the count,
each action with its history, and ids the person cannot see left out as missing ones."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.auth import Scope
from memories.models import Association, Classification, Memory, MemoryEvent
from review.models import Card
from tests.support.dashboard import HX, add_memories

pytestmark = pytest.mark.django_db

ADD = reverse("memory-add")
CREATE = reverse("memory-create")
BULK = reverse("memory-bulk")


def add(client, namespace, /, content="The staging database is db2.", **fields):
    data = {
        "namespace": namespace.slug,
        "content": content,
        "classification": str(Classification.INTERNAL.value),
        "memory_type": "semantic",
        **fields,
    }
    return client.post(CREATE, data)


def bulk(client, ids, action, *, confirmed=False, extra=None, **params):
    data = {"ids": [str(pk) for pk in ids], "action": action, "next": "/memories/?topic=geo"}
    data.update(params)
    if confirmed:
        data["confirmed"] = "1"
    return client.post(BULK, data, **(extra or {}))


@pytest.fixture
def internal_ceiling(monkeypatch):
    """A person whose ceiling is internal (the dashboard's is restricted): what lies above
    must answer as a missing id does."""
    original = Scope.of.__func__

    def of(cls, request):
        scope = original(cls, request)
        scope.ceiling = Classification.INTERNAL
        return scope

    monkeypatch.setattr(Scope, "of", classmethod(of))


# --- Add memory --------------------------------------------------------------------------


def test_the_nav_and_the_list_link_to_the_add_page_with_the_lists_namespace(
    ada_client, user, personal
):
    add_memories(personal, user, 2)
    listing = ada_client.get(reverse("memory-list"), {"namespace": personal.slug}).content
    assert f'href="{ADD}?namespace={personal.slug}"'.encode() in listing
    page = ada_client.get(ADD, {"namespace": personal.slug})
    body = page.content.decode()
    assert page.status_code == 200
    assert f'<a href="{ADD}" aria-current="page">Add memory</a>' in body
    assert re.search(rf'<option value="{personal.slug}" selected>', body)
    for name in ("content", "cue", "topic", "keywords", "classification", "memory_type"):
        assert f'name="{name}"' in body
    assert 'name="session_id"' in body and 'name="position"' in body
    assert re.search(r'<textarea[^>]*name="content"[^>]*autofocus', body)


def test_adding_a_memory_stores_it_through_the_write_path(ada_client, user, personal):
    response = add(
        ada_client,
        personal,
        "Deploys happen on Tuesdays.",
        cue="When do deploys happen?",
        topic="ops",
        keywords="deploy, schedule ,",
        classification=str(Classification.CONFIDENTIAL.value),
        session_id="chat-1",
        position="3",
    )
    memory = Memory.objects.get(content="Deploys happen on Tuesdays.")
    assert response.status_code == 303
    assert response["Location"] == reverse("memory-detail", args=[memory.pk])
    assert (memory.cue, memory.topic, memory.keywords) == (
        "When do deploys happen?",
        "ops",
        ["deploy", "schedule"],
    )
    assert memory.classification == Classification.CONFIDENTIAL
    assert (memory.memory_type, memory.session_id, memory.position) == ("semantic", "chat-1", 3)
    created = MemoryEvent.objects.get(memory=memory)
    assert (created.kind, created.source, created.actor) == ("created", "dashboard", user)
    assert Card.objects.filter(memory=memory).exists()  # a personal namespace's card
    page = ada_client.get(response["Location"]).content.decode()
    assert f"Memory #{memory.pk} added to Personal." in page


def test_a_second_turn_of_a_session_is_linked_to_the_first(ada_client, personal):
    add(ada_client, personal, "First turn.", session_id="chat-9", position="1")
    add(ada_client, personal, "Second turn.", session_id="chat-9", position="2")
    first, second = (Memory.objects.get(content=c) for c in ("First turn.", "Second turn."))
    assert Association.objects.filter(source=first, target=second, kind="next_turn").exists()


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"content": "   "}, "content", "This field is required."),
        ({"cue": "c" * 301}, "cue", "at most 300 characters"),
        ({"topic": "t" * 101}, "topic", "at most 100 characters"),
        ({"session_id": "s" * 101}, "session_id", "at most 100 characters"),
        ({"position": "-1"}, "position", "greater than or equal to 0"),
        ({"keywords": ",".join(f"k{i}" for i in range(51))}, "keywords", "no more than 50"),
        ({"classification": "9"}, "classification", "Select a valid choice"),
        ({"namespace": "nope"}, "namespace", "Select a valid choice"),
        ({"content": "nul \x00 char"}, "content", "Null characters are not allowed"),
    ],
)
def test_bad_fields_are_named_and_nothing_is_written(
    ada_client, personal, nothing_written, fields, field, message
):
    data = {"content": "A fine memory."} | fields
    with nothing_written():
        response = add(ada_client, personal, **data)
    assert response.status_code == 200
    form = response.context["form"]
    assert field in form.errors, form.errors
    assert message.lower() in " ".join(form.errors[field]).lower()
    body = response.content.decode()
    assert re.search(rf'name="{field}"[^>]*autofocus|autofocus[^>]*name="{field}"', body)


def test_the_apis_content_limit_applies_to_the_add_page(ada_client, personal, settings):
    settings.API_MAX_CONTENT_LENGTH = 100
    response = add(ada_client, personal, "x" * 101)
    assert (
        "At most 100 characters (API_MAX_CONTENT_LENGTH)."
        in response.context["form"].errors["content"]
    )
    assert not Memory.objects.exists()


def test_another_users_namespace_cannot_be_chosen(ada_client, theirs, personal):
    response = add(ada_client, theirs["namespace"], "Into Bob's namespace.")
    assert "namespace" in response.context["form"].errors
    assert f'<option value="{theirs["namespace"].slug}"' not in response.content.decode()
    assert not Memory.objects.filter(content="Into Bob's namespace.").exists()


def test_a_duplicate_says_already_stored_and_links_to_the_memory(ada_client, personal):
    existing = services.memory_create(namespace=personal, content="Paris is in France.")
    response = add(ada_client, personal, "  paris is in FRANCE. ")
    body = response.content.decode()
    assert response.status_code == 200
    assert "Already stored" in body
    assert f'href="{reverse("memory-detail", args=[existing.pk])}"' in body
    assert Memory.objects.count() == 1
    existing.refresh_from_db()
    assert existing.use_count == 1  # the write counted as a use
    assert "errorlist" not in body
    assert response.context["form"]["content"].value() in (None, "")  # ready for the next


def test_the_add_page_without_namespaces_points_to_creating_one(ada_client):
    body = ada_client.get(ADD).content.decode()
    assert 'name="content"' not in body
    assert reverse("namespace-list") in body


# --- Bulk actions: the confirmation ------------------------------------------------------


def test_the_list_has_a_labelled_checkbox_per_row_and_a_select_all(ada_client, user, personal):
    memories = add_memories(personal, user, 3)
    body = ada_client.get(reverse("memory-list")).content.decode()
    for memory in memories:
        assert f'id="select-{memory.pk}"' in body
        assert f'<label for="select-{memory.pk}" class="visually-hidden">Select memory #' in body
        assert f'name="shown" value="{memory.pk}"' in body
    assert '<label for="bulk_all_shown" class="visually-hidden">Select all 3 memories' in body
    assert f'action="{BULK}"' in body and f'hx-post="{BULK}"' in body
    for name, _ in services.bulk_action_choices():
        assert f'<option value="{name}">' in body


def test_the_first_step_names_the_count_and_writes_nothing(
    ada_client, user, personal, nothing_written
):
    memories = add_memories(personal, user, 4)
    ids = [m.pk for m in memories[:3]]
    with nothing_written():
        response = bulk(ada_client, ids, "forget", reason="outdated")
    body = response.content.decode()
    assert response.status_code == 200
    assert '<h2 id="bulk-question">Forget 3 memories?</h2>' in body
    assert ">Forget 3 memories</button>" in body
    for pk in ids:
        assert f'<input type="hidden" name="ids" value="{pk}">' in body
    assert f'value="{memories[3].pk}"' not in body
    assert '<input type="hidden" name="confirmed" value="1">' in body
    assert '<input type="hidden" name="reason" value="outdated">' in body
    assert 'href="/memories/?topic=geo"' in body  # Cancel goes back to the list as it was


def test_with_htmx_the_confirmation_is_a_panel_of_the_list(ada_client, user, personal):
    memories = add_memories(personal, user, 2)
    response = bulk(ada_client, [m.pk for m in memories], "suspend", extra=HX)
    body = response.content.decode()
    assert body.lstrip().startswith('<section class="card bulk-confirm"')
    assert "<html" not in body
    assert "Suspend the cards of 2 memories?" in body


def test_select_all_takes_every_memory_the_page_showed(ada_client, user, personal):
    memories = add_memories(personal, user, 3)
    response = ada_client.post(
        BULK, {"shown": [m.pk for m in memories], "all_shown": "on", "action": "restore"}
    )
    assert response.context["count"] == 3
    assert "Restore 3 memories?" in response.content.decode()


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"action": "forget", "reason": "old"}, "ids", "Select at least one memory."),
        ({"ids": ["abc"], "action": "forget", "reason": "x"}, "ids", "by their numbers"),
        ({"ids": ["0"], "action": "restore"}, "ids", "by their numbers"),
        ({"ids": ["{pk}"], "action": "explode"}, "action", "Select a valid choice"),
        ({"ids": ["{pk}"], "action": "forget", "reason": "  "}, "reason", "Say why"),
        ({"ids": ["{pk}"], "action": "forget", "reason": "r" * 201}, "reason", "At most 200"),
        ({"ids": ["{pk}"], "action": "move", "topic": "t" * 101}, "topic", "at most 100"),
        ({"ids": ["{pk}"], "action": "classify"}, "classification", "Choose a classification"),
        ({"ids": ["{pk}"], "action": "classify", "classification": "7"}, "classification", "valid"),
    ],
)
def test_bad_bulk_input_is_a_400_naming_the_field_and_writes_nothing(
    ada_client, make_memory, nothing_written, data, field, message
):
    memory = make_memory()
    data = {
        k: [v.format(pk=memory.pk) for v in v] if isinstance(v, list) else v
        for k, v in data.items()
    }
    for confirmed in ("", "1"):
        with nothing_written():
            response = ada_client.post(BULK, data | {"confirmed": confirmed})
        assert response.status_code == 400
        errors = response.context["form"].errors
        assert message.lower() in " ".join(errors[field]).lower(), errors
        assert "Nothing was changed" in response.content.decode()
    with nothing_written():
        htmx = ada_client.post(BULK, data, **HX)
    assert htmx.status_code == 200  # htmx swaps 2xx answers only
    assert message.lower() in htmx.content.decode().lower()


def test_a_missing_reason_asks_again_with_the_selection_kept(ada_client, make_memory):
    memory = make_memory()
    body = ada_client.post(BULK, {"ids": [memory.pk], "action": "forget"}).content.decode()
    assert "Say why the memory is forgotten." in body
    assert f'<input type="hidden" name="ids" value="{memory.pk}">' in body
    assert re.search(r'name="reason"[^>]*autofocus|autofocus[^>]*name="reason"', body)


# --- Bulk actions: each action, confirmed ------------------------------------------------


def test_forget_forgets_them_with_the_reason_and_their_history(ada_client, user, personal):
    memories = add_memories(personal, user, 4)
    chosen = memories[:3]
    services.memory_forget(memory=chosen[0], reason="already gone")
    response = bulk(ada_client, [m.pk for m in chosen], "forget", confirmed=True, reason="stale")
    assert response.status_code == 303
    assert response["Location"] == "/memories/?topic=geo"
    rows = Memory.objects.filter(pk__in=[m.pk for m in chosen]).order_by("pk")
    assert [m.status for m in rows] == ["forgotten"] * 3
    assert [m.forgotten_reason for m in rows] == ["already gone", "stale", "stale"]
    assert Memory.objects.get(pk=memories[3].pk).status != "forgotten"
    events = MemoryEvent.objects.filter(kind="forgotten", source="dashboard", actor=user)
    assert sorted(e.memory_ref for e in events) == sorted(m.pk for m in chosen[1:])
    event = events.first()
    assert event.before["status"] in ("active", "promoted")
    assert event.after == {"status": "forgotten", "reason": "stale", "score": None}
    page = ada_client.get(response["Location"]).content.decode()
    assert "Forgot 2 memories. 1 memory needed no change." in page


def test_restore_brings_them_back(ada_client, user, personal):
    memories = add_memories(personal, user, 2)
    for memory in memories:
        services.memory_forget(memory=memory, reason="by mistake")
    Memory.objects.filter(pk=memories[1].pk).update(tier=Memory.Tier.LONG_TERM)
    bulk(ada_client, [m.pk for m in memories], "restore", confirmed=True)
    rows = Memory.objects.filter(pk__in=[m.pk for m in memories]).order_by("pk")
    assert [m.status for m in rows] == ["active", "promoted"]
    assert [m.forgotten_reason for m in rows] == ["", ""]
    events = MemoryEvent.objects.filter(kind="restored").order_by("memory_ref")
    assert [e.after for e in events] == [
        {"status": "active", "storage": "hot"},
        {"status": "promoted", "storage": "hot"},
    ]
    assert events[0].before == {
        "status": "forgotten",
        "forgotten_reason": "by mistake",
        "storage": "hot",
    }


def test_move_sets_the_topic_and_records_it(ada_client, user, personal):
    memories = add_memories(personal, user, 3)
    bulk(ada_client, [m.pk for m in memories], "move", confirmed=True, topic=" travel ")
    assert set(Memory.objects.values_list("topic", flat=True)) == {"travel"}
    events = MemoryEvent.objects.filter(kind="updated", source="dashboard")
    assert len(events) == 3
    assert {e.before["topic"] for e in events} == {"geo", "history"}
    assert {tuple(e.after.items()) for e in events} == {(("topic", "travel"),)}


def test_classify_raises_the_level_and_what_was_drawn_from_them(ada_client, user, personal):
    memories = add_memories(personal, user, 2)
    relation = services.relation_create(
        namespace=personal, subject="a", predicate="knows", object="b", memory=memories[0]
    )
    response = bulk(
        ada_client,
        [m.pk for m in memories],
        "classify",
        confirmed=True,
        classification=str(Classification.RESTRICTED.value),
    )
    assert response.status_code == 303
    assert set(Memory.objects.values_list("classification", flat=True)) == {
        Classification.RESTRICTED
    }
    relation.refresh_from_db()
    assert relation.classification == Classification.RESTRICTED
    event = MemoryEvent.objects.filter(kind="updated").first()
    assert event.before == {"classification": "internal"}
    assert event.after == {"classification": "restricted"}
    assert event.classification == Classification.RESTRICTED


def test_the_card_actions_change_the_cards(ada_client, user, personal):
    memories = add_memories(personal, user, 3)
    ids = [m.pk for m in memories]
    cards = Card.objects.filter(memory_id__in=ids)

    bulk(ada_client, ids, "suspend", confirmed=True)
    assert cards.filter(suspended_at__isnull=False).count() == 3
    bulk(ada_client, ids[:2], "unsuspend", confirmed=True)
    assert cards.filter(suspended_at__isnull=False).count() == 1
    bulk(ada_client, ids, "bury", confirmed=True)
    assert cards.filter(buried_until__gt=timezone.now()).count() == 3
    bulk(ada_client, ids, "unbury", confirmed=True)
    assert cards.filter(buried_until__isnull=False).count() == 0
    before = timezone.now()
    response = bulk(ada_client, ids, "review_now", confirmed=True)
    assert all(before <= c.next_review <= timezone.now() for c in cards)
    page = ada_client.get(response["Location"]).content.decode()
    assert "3 cards due now." in page
    assert not MemoryEvent.objects.filter(source="dashboard").exists()  # as a single card


# --- Ids the person cannot see -----------------------------------------------------------


def test_another_users_ids_are_left_out_as_missing_ones(ada_client, user, personal, theirs):
    mine = add_memories(personal, user, 2)
    bobs = theirs["memory"]
    missing = Memory.objects.order_by("-pk").first().pk + 100
    ids = [mine[0].pk, bobs.pk, missing, mine[1].pk]
    confirm = bulk(ada_client, ids, "forget", reason="cleanup")
    body = confirm.content.decode()
    assert "Forget 2 memories?" in body
    assert f'name="ids" value="{bobs.pk}"' not in body and "Bob&#x27;s secret" not in body
    bulk(ada_client, ids, "forget", confirmed=True, reason="cleanup")
    bobs.refresh_from_db()
    assert bobs.status == "active"
    assert not MemoryEvent.objects.filter(memory_ref=bobs.pk, kind="forgotten").exists()
    assert Memory.objects.filter(pk__in=[m.pk for m in mine], status="forgotten").count() == 2
    # Only ids the person cannot see: exactly the answer to an id that does not exist.
    theirs_only = bulk(ada_client, [bobs.pk], "suspend", confirmed=True)
    nobodys = bulk(ada_client, [missing], "suspend", confirmed=True)
    assert theirs_only.status_code == nobodys.status_code == 400
    assert theirs_only.context["form"].errors == nobodys.context["form"].errors
    assert Card.objects.get(memory=bobs).suspended_at is None


def test_ids_above_the_ceiling_are_left_out_as_missing_ones(
    ada_client, personal, make_memory, internal_ceiling
):
    visible = make_memory("An internal fact.", classification=Classification.INTERNAL)
    secret = make_memory("A restricted fact.", classification=Classification.RESTRICTED)
    missing = secret.pk + 100
    body = bulk(ada_client, [visible.pk, secret.pk], "forget", reason="x").content.decode()
    assert "Forget 1 memory?" in body and "A restricted fact" not in body
    bulk(ada_client, [visible.pk, secret.pk], "suspend", confirmed=True)
    assert Card.objects.get(memory=secret).suspended_at is None
    assert Card.objects.get(memory=visible).suspended_at is not None
    above = bulk(ada_client, [secret.pk], "forget", confirmed=True, reason="x")
    nothing = bulk(ada_client, [missing], "forget", confirmed=True, reason="x")
    assert above.status_code == nothing.status_code == 400
    assert above.context["form"].errors == nothing.context["form"].errors
    secret.refresh_from_db()
    assert secret.status == "active"
    # Nor can a level above the ceiling be set.
    refused = bulk(
        ada_client,
        [visible.pk],
        "classify",
        confirmed=True,
        classification=str(Classification.RESTRICTED.value),
    )
    assert refused.status_code == 400 and "classification" in refused.context["form"].errors
    visible.refresh_from_db()
    assert visible.classification == Classification.INTERNAL


def test_an_error_while_acting_writes_nothing(ada_client, user, personal, monkeypatch):
    memories = add_memories(personal, user, 3)

    def broken(events):
        raise RuntimeError("webhooks down")

    monkeypatch.setattr("memories.services.bulk_actions.memory_events_announce", broken)
    ada_client.raise_request_exception = True
    with pytest.raises(RuntimeError):
        bulk(ada_client, [m.pk for m in memories], "forget", confirmed=True, reason="x")
    assert not Memory.objects.filter(status="forgotten").exists()
    assert not MemoryEvent.objects.filter(kind="forgotten").exists()


def test_a_selection_of_forgotten_memories_survives_the_lists_default_filter(
    ada_client, user, personal
):
    memories = add_memories(personal, user, 2)
    services.memory_forget(memory=memories[0], reason="x", now=timezone.now() - timedelta(days=1))
    listing = ada_client.get(reverse("memory-list"), {"status": "forgotten"}).content.decode()
    assert f'name="ids" value="{memories[0].pk}"' in listing


# --- Login and methods -------------------------------------------------------------------


@pytest.mark.parametrize("url", [ADD, reverse("card-browser")])
def test_the_new_pages_need_a_login(client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next={url}"


@pytest.mark.parametrize("url", [CREATE, BULK])
def test_the_new_writes_need_a_login_and_a_post(client, user, url, nothing_written):
    with nothing_written():
        assert (
            client.post(url, {"content": "x", "ids": ["1"], "action": "forget"}).status_code == 302
        )
    client.force_login(user)
    assert client.get(url).status_code == 405
