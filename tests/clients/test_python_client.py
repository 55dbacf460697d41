"""The Python client (clients/python): it agrees with the OpenAPI schema, and every method
works against a real gunicorn on the engine under test; retries and timeouts against a
stub server whose answers the test chooses."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import http.server
import inspect
import io
import json
import re
import socket
import threading
import time
import typing
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import engram_client
import httpx
import pytest
from django.conf import settings
from drf_spectacular.generators import SchemaGenerator
from engram_client import AsyncEngram, Engram, Retry
from engram_client import models as m
from engram_client import operations as ops

from tests.support.servers import Gunicorn, manage, new_token, server_env

# Schema agreement (no server, no database)


def _keys(typed: type) -> frozenset[str]:
    return typed.__required_keys__ | typed.__optional_keys__


def _every(typed: type) -> dict[str, Any]:
    """A value for every key of a TypedDict: only the names matter to the schema."""
    return {key: "x" for key in _keys(typed)}


def every_call() -> dict[str, ops.Call]:
    """Each operation of engram_client.operations, built with every optional argument."""
    return {
        "remember": ops.remember("ns", "text", _every(m.CreateFields)),
        "remember_many": ops.remember_many([{"content": "a", **_every(m.CreateFields)}], "ns"),
        "get": ops.get(1),
        "update": ops.update(1, _every(m.UpdateFields)),
        "purge": ops.purge(1),
        "forget": ops.forget(1, "why"),
        "restore": ops.restore(1),
        "touch": ops.touch(1, True),
        "memories": ops.memories(_every(ops.MemoryFilters)),
        "history": ops.history(1, 10),
        "reinforce_due": ops.reinforce_due("ns", 10),
        "about_to_forget": ops.about_to_forget("ns", 10),
        "act": ops.act("forget", [1], "why", "topic", "internal"),
        "decay_fits": ops.decay_fits("ns"),
        "fit_decay": ops.fit_decay("ns"),
        "webhooks": ops.webhooks("ns"),
        "create_webhook": ops.create_webhook("ns", "https://x", _every(m.WebhookFields)),
        "webhook": ops.webhook(1),
        "update_webhook": ops.update_webhook(1, _every(m.WebhookFields)),
        "delete_webhook": ops.delete_webhook(1),
        "webhook_deliveries": ops.webhook_deliveries(1, 10),
        "redeliver": ops.redeliver(1),
        "link": ops.link(1, 2, 0.5, "related"),
        "unlink": ops.unlink(1),
        "associations": ops.associations(1, 10),
        "relate": ops.relate("ns", "alice", "knows", "bob", 1, 0.5),
        "unrelate": ops.unrelate(1),
        "relations": ops.relations("ns", "alice", 10),
        "declare_entity": ops.declare_entity("ns", "alice", "person"),
        "entities": ops.entities("ns", 10),
        "consolidations": ops.consolidations("ns", "day", 10),
        "recall": ops.recall("query", _every(ops.RecallOptions)),
        "namespaces": ops.namespaces(),
        "namespace": ops.namespace("ns"),
        "create_namespace": ops.create_namespace("Ns", "ns", _every(m.NamespaceSettings)),
        "update_namespace": ops.update_namespace("ns", "Ns", _every(m.NamespaceSettings)),
        "export_namespace": ops.export_namespace("ns"),
        "import_namespace": ops.import_namespace("ns", True),
        "import_job": ops.import_job("ns", 1),
        "review_queue": ops.review_queue("ns", "deck", 10, "UTC"),
        "grade": ops.grade(1, "good", 3),
        "undo": ops.undo(1),
        "suspend": ops.suspend(1),
        "unsuspend": ops.unsuspend(1, True),
        "bury": ops.bury(1, datetime(2026, 1, 2, tzinfo=UTC), "UTC"),
        "unbury": ops.unbury(1),
        "decks": ops.decks("ns", "UTC"),
        "set_deck": ops.set_deck("ns", "deck", 10, "UTC"),
        "optimization": ops.optimization("ns"),
        "optimize": ops.optimize("ns"),
        "reset_optimization": ops.reset_optimization("ns"),
        "review_stats": ops.review_stats("ns", "deck", "UTC"),
        "start_session": ops.start_session("ns", "deck", 10, "UTC"),
        "session": ops.session(1),
        "session_grade": ops.session_grade(1, 2, 4, 3),
        "finish_session": ops.finish_session(1),
        "start_cram": ops.start_cram("ns", "deck", [1], 7),
        "cram": ops.cram(1),
        "cram_answer": ops.cram_answer(1, 2, True),
        "finish_cram": ops.finish_cram(1),
    }


# A field a result class declares that one of its response schemas may lack: the create's
# flag, which the plain memory schema (GET, PATCH...) has no reason to carry.
OPTIONAL_RESULT_FIELDS = {("Memory", "deduplicated"), ("Webhook", "secret")}


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    if "allOf" in node and len(node["allOf"]) == 1:
        return _resolve(schema, node["allOf"][0])
    return node


def _answer_schema(schema: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any] | None:
    for status in ("200", "201"):
        content = operation.get("responses", {}).get(status, {}).get("content", {})
        if "application/json" in content:
            return _resolve(schema, content["application/json"]["schema"])
    return None


def _nested(kind: Any) -> type | None:
    """The result class inside a field's type (Card in `list[Card]`, `Card | None`)."""
    if dataclasses.is_dataclass(kind):
        return kind
    for argument in typing.get_args(kind):
        found = _nested(argument)
        if found is not None:
            return found
    return None


def _check_fields(
    schema: dict[str, Any], label: str, cls: type, answer: dict[str, Any]
) -> list[str]:
    """A result class's fields against its schema, nested result classes too: each field
    exists there, and a field the class requires is one the schema requires (else
    decoding could fail)."""
    properties = answer.get("properties")
    if not properties:  # a free-form object (the import's answers): nothing to compare
        return []
    required = set(answer.get("required", []))
    hints = typing.get_type_hints(cls)
    problems = []
    for spec in dataclasses.fields(cls):
        if spec.name == "extra":
            continue
        if spec.name not in properties:
            if (cls.__name__, spec.name) not in OPTIONAL_RESULT_FIELDS:
                problems.append(f"{label}: {cls.__name__}.{spec.name} is not in the answer")
            continue
        has_default = not (
            spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING
        )
        if not has_default and spec.name not in required:
            problems.append(f"{label}: {cls.__name__}.{spec.name} may be absent")
        inner = _nested(hints[spec.name])
        if inner is not None:
            node = _resolve(schema, properties[spec.name])
            node = _resolve(schema, node.get("items", node))
            problems += _check_fields(schema, label, inner, node)
    return problems


def _check_result(
    schema: dict[str, Any], name: str, call: ops.Call, answer: dict[str, Any] | None
) -> list[str]:
    if call.result is None or answer is None:
        return [] if call.result is None else [f"{name}: no JSON answer in the schema"]
    if call.shape == "page":
        answer = _resolve(schema, answer["properties"]["results"]["items"])
    elif call.shape == "list":
        answer = _resolve(schema, answer["items"])
    return _check_fields(schema, name, call.result, answer)


def disagreements(schema: dict[str, Any], calls: dict[str, ops.Call]) -> list[str]:
    """Where the client's calls and the schema differ: a route or method the schema lacks,
    a body field, query or path parameter it does not declare, a required field the client
    does not send, a result field the answer lacks."""
    problems: list[str] = []
    for name, call in calls.items():
        path = f"/api/v1{call.route}"
        operation = schema["paths"].get(path, {}).get(call.method.lower())
        if operation is None:
            problems.append(f"{name}: {call.method} {path} is not in the schema")
            continue
        declared = {(p["in"], p["name"]) for p in operation.get("parameters", [])}
        for key in call.path_params:
            if ("path", key) not in declared:
                problems.append(f"{name}: path parameter {key!r} is not in the schema")
        for key in call.params or {}:
            if ("query", key) not in declared:
                problems.append(f"{name}: query parameter {key!r} is not in the schema")
        content = operation.get("requestBody", {}).get("content", {})
        if call.json is not None:
            if "application/json" not in content:
                problems.append(f"{name}: {call.method} {path} takes no JSON body")
                continue
            request = _resolve(schema, content["application/json"]["schema"])
            fields = set(request.get("properties", {}))
            for key in call.json:
                if key not in fields:
                    problems.append(f"{name}: body field {key!r} is not in the schema")
            for key in set(request.get("required", [])) - set(call.json):
                problems.append(f"{name}: the schema requires {key!r}, the client sends none")
            if name == "remember_many":  # each item is a memory create's body
                item = _resolve(
                    schema,
                    schema["paths"]["/api/v1/memories"]["post"]["requestBody"]["content"][
                        "application/json"
                    ]["schema"],
                )
                for key in set(call.json["memories"][0]) - set(item["properties"]):
                    problems.append(f"{name}: item field {key!r} is not in the schema")
        problems += _check_result(schema, name, call, _answer_schema(schema, operation))
    return problems


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def test_every_operation_of_the_client_is_in_the_schema_with_its_fields(schema):
    assert disagreements(schema, every_call()) == []


# Operations of the schema the client does not offer, and why.
NOT_IN_THE_CLIENT = {
    ("GET", "/tokens"): "tokens are managed with a signed-in session, not a token",
    ("POST", "/tokens"): "as above",
    ("POST", "/tokens/{id}/revoke"): "as above",
    ("GET", "/schema"): "the schema itself",
}


def test_every_operation_of_the_schema_is_offered_by_the_client(schema):
    offered = {(call.method, call.route) for call in every_call().values()}
    missing = sorted(
        (method.upper(), path.removeprefix("/api/v1"))
        for path, operations in schema["paths"].items()
        for method in operations
        if method in ("get", "post", "put", "patch", "delete")
        and (method.upper(), path.removeprefix("/api/v1")) not in offered
        and (method.upper(), path.removeprefix("/api/v1")) not in NOT_IN_THE_CLIENT
    )
    assert missing == [], "add these to engram_client (or to NOT_IN_THE_CLIENT, with why)"


def test_the_docs_list_every_operation_the_client_leaves_out():
    text = (Path(settings.BASE_DIR) / "docs" / "client.md").read_text()
    section = text.split("## Not in the client")[1].split("\n## ")[0]
    missing = [
        f"{method} {route}"
        for method, route in NOT_IN_THE_CLIENT
        if f"`{method} {route}`" not in section
    ]
    assert missing == [], "docs/client.md's 'Not in the client' should name these"
    # ...and names nothing the client offers now (the list kept in step both ways).
    listed = set(re.findall(r"`(GET|POST|PUT|PATCH|DELETE) (/[^`]*)`", section))
    assert listed == set(NOT_IN_THE_CLIENT), "docs/client.md lists these wrongly"


def test_the_agreement_check_fails_when_a_route_or_field_is_renamed(schema):
    renamed = copy.deepcopy(schema)
    paths = renamed["paths"]
    paths["/api/v1/memories/{id}/unremember"] = paths.pop("/api/v1/memories/{id}/forget")
    body = renamed["components"]["schemas"]["MemoryCreateInputRequest"]["properties"]
    body["text"] = body.pop("topic")
    answer = renamed["components"]["schemas"]["CardOutput"]
    answer["properties"]["ease"] = answer["properties"].pop("easiness")
    problems = disagreements(renamed, every_call())
    assert "forget: POST /api/v1/memories/{id}/forget is not in the schema" in problems
    assert "remember: body field 'topic' is not in the schema" in problems
    assert "remember_many: item field 'topic' is not in the schema" in problems
    assert "review_queue: Card.easiness is not in the answer" in problems


def test_every_operation_is_checked_and_offered_by_both_clients():
    builders = {
        name
        for name, function in inspect.getmembers(ops, inspect.isfunction)
        if function.__module__ == ops.__name__ and function.__annotations__.get("return") == "Call"
    }
    assert builders == set(every_call())

    def public(cls: type) -> set[str]:
        return {name for name in vars(cls) if not name.startswith("_")}

    assert builders <= public(Engram)
    assert public(Engram) - {"close"} == public(AsyncEngram) - {"aclose"}
    for name in public(Engram) - {"close"}:
        sync, coroutine = getattr(Engram, name), getattr(AsyncEngram, name)
        assert inspect.signature(sync).parameters.keys() == (
            inspect.signature(coroutine).parameters.keys()
        ), name


def test_results_keep_fields_the_client_does_not_know():
    association = m.decode(
        m.Association, {"id": 1, "source": 2, "target": 3, "colour": "red", "kind": "x"}
    )
    assert (association.id, association.kind, association.weight) == (1, "x", 0.5)
    assert association.extra == {"colour": "red"}
    with pytest.raises(engram_client.EngramError, match="lacks the field 'target'"):
        m.decode(m.Association, {"id": 1, "source": 2})


def test_a_naive_datetime_is_refused_before_anything_is_sent():
    with pytest.raises(ValueError, match="naive"):
        ops.remember("ns", "text", {"created_at": datetime(2026, 1, 1)})


# A stub server for the statuses a real one gives only under load or failure


class Stub:
    """A local HTTP server answering each request with the next scripted answer (status,
    headers, JSON body, seconds to wait first); it records when each request came."""

    def __init__(self, answers: list[tuple[int, dict[str, str], Any, float]]) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[float, str, str, bytes]] = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                stub.requests.append((time.monotonic(), self.command, self.path, body))
                status, headers, payload, wait = stub.answers.pop(0)
                time.sleep(wait)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    for key, value in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up waiting
                    pass

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Stub:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _error(status: int, code: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"status": status, "code": code, "message": f"{code}.", **extra}}


LINK = {"id": 9, "source": 1, "target": 2, "weight": 0.5, "kind": "related"}


def test_a_429_is_retried_after_the_time_retry_after_names():
    throttled = _error(429, "throttled", limit="API_RATE_LIMIT", retry_after=1)
    with (
        Stub([(429, {"Retry-After": "1"}, throttled, 0), (201, {}, LINK, 0)]) as stub,
        Engram(stub.url, "eng_test", retry=Retry(retries=2, backoff=0.01)) as client,
    ):
        link = client.link(1, 2)
    assert link == m.Association(id=9, source=1, target=2, weight=0.5, kind="related")
    (first, *_), (second, method, path, body) = stub.requests
    assert second - first >= 0.95  # Retry-After, not the 0.01 s backoff
    assert (method, path, json.loads(body)) == (
        "POST",
        "/api/v1/associations",
        {"source": 1, "target": 2},
    )


def test_a_503_is_retried_with_backoff_until_it_gives_up():
    down = _error(503, "unavailable")
    answers = [(503, {}, down, 0), (503, {}, down, 0), (200, {}, [], 0)]
    with (
        Stub(answers) as stub,
        Engram(stub.url, "eng_test", retry=Retry(retries=3, backoff=0.05)) as client,
    ):
        assert client.namespaces() == []
    assert len(stub.requests) == 3

    with (
        Stub([(503, {}, down, 0)] * 3) as stub,
        Engram(stub.url, "eng_test", retry=Retry(retries=2, backoff=0.01)) as client,
        pytest.raises(engram_client.Unavailable) as raised,
    ):
        client.namespaces()
    assert (raised.value.status, raised.value.code, len(stub.requests)) == (503, "unavailable", 3)


def test_a_429_asking_for_longer_than_the_client_waits_is_raised_with_its_limit():
    throttled = _error(429, "throttled", limit="API_RATE_LIMIT", retry_after=3600)
    with (
        Stub([(429, {"Retry-After": "3600"}, throttled, 0)]) as stub,
        Engram(stub.url, "eng_test") as client,
        pytest.raises(engram_client.RateLimited) as raised,
    ):
        client.namespaces()
    assert (raised.value.limit, raised.value.retry_after) == ("API_RATE_LIMIT", 3600.0)
    assert len(stub.requests) == 1


def test_other_errors_are_not_retried_and_a_non_json_one_still_has_its_status():
    with (
        Stub([(400, {}, _error(400, "invalid", fields={"q": ["Too short."]}), 0)]) as stub,
        Engram(stub.url, "eng_test") as client,
        pytest.raises(engram_client.InvalidInput) as raised,
    ):
        client.namespaces()
    assert raised.value.fields == {"q": ["Too short."]} and len(stub.requests) == 1
    with (
        Stub([(502, {"Content-Type": "text/html"}, "<html>Bad gateway</html>", 0)]) as stub,
        Engram(stub.url, "eng_test", retry=Retry(retries=1, backoff=0.01)) as client,
        pytest.raises(engram_client.ServerError) as raised,
    ):
        client.namespaces()
    assert (raised.value.status, raised.value.code) == (502, "http_error")


def test_a_slow_answer_is_a_timeout_and_is_not_retried():
    with (
        Stub([(200, {}, [], 2.0), (200, {}, [], 0)]) as stub,
        Engram(stub.url, "eng_test", timeout=0.3) as client,
    ):
        started = time.monotonic()
        with pytest.raises(engram_client.Timeout):
            client.namespaces()
        assert time.monotonic() - started < 1.5
    assert len(stub.requests) == 1


def test_a_refused_connection_is_retried_then_raised():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    client = Engram(f"http://127.0.0.1:{port}", "eng_test", retry=Retry(retries=2, backoff=0.01))
    with client, pytest.raises(engram_client.TransportError, match="Could not connect"):
        client.namespaces()


def test_the_async_client_retries_a_503_too():
    down = _error(503, "unavailable")

    async def run(url: str) -> list[m.Namespace]:
        async with AsyncEngram(url, "eng_test", retry=Retry(backoff=0.01)) as client:
            return await client.namespaces()

    with Stub([(503, {}, down, 0), (200, {}, [], 0)]) as stub:
        assert asyncio.run(run(stub.url)) == []
    assert len(stub.requests) == 2


# Every method against a real server


class CountingTransport(httpx.HTTPTransport):
    """Records each request's method and URL, to count pages."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append((request.method, str(request.url)))
        return super().handle_request(request)


SEED = """
from django.contrib.auth import get_user_model
from memories import services
user = get_user_model().objects.create_user("client-{tag}", password="pw-client-12345")
token, secret = services.token_create(owner=user, name="c", all_namespaces=True, access="write")
print(secret)
"""


@pytest.fixture(scope="module")
def server(prepared_database, tmp_path_factory) -> Iterator[Gunicorn]:
    # Webhook targets on loopback allowed: the test subscribes a local address.
    env = server_env(prepared_database, API_RATE_LIMIT="100000/hour", WEBHOOK_ALLOW_LOOPBACK=1)
    log = tmp_path_factory.mktemp("client") / "gunicorn.log"
    with Gunicorn(env, log, workers=2, threads=2) as running:
        yield running


@pytest.fixture(scope="module")
def secret(prepared_database) -> str:
    """A write token over all namespaces of a new user, who may create namespaces."""
    code = SEED.format(tag=uuid.uuid4().hex[:8])
    return manage(server_env(prepared_database), "shell", "--no-imports", "-c", code).split()[-1]


@pytest.mark.slow
def test_card_deck_and_optimize_methods_against_the_server(server, secret):
    """suspend/unsuspend, bury/unbury, decks/set_deck, optimization/optimize/reset, and a
    second start_session picking up the open session (200, resumed)."""
    with Engram(server.url, secret) as client:
        tag = uuid.uuid4().hex[:6]
        ns = client.create_namespace(f"Cards {tag}", slug=f"cards-{tag}")
        for i in range(2):
            client.remember(ns.slug, f"Fact {i} of the deck", topic="facts")
        card = client.review_queue(ns.slug).new[0]

        suspended = client.suspend(card.id)
        assert isinstance(suspended, m.CardState) and suspended.suspended_at is not None
        assert card.id not in {c.id for c in client.review_queue(ns.slug).new}
        assert client.unsuspend(card.id, clear_leech=True).suspended_at is None
        later = datetime.now(UTC) + timedelta(days=3)
        buried = client.bury(card.id, until=later)
        assert buried.buried_until is not None and buried.buried_until > datetime.now(UTC)
        assert client.unbury(card.id).buried_until is None
        with pytest.raises(engram_client.NotFound):
            client.suspend(10**9)

        decks = client.decks(ns.slug, tz="UTC")
        assert isinstance(decks.decks[0], m.Deck)
        assert {d.deck: d.total for d in decks.decks} == {"facts": 2}
        assert decks.decks[0].own_new_cards_per_day is None
        changed = client.set_deck(ns.slug, "facts", 1)
        assert changed.decks[0].own_new_cards_per_day == 1
        assert changed.decks[0].new_cards_per_day == 1
        assert client.set_deck(ns.slug, "facts", None).decks[0].own_new_cards_per_day is None
        with pytest.raises(engram_client.InvalidInput) as refused:
            client.set_deck(ns.slug, "facts", -1)
        assert "new_cards_per_day" in refused.value.fields

        state = client.optimization(ns.slug)
        assert isinstance(state, m.Optimization)
        assert (state.parameters, state.reviews, state.fit) == (None, 0, None)
        assert state.min_reviews > 0
        with pytest.raises(engram_client.InvalidInput) as too_few:
            client.optimize(ns.slug)
        assert "namespace" in too_few.value.fields
        assert client.reset_optimization(ns.slug).parameters is None

        first = client.start_session(ns.slug)
        again = client.start_session(ns.slug)
        assert again.id == first.id
        assert (first.extra["resumed"], again.extra["resumed"]) == (False, True)


@pytest.mark.slow
def test_every_method_against_the_server(server, secret):
    counting = CountingTransport()
    with Engram(server.url, secret, transport=counting) as client:
        tag = uuid.uuid4().hex[:6]
        main = client.create_namespace(f"Main {tag}", slug=f"main-{tag}", dedupe="exact")
        copy_ = client.create_namespace(f"Copy {tag}", slug=f"copy-{tag}")
        assert (main.slug, main.mode) == (f"main-{tag}", "personal")
        counts = {ns.slug: ns.memory_count for ns in client.namespaces()}
        assert (counts[main.slug], counts[copy_.slug]) == (0, 0)
        assert client.update_namespace(main.slug, description="Tests").description == "Tests"
        assert client.namespace(main.slug).extra["desired_retention"] == 0.9

        tea = client.remember(main.slug, "User prefers green tea", topic="user", keywords=["tea"])
        assert (tea.deduplicated, tea.topic, tea.keywords, tea.namespace) == (
            False,
            "user",
            ["tea"],
            main.slug,
        )
        again = client.remember(main.slug, "user prefers  GREEN tea")
        assert (again.id, again.deduplicated, again.use_count) == (tea.id, True, tea.use_count + 1)

        many = client.remember_many(
            [
                "The flight to Lisbon leaves on Friday",
                {"content": "Book the hotel near the river", "session_id": "chat-1"},
                "User prefers green tea",
            ],
            namespace=main.slug,
        )
        assert [memory.deduplicated for memory in many] == [False, False, True]
        assert many[2].id == tea.id and many[1].session_id == "chat-1"

        hits = client.recall("When does the Lisbon flight leave?", namespaces=[main.slug])
        assert hits.results[0].memory_id == many[0].id
        assert hits.results[0].content == "The flight to Lisbon leaves on Friday"
        assert hits.query == "When does the Lisbon flight leave?"

        assert client.get(tea.id).content == "User prefers green tea"
        changed = client.update(tea.id, content="User prefers jasmine tea", topic="drinks")
        assert (changed.content, changed.topic) == ("User prefers jasmine tea", "drinks")
        assert client.forget(tea.id, "no longer true").status == "forgotten"
        assert client.restore(tea.id).status != "forgotten"
        assert client.touch(tea.id, boost_strength=True).use_count > again.use_count
        kinds = [event.kind for event in client.history(tea.id)]
        assert kinds[0] == "touched" and "updated" in kinds and kinds[-1] == "created"
        assert client.reinforce_due(namespace=main.slug, limit=5) == []  # all used just now
        digest = client.about_to_forget(namespace=main.slug)
        assert (digest.count, digest.days, digest.memories) == (0, 3, [])
        uses = client.get(tea.id).use_count
        kept = client.act("keep", [tea.id, many[0].id])
        assert (kept.action, kept.selected, kept.changed) == ("keep", 2, 2)
        assert client.get(tea.id).use_count == uses + 1

        hooked = client.create_namespace(f"Hooked {tag}", slug=f"hooked-{tag}").slug
        hook = client.create_webhook(
            hooked, "http://127.0.0.1:9/hook", events=["memory.created"], ceiling="internal"
        )
        assert hook.secret and hook.secret.startswith("whsec_") and hook.enabled
        assert [w.id for w in client.webhooks(hooked)] == [hook.id]
        assert client.webhook(hook.id).secret is None  # shown once
        client.remember(hooked, "Announced to the hook")
        [delivery] = client.webhook_deliveries(hook.id)
        assert delivery.event_type == "memory.created"
        assert client.redeliver(delivery.id).webhook_id == delivery.webhook_id
        assert client.update_webhook(hook.id, enabled=False).enabled is False
        client.delete_webhook(hook.id)
        assert client.webhooks(hooked) == []

        for number in range(5):
            client.remember(main.slug, f"Page filler number {number}")
        counting.seen.clear()
        listed = list(client.memories(namespace=main.slug, limit=2))
        assert len(listed) == 8 and len({memory.id for memory in listed}) == 8
        assert len(counting.seen) == 4  # pages of 2, 2, 2 and 2
        assert [memory.id for memory in client.memories(namespace=main.slug, q="Lisbon")] == [
            many[0].id
        ]

        link = client.link(many[0].id, many[1].id, weight=0.8, kind="trip")
        assert (link.source, link.target, link.weight, link.kind) == (
            many[0].id,
            many[1].id,
            0.8,
            "trip",
        )
        assert link.id in {a.id for a in client.associations(memory=many[0].id)}
        relation = client.relate(main.slug, "Ada", "flies_to", "Lisbon", memory=many[0].id)
        assert (relation.subject, relation.predicate, relation.object) == (
            "ada",
            "flies_to",
            "lisbon",
        )
        assert [r.id for r in client.relations(namespace=main.slug, entity="ada")] == [relation.id]
        assert {"ada", "lisbon"} <= {e.name for e in client.entities(namespace=main.slug)}
        assert client.declare_entity(main.slug, "Bob", kind="person").name == "bob"
        assert list(client.consolidations(namespace=main.slug)) == []

        queue = client.review_queue(main.slug, limit=50)
        assert queue.namespace == main.slug and queue.new
        card = next(card for card in queue.new if card.memory == many[0].id)
        log = client.grade(card.id, "good", version=card.version)
        assert (log.card, log.grade, log.source) == (card.id, 4, "human")
        with pytest.raises(engram_client.Conflict) as stale:
            client.grade(card.id, "good", version=card.version)
        assert stale.value.code == "grade_conflict"
        assert client.undo(card.id).card == card.id
        stats = client.review_stats(main.slug)
        assert stats.total >= 1 and set(stats.agent_reinforcement) == {
            "simulated",
            "implicit",
            "today",
        }
        session = client.start_session(main.slug, limit=5)
        assert session.next_card is not None and session.mode == "study"
        session = client.session_grade(session.id, session.next_card.id, 5)
        assert client.session(session.id).done == 1
        assert client.finish_session(session.id).status == "finished"
        cram = client.start_cram(main.slug, cards=[card.id], seed=1)
        cram = client.cram_answer(cram.id, card.id, True)
        assert cram.score is not None and cram.score["correct"] == 1
        assert client.cram(cram.id).id == cram.id
        assert client.finish_cram(cram.id).status == "finished"

        # Export as a stream of records, then import them into the other namespace.
        records = list(client.export_namespace(main.slug))
        assert records[0]["type"] == "header" and records[-1]["type"] == "end"
        memory_lines = [r for r in records if r["type"] == "memory"]
        assert len(memory_lines) == 8
        imported = client.import_namespace(copy_.slug, iter(records))
        assert isinstance(imported, m.ImportResult)
        assert imported.counts["memory"] == 8 and imported.counts["association"] >= 1
        assert set(imported.memory_ids) == {line["id"] for line in memory_lines}
        assert len(list(client.memories(namespace=copy_.slug, limit=500))) == 8
        # The raw bytes, written as they stream, import the same (all deduplicated now).
        raw = io.BytesIO()
        assert client.export_namespace_to(main.slug, raw) == len(raw.getvalue())
        again_imported = client.import_namespace(copy_.slug, raw.getvalue())
        assert isinstance(again_imported, m.ImportResult)
        assert (again_imported.counts["memory"], again_imported.counts["deduplicated"]) == (0, 8)

        client.unlink(link.id)
        client.unrelate(relation.id)
        client.purge(many[1].id)
        with pytest.raises(engram_client.NotFound):
            client.get(many[1].id)


@pytest.mark.slow
def test_errors_carry_the_api_error_shape(server, secret, prepared_database):
    with Engram(server.url, secret) as client:
        slug = f"errors-{uuid.uuid4().hex[:6]}"
        client.create_namespace(slug, slug=slug)
        mine = client.remember(slug, "Only mine")
        with pytest.raises(engram_client.InvalidInput) as invalid:
            client.remember(slug, "", credibility=9)
        assert invalid.value.status == 400 and invalid.value.code == "invalid"
        assert set(invalid.value.fields) == {"content", "credibility"}
        with pytest.raises(engram_client.InvalidInput) as bulk:
            client.remember_many([{"content": "fine"}, {"content": ""}], namespace=slug)
        assert list(bulk.value.fields["memories"]) == ["1"]
        with pytest.raises(engram_client.InvalidInput) as broken:
            client.import_namespace(slug, b'{"type": "header"}\n')
        assert broken.value.code == "invalid_import" and broken.value.message.startswith("line")

    _, other_secret = new_token(prepared_database)
    with Engram(server.url, other_secret) as other:
        with pytest.raises(engram_client.NotFound) as missing:
            other.get(mine.id)
        assert (missing.value.status, missing.value.code) == (404, "not_found")
        with pytest.raises(engram_client.NotFound):
            other.forget(mine.id, "not yours")

    with Engram(server.url, "eng_000000000000_nothing") as stranger:
        with pytest.raises(engram_client.Unauthorized) as refused:
            stranger.namespaces()
        assert refused.value.status == 401 and refused.value.message


@pytest.mark.slow
def test_the_async_client_remembers_recalls_and_lists(server, secret):
    async def run() -> None:
        async with AsyncEngram(server.url, secret) as client:
            slug = f"async-{uuid.uuid4().hex[:6]}"
            await client.create_namespace(slug, slug=slug)
            first = await client.remember(slug, "The cat is called Miso", topic="pets")
            assert first.deduplicated is False
            many = await client.remember_many(
                [f"Async filler {n}" for n in range(4)], namespace=slug
            )
            assert all(memory.deduplicated is False for memory in many)
            hits = await client.recall("what is the cat called?", namespaces=[slug])
            assert hits.results[0].memory_id == first.id
            listed = [memory.id async for memory in client.memories(namespace=slug, limit=2)]
            assert sorted(listed) == sorted([first.id, *(memory.id for memory in many)])
            records = [record async for record in client.export_namespace(slug)]
            assert records[-1]["type"] == "end"
            with pytest.raises(engram_client.NotFound):
                await client.get(10**9)

    asyncio.run(run())
