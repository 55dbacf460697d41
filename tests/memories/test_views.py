"""memories' pages: the memory list and page, edits through the services, namespaces, tokens."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.auth import Scope
from memories.models import ApiToken, Classification, Memory, MemoryEvent, Namespace
from tests.support.dashboard import HX, add_memories, memory_with_history, namespace_form_data

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
    # The keyboard lands on the mistake, and only there (it may be below the fold).
    body = response.content.decode()
    assert body.count("autofocus") == 1
    assert re.search(r'<input[^>]*name="strength"[^>]*autofocus', body)
    memory.refresh_from_db()
    assert memory.strength == 1.0
    assert not MemoryEvent.objects.filter(kind=MemoryEvent.Kind.UPDATED).exists()

    data.update(strength="1", valid_from="2026-05-02T10:00", valid_until="2026-05-01T10:00")
    with nothing_written():
        response = ada_client.post(reverse("memory-update", args=[memory.pk]), data)
    (message,) = response.context["form"].errors["valid_until"]
    assert message == "Must not be before “Valid from”."
    assert message in response.content.decode()


def test_forget_restore_and_boost(ada_client, personal, nothing_written):
    memory = services.memory_create(namespace=personal, content="Fleeting")
    detail = reverse("memory-detail", args=[memory.pk])
    with nothing_written():
        response = ada_client.post(reverse("memory-forget", args=[memory.pk]), {"reason": " "})
    memory.refresh_from_db()
    assert memory.status == Memory.Status.ACTIVE  # the service wants a reason
    # The page again, the refusal on the reason's field and the keyboard there.
    assert response.status_code == 200
    (error,) = response.context["forget_form"].errors["reason"]
    assert error.startswith("Say why")
    body = response.content.decode()
    assert body.count("autofocus") == 1
    assert re.search(r'<input[^>]*name="reason"[^>]*autofocus', body)

    ada_client.post(reverse("memory-forget", args=[memory.pk]), {"reason": "obsolete"})
    memory.refresh_from_db()
    assert memory.status == Memory.Status.FORGOTTEN and memory.forgotten_reason == "obsolete"
    assert "obsolete" in ada_client.get(detail).content.decode()

    ada_client.post(reverse("memory-restore", args=[memory.pk]))
    memory.refresh_from_db()
    assert memory.status == Memory.Status.ACTIVE

    Memory.objects.filter(pk=memory.pk).update(last_used_at=timezone.now() - timedelta(days=3))
    boosted = ada_client.post(reverse("memory-boost", args=[memory.pk]))
    memory.refresh_from_db()
    assert memory.strength == pytest.approx(1.1) and memory.use_count == 1
    assert MemoryEvent.objects.filter(memory=memory, kind="touched", source="dashboard").exists()
    # The message says what changed and why: 0.5 (one half-life) -> 1.1 x 2^0.6 = 1.67.
    said = messages_of(ada_client.get(boosted["Location"]))[-1]
    assert "one more use (0 → 1)" in said and "strength 1.00 → 1.10" in said
    assert "0.50 → 1.67" in said and "(n+1)^0.6" in said


def test_next_never_leaves_the_site(ada_client, personal):
    memory = services.memory_create(namespace=personal, content="Stay")
    response = ada_client.post(
        reverse("memory-boost", args=[memory.pk]), {"next": "https://evil.example/"}
    )
    assert response["Location"] == reverse("memory-detail", args=[memory.pk])


# --- Superseding ------------------------------------------------------------------------


@pytest.fixture
def deadlines(personal):
    """Two facts that contradict each other, the older then the newer, worded apart enough
    not to be near-duplicates (which recall would show as one result)."""
    now = timezone.now()
    old = services.memory_create(
        namespace=personal,
        content="The release deadline is May 5",
        topic="release",
        created_at=now - timedelta(days=2),
    )
    new = services.memory_create(
        namespace=personal, content="Release deadline moved: May 12 now", topic="release"
    )
    return old, new


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def test_the_search_page_offers_to_supersede_the_older_of_two_conflicting_results(
    ada_client, user, deadlines
):
    old, new = deadlines
    search = reverse("search") + "?q=release+deadline"
    page = ada_client.get(search)
    body = page.content.decode()
    assert f"Conflicts with another result (memory {new.pk}, newer)" in body
    assert f"Supersede memory {old.pk} with {new.pk}" in body
    assert f'action="{reverse("memory-supersede", args=[new.pk])}"' in body

    response = ada_client.post(
        reverse("memory-supersede", args=[new.pk]), {"old": old.pk, "next": search}
    )
    assert response.status_code == 303 and response["Location"] == search
    old.refresh_from_db()
    new.refresh_from_db()
    assert old.valid_until == new.valid_from and old.status == Memory.Status.ACTIVE
    event = MemoryEvent.objects.get(memory=old, kind=MemoryEvent.Kind.SUPERSEDED)
    assert event.after["superseded_by"] == new.pk
    assert (event.source, event.actor) == ("dashboard", user)
    after = ada_client.get(search)
    assert messages_of(after) == [f"Memory #{old.pk} superseded by memory #{new.pk}."]
    assert [row["hit"].memory_id for row in after.context["rows"]] == [new.pk]


def test_a_memory_page_marks_it_superseded_by_a_typed_number(ada_client, deadlines):
    old, new = deadlines
    detail = reverse("memory-detail", args=[old.pk])
    assert 'name="new"' in ada_client.get(detail).content.decode()
    response = ada_client.post(reverse("memory-superseded-by", args=[old.pk]), {"new": new.pk})
    assert response.status_code == 303 and response["Location"] == detail
    old.refresh_from_db()
    assert old.valid_until is not None
    page = ada_client.get(detail)
    body = page.content.decode()
    assert "Superseded on " in body
    assert f'by <a href="{reverse("memory-detail", args=[new.pk])}">memory #{new.pk}</a>' in body
    assert 'name="new"' not in body  # no second supersede offered
    assert messages_of(page) == [f"Memory #{old.pk} superseded by memory #{new.pk}."]
    # Without a button, the newer memory's page goes on as before.
    assert (
        "Superseded on"
        not in ada_client.get(reverse("memory-detail", args=[new.pk])).content.decode()
    )


def test_a_memory_ended_by_hand_names_no_successor(ada_client, deadlines):
    old, _ = deadlines
    services.memory_update(memory=old, changes={"valid_until": timezone.now()})
    body = ada_client.get(reverse("memory-detail", args=[old.pk])).content.decode()
    assert "Superseded on " in body and "by <a" not in body.split("Superseded on ")[1][:200]


def _states(body: str, where: str) -> list[str]:
    """The data-state badges in the part of the page after `where`'s first match."""
    part = body[body.index(where) :]
    part = part[: part.index("</h1>")] if where == "<h1>" else part[: part.index("</tr>")]
    return re.findall(r'data-state="([a-z]+)"', part)


@pytest.mark.parametrize(
    ("status", "storage", "superseded", "expected"),
    [
        ("active", "hot", False, ["active"]),
        ("active", "hot", True, ["superseded"]),
        ("promoted", "hot", True, ["superseded"]),
        ("promoted", "cold", False, ["promoted", "cold"]),
        ("forgotten", "hot", True, ["forgotten", "superseded"]),
        ("forgotten", "hot", False, ["forgotten"]),
        ("archived", "cold", False, ["archived"]),
    ],
)
def test_the_memory_page_and_list_show_its_real_state(
    ada_client, deadlines, status, storage, superseded, expected
):
    """A superseded memory showed an "Active" badge on its page: its status without its
    validity. Every status, cold storage and an ended validity are said the same way on the
    page and on the list (templates/memories/_status.html)."""
    old, new = deadlines
    if superseded:
        services.memories_supersede(new=new, old=[old])
    Memory.objects.filter(pk=old.pk).update(status=status, storage=storage)
    body = ada_client.get(reverse("memory-detail", args=[old.pk])).content.decode()
    assert _states(body, "<h1>") == expected
    heading = body[body.index("<h1>") : body.index("</h1>")]
    successor = f'<a href="{reverse("memory-detail", args=[new.pk])}">memory #{new.pk}</a>'
    assert (successor in heading) is superseded
    listed = ada_client.get(reverse("memory-list"), {"status": "any", "include_superseded": "on"})
    listed = listed.content.decode()
    assert _states(listed, f'href="{reverse("memory-detail", args=[old.pk])}"') == expected


def test_a_successor_the_viewer_cannot_see_is_not_linked(ada_client, deadlines):
    old, new = deadlines
    services.memories_supersede(new=new, old=[old])
    Memory.objects.filter(pk=new.pk).delete()  # purged: nothing to link to
    body = ada_client.get(reverse("memory-detail", args=[old.pk])).content.decode()
    heading = body[body.index("<h1>") : body.index("</h1>")]
    assert _states(body, "<h1>") == ["superseded"] and "<a " not in heading


@pytest.mark.parametrize(
    ("cue", "kind", "shown"),
    [
        ("When is the release?", "cue", "When is the release?"),
        ("", "first_line", "release: The release deadline is May 5"),
    ],
)
def test_the_memory_page_shows_what_its_card_asks(ada_client, deadlines, cue, kind, shown):
    """The review schedule showed the card's dates but not its front, the question review
    asks (review.selectors.card_front: the cue, else the namespace's kind of front)."""
    old, _ = deadlines
    old.namespace.card_front = Namespace.CardFront.FIRST_LINE
    old.namespace.save(update_fields=["card_front"])
    services.memory_update(memory=old, changes={"cue": cue})
    body = ada_client.get(reverse("memory-detail", args=[old.pk])).content.decode()
    asks = re.search(r'<dd class="card-front" data-card-front="([a-z_]+)">(.*?)</dd>', body, re.S)
    assert asks is not None and asks.group(1) == kind and shown in asks.group(2)


@pytest.mark.parametrize("case", ["itself", "cycle", "other namespace", "later", "not a number"])
def test_a_refused_supersede_says_why_and_writes_nothing(
    ada_client, user, personal, deadlines, nothing_written, case
):
    old, new = deadlines
    url, data = reverse("memory-supersede", args=[new.pk]), {"old": old.pk}
    expected = f"Memory #{old.pk} was not superseded: "
    if case == "itself":
        # Typed on the memory's page: the page again, the refusal on the field.
        url, data = reverse("memory-superseded-by", args=[old.pk]), {"new": old.pk}
        with nothing_written():
            response = ada_client.post(url, data)
        assert response.status_code == 200
        form = response.context["superseded_by_form"]
        assert form.errors["new"] == ["A memory cannot supersede itself."]
        field = rf'<input[^>]*name="new"[^>]*value="{old.pk}"[^>]*autofocus'
        assert re.search(field, response.content.decode())
        return
    elif case == "cycle":
        services.memories_supersede(new=new, old=[old])
        url, data = reverse("memory-supersede", args=[old.pk]), {"old": new.pk}
        expected = f"Memory #{new.pk} was not superseded: That would make a cycle of replacements."
    elif case == "other namespace":
        elsewhere = services.namespace_create(owner=user, name="Elsewhere", mode="personal")
        other = services.memory_create(namespace=elsewhere, content="The deadline is May 9")
        data = {"old": other.pk}
        expected = f"Memory #{other.pk} was not superseded: Must be a memory of the same namespace."
    elif case == "later":
        url, data = reverse("memory-supersede", args=[old.pk]), {"old": new.pk}
        expected = (
            f"Memory #{new.pk} was not superseded: "
            f"Memory #{new.pk} is valid only from a later time than the memory that would "
            "replace it."
        )
    else:
        data = {"old": "twelve"}
        expected = "Name the memory it replaces by its number."
    with nothing_written():
        response = ada_client.post(url, data)
    assert response.status_code == 303
    assert messages_of(ada_client.get(response["Location"])) == [expected]


def test_supersede_answers_404_for_another_users_memory(
    ada_client, deadlines, theirs, nothing_written
):
    """Another user's memory in the address is a 404; typed in the form, it is refused on
    the page exactly as a number no memory has (nothing tells the two apart)."""
    old, new = deadlines
    bobs = theirs["memory"]
    missing = bobs.pk + 1000
    for url in (
        reverse("memory-supersede", args=[bobs.pk]),
        reverse("memory-superseded-by", args=[bobs.pk]),
    ):
        with nothing_written():
            assert ada_client.post(url, {"old": old.pk, "new": new.pk}).status_code == 404, url
    typed = [
        (reverse("memory-supersede", args=[new.pk]), "old"),
        (reverse("memory-superseded-by", args=[old.pk]), "new"),
    ]
    for url, field in typed:
        answers = []
        for pk in (bobs.pk, missing):
            with nothing_written():
                response = ada_client.post(url, {field: pk})
            if response.status_code == 303:  # from recall's conflict button: a message
                answers.append(messages_of(ada_client.get(response["Location"])))
            else:  # typed on the memory's page: on the field
                assert response.status_code == 200
                answers.append(response.context["superseded_by_form"].errors["new"])
        assert answers == [
            [f"There is no memory #{bobs.pk} of yours."],
            [f"There is no memory #{missing} of yours."],
        ]


def test_supersede_answers_404_for_a_memory_above_the_viewers_ceiling(
    ada_client, personal, deadlines, monkeypatch, nothing_written
):
    """A person sees every level today; a viewer whose scope stops lower (as in
    tests/review/test_views_ceiling.py) cannot reach a restricted memory either way."""
    old, _ = deadlines
    secret = services.memory_create(
        namespace=personal,
        content="The release deadline is May 20",
        classification=Classification.RESTRICTED,
    )
    original = Scope.of.__func__

    def lowered(cls, request):
        scope = original(cls, request)
        scope.ceiling = Classification.INTERNAL
        return scope

    monkeypatch.setattr(Scope, "of", classmethod(lowered))
    with nothing_written():
        url = reverse("memory-supersede", args=[secret.pk])
        assert ada_client.post(url, {"old": old.pk}).status_code == 404
    with nothing_written():
        url = reverse("memory-superseded-by", args=[old.pk])
        response = ada_client.post(url, {"new": secret.pk})
    assert response.status_code == 200
    refusal = [f"There is no memory #{secret.pk} of yours."]
    assert response.context["superseded_by_form"].errors["new"] == refusal


def test_supersede_is_a_post(ada_client, deadlines):
    old, new = deadlines
    assert (
        ada_client.get(reverse("memory-supersede", args=[new.pk]), {"old": old.pk}).status_code
        == 405
    )
    assert ada_client.get(reverse("memory-superseded-by", args=[old.pk])).status_code == 405


# --- Near-duplicates ----------------------------------------------------------------------

PARIS = "User lives in Paris."
PARIS_AGAIN = "The user lives in Paris."  # a near-duplicate of PARIS (0.83)
PARIS_NOW = "The user lives in Paris now."  # near PARIS_AGAIN (0.73), not PARIS (0.60)
BERLIN = "User lives in Berlin."  # not a near-duplicate of PARIS (0.46)


@pytest.fixture
def paris(personal, committed):
    """A memory with two near-duplicates (one of them reached over the other) and an
    unrelated memory: (kept, [members], berlin), linked by the worker."""
    now = timezone.now()
    with committed():
        kept = services.memory_create(
            namespace=personal, content=PARIS, created_at=now - timedelta(days=3)
        )
        again = services.memory_create(
            namespace=personal, content=PARIS_AGAIN, created_at=now - timedelta(days=2)
        )
        later = services.memory_create(namespace=personal, content=PARIS_NOW)
        berlin = services.memory_create(namespace=personal, content=BERLIN)
    assert services.near_group(kept, ceiling=Classification.RESTRICTED) == [again, later]
    return kept, [again, later], berlin


def near_listed(response) -> list[int]:
    return [memory.pk for memory in response.context["near_duplicates"]]


def test_a_memory_page_lists_its_near_duplicates_and_merges_them(ada_client, user, paris):
    kept, members, berlin = paris
    detail = reverse("memory-detail", args=[kept.pk])
    page = ada_client.get(detail)
    body = page.content.decode()
    assert near_listed(page) == [m.pk for m in members]
    for member in members:
        assert f'data-near-duplicate="{member.pk}"' in body
        assert f'href="{reverse("memory-detail", args=[member.pk])}">{member.content}</a>' in body
    assert f'data-near-duplicate="{berlin.pk}"' not in body
    assert f"strength {members[0].strength:.2f}" in body
    assert f'action="{reverse("memory-merge", args=[kept.pk])}"' in body
    assert "Merge 2 into this memory" in body
    assert "They leave recall, lists and review; their history stays; nothing is deleted." in body
    # The unrelated memory has none: no card.
    assert "Near-duplicates" not in (
        ada_client.get(reverse("memory-detail", args=[berlin.pk])).content.decode()
    )

    response = ada_client.post(reverse("memory-merge", args=[kept.pk]))
    assert response.status_code == 303 and response["Location"] == detail
    after = ada_client.get(detail)
    assert messages_of(after) == [f"Merged 2 memories into memory #{kept.pk}."]
    assert near_listed(after) == [] and "Near-duplicates" not in after.content.decode()
    for member in members:
        member.refresh_from_db()
        assert member.valid_until is not None and member.status == Memory.Status.ACTIVE
        event = MemoryEvent.objects.get(memory=member, kind=MemoryEvent.Kind.MERGED)
        assert event.after["merged_into"] == kept.pk
        assert (event.source, event.actor) == ("dashboard", user)
        # Its history stays, and its page still answers.
        assert MemoryEvent.objects.filter(memory=member, kind="created").exists()
        assert ada_client.get(reverse("memory-detail", args=[member.pk])).status_code == 200
    event = MemoryEvent.objects.get(memory=kept, kind=MemoryEvent.Kind.MERGED)
    assert sorted(event.after["merged"]) == [m.pk for m in members]
    assert (event.source, event.actor) == ("dashboard", user)
    kept.refresh_from_db()
    assert kept.valid_until is None
    listed = [row["memory"].pk for row in ada_client.get(reverse("memory-list")).context["rows"]]
    assert sorted(listed) == sorted([kept.pk, berlin.pk])


def test_merging_one_says_memory_and_next_returns_where_you_came_from(
    ada_client, personal, committed
):
    with committed():
        kept = services.memory_create(namespace=personal, content=PARIS)
        again = services.memory_create(namespace=personal, content=PARIS_AGAIN)
    page = ada_client.get(reverse("memory-detail", args=[again.pk]))
    assert near_listed(page) == [kept.pk] and "Merge 1 into this memory" in page.content.decode()
    back = reverse("memory-list")
    response = ada_client.post(reverse("memory-merge", args=[again.pk]), {"next": back})
    assert response.status_code == 303 and response["Location"] == back
    assert messages_of(ada_client.get(back)) == [f"Merged 1 memory into memory #{again.pk}."]
    kept.refresh_from_db()
    assert kept.valid_until is not None


def test_merging_twice_says_there_is_nothing_to_merge(ada_client, paris, nothing_written):
    kept, _, _ = paris
    url = reverse("memory-merge", args=[kept.pk])
    assert ada_client.post(url).status_code == 303
    ada_client.get(reverse("memory-detail", args=[kept.pk]))  # the first message is read
    with nothing_written():
        response = ada_client.post(url)
    assert response.status_code == 303
    assert messages_of(ada_client.get(response["Location"])) == ["Nothing to merge."]


def test_a_member_above_the_kept_memorys_level_is_neither_listed_nor_merged(
    ada_client, personal, committed
):
    with committed():
        kept = services.memory_create(
            namespace=personal, content=PARIS, classification=Classification.INTERNAL
        )
        public = services.memory_create(
            namespace=personal, content="User lives in Paris!", classification=Classification.PUBLIC
        )
        secret = services.memory_create(
            namespace=personal, content=PARIS_AGAIN, classification=Classification.CONFIDENTIAL
        )
    page = ada_client.get(reverse("memory-detail", args=[kept.pk]))
    assert near_listed(page) == [public.pk]
    assert f'data-near-duplicate="{secret.pk}"' not in page.content.decode()
    response = ada_client.post(reverse("memory-merge", args=[kept.pk]))
    assert messages_of(ada_client.get(response["Location"])) == [
        f"Merged 1 memory into memory #{kept.pk}."
    ]
    secret.refresh_from_db()
    public.refresh_from_db()
    assert secret.valid_until is None and public.valid_until is not None
    assert not MemoryEvent.objects.filter(memory=secret, kind=MemoryEvent.Kind.MERGED).exists()
    # From the more sensitive side, the less sensitive memory can be taken in.
    assert near_listed(ada_client.get(reverse("memory-detail", args=[secret.pk]))) == [kept.pk]


@pytest.mark.parametrize("state", ["superseded", "forgotten"])
def test_a_superseded_or_forgotten_memory_takes_in_nothing(
    ada_client, paris, nothing_written, state
):
    kept, members, _ = paris
    if state == "superseded":
        services.memory_update(memory=kept, changes={"valid_until": timezone.now()})
    else:
        services.memory_forget(memory=kept, reason="wrong")
    page = ada_client.get(reverse("memory-detail", args=[kept.pk]))
    body = page.content.decode()
    assert near_listed(page) == [m.pk for m in members]  # still shown, to find them
    assert "into this memory" not in body
    assert "Only a live, current memory can take in its near-duplicates." in body
    with nothing_written():
        response = ada_client.post(reverse("memory-merge", args=[kept.pk]))
    assert response.status_code == 303
    assert messages_of(ada_client.get(response["Location"])) == [
        "Nothing was merged: Only a live, current memory can take in its near-duplicates."
    ]


def test_merge_answers_404_for_another_users_memory(ada_client, paris, theirs, nothing_written):
    with nothing_written():
        response = ada_client.post(reverse("memory-merge", args=[theirs["memory"].pk]))
    assert response.status_code == 404


def test_merge_answers_404_for_a_memory_above_the_viewers_ceiling(
    ada_client, personal, paris, monkeypatch, nothing_written
):
    """As for superseding: a viewer whose scope stops lower cannot merge into a restricted
    memory, nor learn of it."""
    secret = services.memory_create(
        namespace=personal, content="User lives in Paris!", classification=Classification.RESTRICTED
    )
    original = Scope.of.__func__

    def lowered(cls, request):
        scope = original(cls, request)
        scope.ceiling = Classification.INTERNAL
        return scope

    monkeypatch.setattr(Scope, "of", classmethod(lowered))
    with nothing_written():
        assert ada_client.post(reverse("memory-merge", args=[secret.pk])).status_code == 404
    assert ada_client.get(reverse("memory-detail", args=[secret.pk])).status_code == 404
    kept, members, _ = paris
    page = ada_client.get(reverse("memory-detail", args=[kept.pk]))
    assert near_listed(page) == [m.pk for m in members]
    assert f'data-near-duplicate="{secret.pk}"' not in page.content.decode()


def test_merge_is_a_post(ada_client, paris, nothing_written):
    kept, _, _ = paris
    with nothing_written():
        assert ada_client.get(reverse("memory-merge", args=[kept.pk])).status_code == 405


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
            "decay_fit": "suggest",
            "card_front": "cloze",
            "leech_threshold": "8",
        },
    )
    namespace = Namespace.objects.get(owner=user)
    assert namespace.decay_fit == "suggest"
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
            namespace_form_data(name="Agent 42", desired_retention="2", decay_beta="-5"),
        )
    assert again.status_code == 200
    # Every mistake in one round: the taken slug did not hide the settings out of range.
    # The slug was made from the name: the clash is said on the name.
    assert set(again.context["form"].errors) == {"name", "desired_retention", "decay_beta"}
    assert again.context["form"].errors["name"] == [
        "You already have a namespace with this name (slug “agent-42”)."
    ]
    assert Namespace.objects.filter(owner=user).count() == 1
    # The page says the ranges and the settings' names as words.
    body = again.content.decode()
    assert re.search(r'<input[^>]*name="desired_retention"[^>]*min="0.7"[^>]*max="0.99"', body)
    assert re.search(r'<input[^>]*name="decay_beta"[^>]*min="0.0"[^>]*max="2.0"', body)
    assert ">Similarity weight</label>" in body and " SM-2 modifiers</label>" in body


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


def test_namespace_settings_say_every_mistake_in_one_answer(ada_client, personal, nothing_written):
    # Only the new-cards error came back; the four others a round later each, once the
    # form passed and the service checked the model's ranges.
    form = ada_client.get(reverse("namespace-detail", args=[personal.slug])).context["form"]
    data = {
        name: form[name].value() if form[name].value() is not None else "" for name in form.fields
    }
    data.update(
        new_cards_per_day="-3",
        desired_retention="1.5",
        leech_threshold="0",
        decay_half_life_days="-1",
        weight_recency="99",
    )
    with nothing_written():
        bad = ada_client.post(reverse("namespace-update", args=[personal.slug]), data)
    assert bad.status_code == 200
    assert set(bad.context["form"].errors) >= {
        "new_cards_per_day",
        "desired_retention",
        "leech_threshold",
        "decay_half_life_days",
        "weight_recency",
    }


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
    # The service's words name the API field; the page says the label a person sees.
    (message,) = response.context["form"].errors["namespaces"]
    assert message == "Choose at least one namespace, or “All namespaces”."
    assert message in response.content.decode()
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
    with nothing_written():
        both = ada_client.post(
            reverse("token-create"),
            {
                "name": "x",
                "namespaces": [personal.slug],
                "all_namespaces": "on",
                "access": "read",
                "ceiling": "1",
            },
        )
    assert both.context["form"].errors["namespaces"] == [
        "Choose some namespaces or “All namespaces”, not both."
    ]


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


def test_the_memory_page_says_when_it_will_be_forgotten_and_what_keeps_it(ada_client, personal):
    now = timezone.now()
    fading = services.memory_create(namespace=personal, content="Parking on level 3, row F")
    Memory.objects.filter(pk=fading.pk).update(last_used_at=now - timedelta(days=1))
    body = ada_client.get(reverse("memory-detail", args=[fading.pk])).content.decode()
    assert "When it will be forgotten" in body
    # Defaults: 3-day half-life, beta 0.6, forget under 0.05: 3 log2(20) = 12.97 days from
    # its last use, one of which has passed.
    forget_at = now - timedelta(days=1) + timedelta(days=12.966)
    assert forget_at.strftime("%Y-%m-%d") in body  # the <time datetime=...>
    assert "adds about <strong>2.8 days</strong>" in body  # 14.77 - (12.97 - 1)
    assert "exponential decay (half-life 3 days, use exponent beta 0.6)" in body
    assert "the service's defaults" in body

    Namespace.objects.filter(pk=personal.pk).update(decay_half_life_days=14.0)
    body = ada_client.get(reverse("memory-detail", args=[fading.pk])).content.decode()
    assert "half-life 14 days" in body and "set on the namespace" in body

    Memory.objects.filter(pk=fading.pk).update(last_used_at=now - timedelta(days=400))
    body = ada_client.get(reverse("memory-detail", args=[fading.pk])).content.decode()
    assert "the next decay sweep forgets it" in body

    Memory.objects.filter(pk=fading.pk).update(tier=Memory.Tier.LONG_TERM)
    body = ada_client.get(reverse("memory-detail", args=[fading.pk])).content.decode()
    assert "Never by decay: only short-term memories are forgotten" in body
    assert "adds about" not in body


def test_an_empty_memory_list_says_what_to_do_next(ada_client, user):
    from memories.models import Namespace

    url = reverse("memory-list")
    assert not Namespace.objects.filter(owner=user).exists()
    assert "create a namespace" in ada_client.get(url).content.decode()
    services.namespace_create(owner=user, name="Notes", mode="personal")
    body = ada_client.get(url).content.decode()
    assert "No memories yet." in body and reverse("memory-add") in body
    filtered = ada_client.get(url, {"topic": "nothing-here"}).content.decode()
    assert "No memories match these filters." in filtered


def test_a_name_that_makes_no_slug_asks_for_one(ada_client, user, nothing_written):
    """A name of no a-z or digits ("東京") gives no slug: the form says to choose one,
    not that a field the person left empty "cannot be blank"; with a slug it is created."""
    data = namespace_form_data(name="東京")
    with nothing_written():
        response = ada_client.post(reverse("namespace-create"), data)
    assert response.context["form"].errors == {
        "slug": ["Choose a slug (a-z, digits, -): none can be made from this name."]
    }
    created = ada_client.post(reverse("namespace-create"), {**data, "slug": "tokyo"})
    assert created.status_code == 303
    assert Namespace.objects.get(owner=user, slug="tokyo").name == "東京"


@pytest.mark.parametrize("state", ["forgotten", "ended"])
def test_a_memory_is_not_replaced_by_one_that_is_not_in_force(
    ada_client, deadlines, nothing_written, state
):
    # One mistyped number replaced a live fact by a forgotten memory: recall then had
    # neither, and nothing undoes a supersede.
    old, new = deadlines
    if state == "forgotten":
        services.memory_forget(memory=new, reason="test")
        words = f"Memory #{new.pk} is forgotten: restore it before it replaces another."
    else:
        services.memory_update(memory=new, changes={"valid_until": timezone.now()})
        words = f"Memory #{new.pk} is no longer valid itself, so it cannot replace another."
    with nothing_written():
        response = ada_client.post(reverse("memory-superseded-by", args=[old.pk]), {"new": new.pk})
    assert response.status_code == 200
    assert response.context["superseded_by_form"].errors["new"] == [words]
    old.refresh_from_db()
    assert old.valid_until is None
