"""MCP (issue 16): the SDK's own client against a live server, over streamable HTTP at /mcp
(gunicorn with uvicorn workers on config.asgi, the README's production command) and over
stdio (`manage.py mcp`), with the API's tokens, scopes and ceilings."""

from __future__ import annotations

import asyncio
import json
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.support.mcp import ok, refused
from tests.support.servers import Gunicorn, api_json, manage, server_env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {
    "remember",
    "recall",
    "forget",
    "restore",
    "update",
    "get",
    "list",
    "link",
    "relate",
    "graph",
    "reinforce_due",
}
SEED = """
from django.contrib.auth import get_user_model
from memories import services
from memories.models import Classification
ada = get_user_model().objects.create_user("ada-{tag}")
bob = get_user_model().objects.create_user("bob-{tag}")
work = services.namespace_create(owner=ada, name="work-{tag}")
home = services.namespace_create(owner=bob, name="home-{tag}")
tokens = dict(
    ada=services.token_create(owner=ada, name="w", namespaces=[work], access="write",
                              ceiling=Classification.RESTRICTED)[1],
    reader=services.token_create(owner=ada, name="r", namespaces=[work], access="read",
                                 ceiling=Classification.RESTRICTED)[1],
    public=services.token_create(owner=ada, name="p", namespaces=[work], access="write",
                                 ceiling=Classification.PUBLIC)[1],
    bob=services.token_create(owner=bob, name="b", namespaces=[home], access="write")[1],
)
tokens["work"], tokens["home"] = work.slug, home.slug
print(json.dumps(tokens))
"""


@pytest.fixture(scope="module")
def server(prepared_database, tmp_path_factory):
    env = server_env(prepared_database)
    with Gunicorn(env, tmp_path_factory.mktemp("mcp") / "server.log", asgi=True) as gunicorn:
        yield gunicorn


@pytest.fixture
def people(prepared_database) -> dict[str, str]:
    code = "import json\n" + SEED.format(tag=uuid.uuid4().hex[:8])
    out = manage(server_env(prepared_database), "shell", "--no-imports", "-c", code)
    return json.loads(out.splitlines()[-1])


def run(coroutine):
    return asyncio.run(coroutine)


async def session(server: Gunicorn, secret: str, calls):
    """Connect as `secret` and run `calls(client)`."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=60)
    async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client:
        return await calls(client)


def test_without_a_token_it_answers_401_naming_its_metadata(server):
    for headers in ({}, {"Authorization": "Bearer eng_nope_nope"}):
        request = urllib.request.Request(
            f"{server.url}/mcp", data=b"{}", headers={"Content-Type": "application/json", **headers}
        )
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(request, timeout=30)
        assert error.value.code == 401
        challenge = error.value.headers["WWW-Authenticate"]
        assert challenge.startswith("Bearer ") and "resource_metadata=" in challenge
    metadata = urllib.request.urlopen(
        f"{server.url}/.well-known/oauth-protected-resource/mcp", timeout=30
    )
    assert json.loads(metadata.read())["resource"].endswith("/mcp")


def test_every_tool_answers_through_the_api(server, people):
    async def calls(client):
        tools = (await client.list_tools()).tools
        assert {tool.name for tool in tools} == TOOLS
        assert all(tool.description and tool.input_schema["type"] == "object" for tool in tools)

        paris = await ok(client, "remember", content="Ada lives in Paris.", session_id="chat-1")
        assert paris["namespace"] == people["work"] and paris["deduplicated"] is False
        again = await ok(client, "remember", content="ada lives in paris.")
        assert again["id"] == paris["id"] and again["deduplicated"] is True
        turn = await ok(
            client, "remember", content="She flies to Lisbon on Friday.", session_id="chat-1"
        )
        lisbon = await ok(
            client,
            "remember",
            content="Ada moved to Lisbon.",
            supersedes=[paris["id"]],
            topic="home",
            keywords=["move"],
            classification="public",
            cue="Where does Ada live?",
        )
        found = await ok(client, "recall", query="Where does Ada live?", limit=5)
        ids = [hit["memory_id"] for hit in found["results"]]
        assert lisbon["id"] in ids and paris["id"] not in ids  # superseded
        before = await ok(client, "recall", query="Where does Ada live?", as_of=paris["created_at"])
        assert paris["id"] in [hit["memory_id"] for hit in before["results"]]

        got = await ok(client, "get", id=turn["id"])
        assert got["memory"]["id"] == turn["id"]
        assert {link["kind"] for link in got["links"]} >= {"next_turn"}
        assert got["history"][0]["kind"] == "created"

        changed = await ok(client, "update", id=turn["id"], topic="travel")
        assert changed["topic"] == "travel"
        first = await ok(client, "list", limit=1)  # two current memories: turn and lisbon
        assert len(first["results"]) == 1 and first["next_cursor"]
        second = await ok(client, "list", limit=1, cursor=first["next_cursor"])
        assert {m["id"] for m in first["results"] + second["results"]} == {
            turn["id"],
            lisbon["id"],
        }

        linked = await ok(client, "link", source=turn["id"], target=lisbon["id"], weight=0.7)
        assert (linked["source"], linked["target"]) == (turn["id"], lisbon["id"])
        relation = await ok(
            client,
            "relate",
            subject="Ada",
            predicate="lives_in",
            object="Lisbon",
            memory=lisbon["id"],
        )
        assert relation["predicate"] == "lives_in"
        graph = await ok(client, "graph", entity="Ada")
        assert [r["predicate"] for r in graph["results"]] == ["lives_in"]

        gone = await ok(client, "forget", id=turn["id"], reason="wrong")
        assert gone["status"] == "forgotten"
        back = await ok(client, "restore", id=turn["id"])
        assert back["status"] != "forgotten"
        due = await ok(client, "reinforce_due")
        assert due == {"results": []}  # everything here was used just now

        # Bad arguments are tool errors naming the field, and the server carries on.
        assert "content" in await refused(client, "remember", content="")
        assert "content" in await refused(client, "remember", content=5)
        assert "No such memory" in await refused(
            client, "remember", content="x", supersedes=[10**9]
        )
        assert "Not found" in await refused(client, "get", id=10**9)
        assert "Nothing to change" in await refused(client, "update", id=turn["id"])
        assert "session_id" in await refused(client, "remember", content="y", session_id="s" * 101)
        await ok(client, "recall", query="Lisbon")

    run(session(server, people["ada"], calls))


def test_two_tokens_never_see_each_others_memories(server, people):
    async def ada(client):
        return await ok(client, "remember", content="The launch code is 0000.")

    secret = run(session(server, people["ada"], ada))

    async def bob(client):
        assert "Not found" in await refused(client, "get", id=secret["id"])
        assert "Not found" in await refused(client, "forget", id=secret["id"], reason="x")
        found = await ok(client, "recall", query="launch code")
        assert found["results"] == []
        assert "namespace" in await refused(
            client, "remember", content="x", namespace=people["work"]
        )
        assert (await ok(client, "list"))["results"] == []

    run(session(server, people["bob"], bob))


def test_a_low_ceiling_token_never_receives_a_higher_memory(server, people):
    async def ada(client):
        return await ok(
            client,
            "remember",
            content="Salary review: Ada earns more.",
            classification="restricted",
        )

    hidden = run(session(server, people["ada"], ada))

    async def low(client):
        assert "Not found" in await refused(client, "get", id=hidden["id"])
        assert (await ok(client, "recall", query="salary review"))["results"] == []
        assert hidden["id"] not in [m["id"] for m in (await ok(client, "list"))["results"]]
        text = await refused(client, "remember", content="x", classification="restricted")
        assert "classification" in text
        # An exact copy answers with a new memory, never with the hidden one.
        copy = await ok(client, "remember", content="Salary review: Ada earns more.")
        assert copy["id"] != hidden["id"]

    run(session(server, people["public"], low))


def test_a_read_only_token_reads_and_cannot_write(server, people):
    async def writer(client):
        return await ok(client, "remember", content="Standup is at 9:30.")

    memory = run(session(server, people["ada"], writer))

    async def reader(client):
        assert "read-only" in await refused(client, "remember", content="x")
        assert "read-only" in await refused(client, "forget", id=memory["id"], reason="x")
        assert (await ok(client, "get", id=memory["id"]))["memory"]["id"] == memory["id"]
        assert memory["id"] in [
            h["memory_id"] for h in (await ok(client, "recall", query="standup"))["results"]
        ]

    run(session(server, people["reader"], reader))


def test_a_recall_through_mcp_tracks_exactly_as_the_rest_recall(server, people):
    secret = people["ada"]
    a = api_json(
        server,
        secret,
        "POST",
        "/memories",
        {"namespace": people["work"], "content": "Ada grows apples."},
    )
    b = api_json(
        server,
        secret,
        "POST",
        "/memories",
        {"namespace": people["work"], "content": "Bob grows pears."},
    )
    api_json(server, secret, "POST", "/recall", {"query": "apples", "session_id": "s1", "limit": 1})

    async def calls(client):
        return await ok(client, "recall", query="pears", session_id="s1", limit=1)

    run(session(server, secret, calls))
    after_a = api_json(server, secret, "GET", f"/memories/{a['id']}")
    after_b = api_json(server, secret, "GET", f"/memories/{b['id']}")
    tracked = ("recall_count", "use_count", "session_ids", "strength")
    assert {k: after_a[k] for k in tracked} == {k: after_b[k] for k in tracked}
    assert after_b["recall_count"] == 1 and after_b["session_ids"] == ["s1"]


def test_stdio_serves_the_same_tools_for_one_token(prepared_database, people):
    env = server_env(prepared_database, ENGRAM_TOKEN=people["ada"])
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp"], env=env, cwd=str(ROOT)
    )

    async def calls():
        async with Client(params) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
            stored = await ok(client, "remember", content="Stdio remembers too.")
            found = await ok(client, "recall", query="stdio remembers")
            assert stored["id"] in [hit["memory_id"] for hit in found["results"]]

    run(calls())


def test_a_get_is_refused_at_once_rather_than_held_open(server, people):
    """Stateless with JSON answers, the app has no event stream: a GET answers 405 at once
    (the transport's spec allows it) instead of an event stream of pings that never ends.
    The SDK's client carries on without one (the other tests)."""
    for headers in (
        {"Authorization": f"Bearer {people['ada']}", "Accept": "text/event-stream"},
        {},
    ):
        request = urllib.request.Request(f"{server.url}/mcp", headers=headers)
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(request, timeout=10)
        assert error.value.code == 405
        assert error.value.headers["Allow"] == "POST"
        assert error.value.headers["X-Request-ID"]
        assert json.loads(error.value.read())["error"]["code"] == -32000
    metadata = urllib.request.urlopen(
        f"{server.url}/.well-known/oauth-protected-resource/mcp", timeout=30
    )
    assert metadata.status == 200
