"""Conversations on the write path (issue 15, item 1): every write path links a new memory to
the previous turns of its session, in the session's order, set-based and never twice."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.importer import ImportFailed, namespace_import
from memories.models import Association, Classification, Memory
from memories.selectors import session_turns
from memories.services.sessions import NEAR_TURN, NEXT_TURN, session_links_create
from memories.transfer import FORMAT, VERSION, namespace_export
from tests.support.api import create

pytestmark = pytest.mark.django_db


def links(namespace) -> set[tuple[int, int, float, str]]:
    return set(
        Association.objects.filter(namespace=namespace).values_list(
            "source_id", "target_id", "weight", "kind"
        )
    )


def chain(ids: list[int]) -> set[tuple[int, int, float, str]]:
    """The links of a session whose turns are `ids`, in order."""
    nexts = {(a, b, 1.0, NEXT_TURN) for a, b in itertools.pairwise(ids)}
    nears = {(a, b, 0.5, NEAR_TURN) for a, b in zip(ids, ids[2:], strict=False)}
    return nexts | nears


def post(writer, namespace, content, **fields):
    response = create(writer, namespace, content, **fields)
    assert response.status_code == 201, response.json()
    return response.json()


def test_turns_created_one_by_one_are_linked_to_the_two_before(writer, namespace):
    ids = [post(writer, namespace, f"turn {i}", session_id="chat-1")["id"] for i in range(4)]
    other = post(writer, namespace, "another conversation", session_id="chat-2")["id"]
    alone = post(writer, namespace, "no conversation")["id"]

    assert links(namespace) == chain(ids)
    assert not Association.objects.filter(source_id__in=[other, alone]).exists()
    assert not Association.objects.filter(target_id__in=[other, alone]).exists()


def test_the_api_shows_the_session_and_position_and_refuses_changing_them(writer, namespace):
    body = post(writer, namespace, "hello", session_id="chat-1", position=7)
    assert (body["session_id"], body["position"]) == ("chat-1", 7)
    assert post(writer, namespace, "plain")["session_id"] == ""

    response = writer.patch(f"/api/v1/memories/{body['id']}", {"session_id": "x"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"session_id": ["This field is read-only."]}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("session_id", "x" * 101, "Ensure this field has no more than 100 characters."),
        ("session_id", 5, "Not a valid string."),
        ("session_id", "a\x00b", "NUL characters are not allowed"),
        ("position", -1, "Ensure this value is greater than or equal to 0."),
        ("position", 2**31, "Ensure this value is less than or equal to 2147483647."),
        ("position", "3", "A valid integer is required."),
        ("position", 1.5, "A valid integer is required."),
    ],
)
def test_bad_session_input_is_a_400_naming_the_field(
    writer, namespace, nothing_written, field, value, message
):
    with nothing_written():
        response = writer.post(
            "/api/v1/memories",
            {"namespace": namespace.slug, "content": "x", field: value},
            format="json",
        )
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {field: [message]}


def test_positions_order_a_session_whatever_the_order_of_writing(writer, namespace):
    by_position = {}
    for position in (2, 0, 3, 1):
        by_position[position] = post(
            writer, namespace, f"turn {position}", session_id="s", position=position
        )["id"]
    ids = [by_position[p] for p in range(4)]
    # Each write linked what it could see, and turn 1, written between 0 and 2, turned
    # their next_turn link into a near_turn one. 0 -> 3, a near_turn when 3 came after
    # 0 and 2, is older than turn 1 and stays: the write path never deletes a link.
    assert links(namespace) == chain(ids) | {(ids[0], ids[3], 0.5, NEAR_TURN)}


def test_a_link_a_person_made_is_never_changed(namespace):
    first = services.memory_create(namespace=namespace, content="a", session_id="s", position=0)
    last = services.memory_create(namespace=namespace, content="c", session_id="s", position=2)
    Association.objects.filter(source=first, target=last).update(kind="related", weight=0.9)
    middle = services.memory_create(namespace=namespace, content="b", session_id="s", position=1)
    assert links(namespace) == {
        (first.pk, middle.pk, 1.0, NEXT_TURN),
        (middle.pk, last.pk, 1.0, NEXT_TURN),
        (first.pk, last.pk, 0.9, "related"),
    }


def test_a_bulk_create_links_each_session_in_one_statement(writer, namespace, user):
    start = timezone.now() - timedelta(hours=1)

    def at(minutes: int) -> str:
        return (start + timedelta(minutes=minutes)).isoformat()

    items = [
        # two sessions interleaved, one written out of order, and items without a session
        {"content": "a0", "session_id": "a", "created_at": at(0)},
        {"content": "b1", "session_id": "b", "position": 1},
        {"content": "a1", "session_id": "a", "created_at": at(1)},
        {"content": "none"},
        {"content": "b0", "session_id": "b", "position": 0},
        {"content": "a2", "session_id": "a", "created_at": at(2)},
        {"content": "b2", "session_id": "b", "position": 2},
    ]
    with CaptureQueriesContext(connection) as queries:
        response = writer.post(
            "/api/v1/memories/bulk",
            {"namespace": namespace.slug, "memories": items},
            format="json",
        )
    assert response.status_code == 201, response.json()
    ids = {item["content"]: item["id"] for item in response.json()}
    assert links(namespace) == chain([ids["a0"], ids["a1"], ids["a2"]]) | chain(
        [ids["b0"], ids["b1"], ids["b2"]]
    )
    inserts = [q["sql"] for q in queries.captured_queries if "memories_association" in q["sql"]]
    assert len(inserts) == 1, inserts

    # A later bulk continues the sessions where they ended.
    more = writer.post(
        "/api/v1/memories/bulk",
        {"namespace": namespace.slug, "memories": [{"content": "b3", "session_id": "b"}]},
        format="json",
    ).json()
    # No position sorts after every positioned turn.
    assert {(ids["b2"], more[0]["id"], 1.0, NEXT_TURN)} <= links(namespace)
    assert {(ids["b1"], more[0]["id"], 0.5, NEAR_TURN)} <= links(namespace)


def test_same_session_in_two_namespaces_are_two_conversations(user, namespace):
    other = services.namespace_create(owner=user, name="Other")
    a = services.memory_create(namespace=namespace, content="here", session_id="s")
    b = services.memory_create(namespace=other, content="there", session_id="s")
    assert not Association.objects.filter(source__in=[a, b]).exists()


def test_a_namespace_can_turn_session_links_off(user):
    quiet = services.namespace_create(owner=user, name="Quiet", session_links=False)
    first = services.memory_create(namespace=quiet, content="one", session_id="s")
    services.memory_bulk_create(
        items=[{"namespace": quiet, "content": text, "session_id": "s"} for text in ("2", "3")]
    )
    assert not Association.objects.filter(namespace=quiet).exists()
    assert Memory.objects.filter(namespace=quiet, session_id="s").count() == 3
    assert first.session_id == "s"


def test_linking_again_writes_nothing_twice(namespace):
    ids = [
        services.memory_create(namespace=namespace, content=f"t{i}", session_id="s").pk
        for i in range(3)
    ]
    assert session_links_create(ids) == 0
    assert Association.objects.filter(namespace=namespace).count() == 3
    assert links(namespace) == chain(ids)


def test_a_refused_bulk_writes_no_link(writer, namespace, nothing_written):
    items = [{"content": "ok", "session_id": "s"}, {"content": "", "session_id": "s"}]
    with nothing_written():
        response = writer.post(
            "/api/v1/memories/bulk", {"namespace": namespace.slug, "memories": items}, format="json"
        )
    assert response.status_code == 400


def test_the_namespace_setting_is_in_the_api(writer, namespace):
    response = writer.patch(
        f"/api/v1/namespaces/{namespace.slug}", {"session_links": False}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["session_links"] is False
    post(writer, namespace, "one", session_id="s")
    post(writer, namespace, "two", session_id="s")
    assert not links(namespace)


def test_an_export_with_sessions_imports_with_the_same_links(user, namespace):
    ids = [
        services.memory_create(namespace=namespace, content=f"t{i}", session_id="s", position=i).pk
        for i in range(4)
    ]
    lines = list(namespace_export(namespace=namespace, ceiling=Classification.RESTRICTED))
    copy = services.namespace_create(owner=user, name="Copy")

    result = namespace_import(namespace=copy, lines=lines)

    new = [result.memories[old] for old in ids]
    assert links(copy) == chain(new)
    assert list(
        Memory.objects.filter(pk__in=new).order_by("position").values_list("session_id", "position")
    ) == [("s", i) for i in range(4)]


def test_a_file_with_sessions_and_no_links_gets_them(user, namespace):
    records = [
        {"type": "header", "format": FORMAT, "version": VERSION},
        *(
            {"type": "memory", "id": i, "content": f"turn {i}", "session_id": "chat"}
            for i in range(3)
        ),
        {"type": "end", "lines": 5},
    ]
    result = namespace_import(namespace=namespace, lines=[json.dumps(r) for r in records])
    assert links(namespace) == chain([result.memories[i] for i in range(3)])


def test_an_import_refuses_a_bad_session_naming_the_line(namespace, nothing_written):
    records = [
        {"type": "header", "format": FORMAT, "version": VERSION},
        {"type": "memory", "id": 1, "content": "x", "position": -3},
        {"type": "end", "lines": 3},
    ]
    with nothing_written(), pytest.raises(ImportFailed) as failed:
        namespace_import(namespace=namespace, lines=[json.dumps(r) for r in records])
    assert failed.value.line == 2
    assert failed.value.messages == ["position: Ensure this value is greater than or equal to 0."]


# --- Reading a conversation: the list filter and the memory page --------------------------


def turns_in(namespace, *positions) -> list[Memory]:
    return [
        services.memory_create(
            namespace=namespace, content=f"turn {p}", session_id="chat", position=p
        )
        for p in positions
    ]


def test_a_memory_s_neighbours_in_session_order(namespace):
    memories = {m.position: m for m in turns_in(namespace, 4, 0, 2, 1, 3, 5, 6)}
    unpositioned = services.memory_create(namespace=namespace, content="late", session_id="chat")
    services.memory_create(namespace=namespace, content="elsewhere", session_id="other")

    turns = session_turns(memories[3], around=2)
    assert [m.position for m in turns.before] == [1, 2]
    assert [m.position for m in turns.after] == [4, 5]
    assert (turns.number, turns.total, turns.first_number) == (4, 8, 2)

    last = session_turns(unpositioned, around=3)
    assert [m.position for m in last.before] == [4, 5, 6] and last.after == []
    assert (last.number, last.total) == (8, 8)
    first = session_turns(memories[0], around=3)
    assert first.before == [] and first.number == 1
    assert session_turns(services.memory_create(namespace=namespace, content="x")) is None


def test_the_memory_page_lists_its_session_s_neighbours(ada_client, user, personal):
    first, second, third = turns_in(personal, 0, 1, 2)
    page = ada_client.get(reverse("memory-detail", args=[second.pk]))
    html = page.content.decode()
    assert "Turn 2 of 3 in session" in html
    assert f'href="{reverse("memory-detail", args=[first.pk])}" rel="prev"' in html
    assert f'href="{reverse("memory-detail", args=[third.pk])}" rel="next"' in html

    listed = ada_client.get(
        reverse("memory-list"),
        {"namespace": personal.slug, "session_id": "chat", "sort": "turns"},
    )
    assert [row["memory"].pk for row in listed.context["rows"]] == [
        first.pk,
        second.pk,
        third.pk,
    ]


def test_the_api_lists_a_session(writer, namespace):
    ids = [post(writer, namespace, f"t{i}", session_id="chat")["id"] for i in range(3)]
    post(writer, namespace, "other", session_id="other")
    body = writer.get("/api/v1/memories", {"namespace": namespace.slug, "session_id": "chat"})
    assert body.status_code == 200
    assert sorted(m["id"] for m in body.json()["results"]) == ids
    too_long = writer.get("/api/v1/memories", {"session_id": "x" * 101})
    assert too_long.status_code == 400 and "session_id" in too_long.json()["error"]["fields"]
