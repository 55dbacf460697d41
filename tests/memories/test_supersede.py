"""Facts that change (issue 15, item 3): a memory supersedes older ones; nothing is deleted,
what was true at an instant can be asked for, and the default views show what is true now."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from memories import services
from memories.models import Association, Classification, Memory, MemoryEvent
from recall.services import recall_run
from review.selectors import review_queue
from tests.support.api import create

pytestmark = pytest.mark.django_db


@pytest.fixture
def moved(writer, namespace):
    """Paris, then Berlin: the second supersedes the first."""
    start = timezone.now() - timedelta(days=30)
    paris = create(writer, namespace, "Ada lives in Paris.", valid_from=start.isoformat()).json()
    berlin = create(writer, namespace, "Ada moved to Berlin.", supersedes=[paris["id"]])
    assert berlin.status_code == 201, berlin.json()
    return paris, berlin.json(), start


def test_superseding_ends_the_old_fact_and_keeps_it(moved):
    paris, berlin, start = moved
    old = Memory.objects.get(pk=paris["id"])
    assert old.valid_from == start
    assert old.valid_until.isoformat().replace("+00:00", "Z") == berlin["valid_from"].replace(
        "+00:00", "Z"
    )
    event = MemoryEvent.objects.get(memory_ref=old.pk, kind=MemoryEvent.Kind.SUPERSEDED)
    assert event.after["superseded_by"] == berlin["id"]
    link = Association.objects.get(source_id=berlin["id"], target_id=old.pk)
    assert link.kind == "supersedes"
    assert old.status == "active"  # nothing deleted or forgotten


def test_the_list_shows_what_is_true_now_as_of_then_or_everything(writer, namespace, moved):
    paris, berlin, start = moved

    def listed(**params) -> dict[int, bool]:
        body = writer.get("/api/v1/memories", {"namespace": namespace.slug, **params}).json()
        return {m["id"]: m["superseded"] for m in body["results"]}

    assert listed() == {berlin["id"]: False}
    then = (start + timedelta(days=1)).isoformat()
    assert listed(as_of=then) == {paris["id"]: True}
    assert listed(include_superseded="true") == {paris["id"]: True, berlin["id"]: False}


def test_recall_leaves_superseded_facts_out_unless_asked(namespace, moved):
    paris, _, start = moved

    def recalled(**options) -> list[tuple[int, bool]]:
        result = recall_run(
            namespaces=[namespace],
            ceiling=Classification.RESTRICTED,
            query="where does Ada live",
            track=False,
            **options,
        )
        return [(hit.memory_id, hit.metadata["superseded"]) for hit in result.results]

    assert paris["id"] not in dict(recalled())
    assert dict(recalled(as_of=start + timedelta(days=1))) == {paris["id"]: True}
    assert dict(recalled(include_superseded=True))[paris["id"]] is True


def test_the_recall_api_takes_as_of(writer, namespace, moved):
    paris, _, start = moved
    body = writer.post(
        "/api/v1/recall",
        {"query": "Ada Paris", "as_of": (start + timedelta(days=1)).isoformat(), "track": False},
        format="json",
    ).json()
    assert [hit["memory_id"] for hit in body["results"]] == [paris["id"]]


def test_the_review_queue_leaves_superseded_memories_out(user, namespace):
    old = services.memory_create(namespace=namespace, content="The office is on floor 2.")
    services.memory_create(
        namespace=namespace, content="The office is on floor 5.", supersedes=[old]
    )
    from zoneinfo import ZoneInfo

    queue = review_queue(namespace=namespace, tz=ZoneInfo("UTC"))
    assert old.pk not in {item.memory_id for item in queue.items}


def test_a_patch_can_say_no_longer_true(writer, namespace):
    memory = create(writer, namespace, "The shop opens at 9.").json()
    later = timezone.now() + timedelta(seconds=1)
    response = writer.patch(
        f"/api/v1/memories/{memory['id']}", {"valid_until": later.isoformat()}, format="json"
    )
    assert response.status_code == 200, response.json()
    before = (timezone.now() - timedelta(days=400)).isoformat()
    refused = writer.patch(
        f"/api/v1/memories/{memory['id']}", {"valid_until": before}, format="json"
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["fields"] == {"valid_until": ["Must not be before valid_from."]}


@pytest.mark.parametrize("whose", ["another user's", "unknown"])
def test_a_supersedes_id_out_of_scope_is_no_such_memory(
    writer, namespace, other_user, nothing_written, whose
):
    if whose == "unknown":
        target = 999_999
    else:
        theirs = services.namespace_create(owner=other_user, name="Theirs")
        target = services.memory_create(namespace=theirs, content="Their fact.").pk
    with nothing_written():
        response = create(writer, namespace, "A new fact.", supersedes=[target])
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"supersedes": ["No such memory."]}


def test_bad_supersedes_are_400s_naming_the_field(writer, namespace, user, nothing_written):
    other = services.namespace_create(owner=user, name="Other")
    elsewhere = services.memory_create(namespace=other, content="Elsewhere.")
    future = services.memory_create(
        namespace=namespace,
        content="From next year.",
        valid_from=timezone.now() + timedelta(days=365),
    )
    cases = {
        elsewhere.pk: r"Must be a memory of the same namespace\.",
        future.pk: rf"Memory #{future.pk} is valid only from a later time than the memory "
        r"that would replace it\.",
    }
    for target, message in cases.items():
        with nothing_written():
            response = create(writer, namespace, f"Replaces {target}.", supersedes=[target])
        assert response.status_code == 400
        fields = response.json()["error"]["fields"]
        assert list(fields) == ["supersedes"] and len(fields["supersedes"]) == 1
        assert re.fullmatch(message, fields["supersedes"][0]), fields


def test_a_cycle_of_replacements_is_refused(writer, namespace, nothing_written):
    first = create(writer, namespace, "Version one.").json()
    second = create(writer, namespace, "Version two.", supersedes=[first["id"]]).json()
    # Version one is true again (a person reopens it), so it is the answer to its text.
    reopened = writer.patch(f"/api/v1/memories/{first['id']}", {"valid_until": None}, format="json")
    assert reopened.status_code == 200 and reopened.json()["superseded"] is False
    with nothing_written():
        # The same text as the first: the write is the first memory, which would then
        # replace the memory that replaced it.
        response = create(writer, namespace, "Version one.", supersedes=[second["id"]])
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "supersedes": ["That would make a cycle of replacements."]
    }


def test_bulk_items_supersede_too(writer, namespace):
    old = create(writer, namespace, "Tea at 4.").json()
    body = writer.post(
        "/api/v1/memories/bulk",
        {
            "namespace": namespace.slug,
            "memories": [{"content": "Tea at 5.", "supersedes": [old["id"]]}, {"content": "x y"}],
        },
        format="json",
    )
    assert body.status_code == 201, body.json()
    assert Memory.objects.get(pk=old["id"]).valid_until is not None


def test_a_hidden_superseding_memory_stays_out_of_the_old_one_s_history(
    user, namespace, make_token, api
):
    old = services.memory_create(
        namespace=namespace, content="Budget is 10k.", classification=Classification.INTERNAL
    )
    services.memory_create(
        namespace=namespace,
        content="Budget is 50k, after the secret deal.",
        classification=Classification.RESTRICTED,
        supersedes=[old],
    )
    _, secret = make_token(user, ceiling=Classification.INTERNAL)
    low = api(secret)
    history = low.get(f"/api/v1/memories/{old.pk}/history").json()["results"]
    (event,) = [event for event in history if event["kind"] == "superseded"]
    # Written at the new memory's level: its values are withheld, as for any event
    # written above the caller's ceiling (the kind and time stay).
    assert str(event["after"]).count("50k") == 0
    assert "superseded_by" not in event["after"] and "valid_until" not in event["after"]
    links = low.get("/api/v1/associations", {"memory": old.pk}).json()["results"]
    assert links == []


def test_every_path_adding_supersedes_links_refuses_a_cycle(writer, namespace, nothing_written):
    """The links API (and MCP's link tool, which calls it) runs the supersede validator too:
    a 'supersedes' link closing a cycle of replacements is a 400 on target, of any length."""
    first = create(writer, namespace, "Step one.").json()
    second = create(writer, namespace, "Step two.", supersedes=[first["id"]]).json()
    third = create(writer, namespace, "Step three.", supersedes=[second["id"]]).json()
    for source in (second, third):
        with nothing_written():
            response = writer.post(
                "/api/v1/associations",
                {"source": first["id"], "target": source["id"], "kind": "supersedes"},
                format="json",
            )
        assert response.status_code == 400, response.json()
        assert response.json()["error"]["fields"] == {
            "target": ["That would make a cycle of replacements."]
        }
    # Any other kind of link between them is fine, and so is a supersedes link onward.
    related = writer.post(
        "/api/v1/associations",
        {"source": first["id"], "target": third["id"], "kind": "related"},
        format="json",
    )
    assert related.status_code == 201, related.json()
    onward = create(writer, namespace, "Step zero.").json()
    forward = writer.post(
        "/api/v1/associations",
        {"source": first["id"], "target": onward["id"], "kind": "supersedes"},
        format="json",
    )
    assert forward.status_code == 201, forward.json()
