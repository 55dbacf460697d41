from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from memories import services
from memories.models import Classification, Memory, MemoryEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def writer(user, namespace, make_token, api):
    _, secret = make_token(user, namespaces=[namespace], ceiling=Classification.CONFIDENTIAL)
    return api(secret)


def test_it_creates_reads_and_lists_a_memory(writer, namespace):
    created = writer.post(
        "/api/v1/memories",
        {
            "namespace": namespace.slug,
            "content": "Deploys happen on Tuesdays.",
            "topic": "ops",
            "keywords": ["deploy"],
            "classification": "confidential",
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["namespace"] == namespace.slug
    assert body["classification"] == "confidential"
    assert body["use_count"] == 0 and body["decay_score"] == pytest.approx(1.0, abs=1e-3)

    detail = writer.get(f"/api/v1/memories/{body['id']}")
    assert detail.status_code == 200 and detail.json()["content"] == "Deploys happen on Tuesdays."

    listed = writer.get("/api/v1/memories", {"topic": "ops"})
    assert [m["id"] for m in listed.json()["results"]] == [body["id"]]
    event = MemoryEvent.objects.get(memory_ref=body["id"])
    assert (event.kind, event.source) == ("created", "api")


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": "x", "strength": 3}, "strength"),
        ({"content": "x", "tier": "forever"}, "tier"),
        ({"content": "x", "classification": "secret"}, "classification"),
        ({"content": "x", "use_count": 5}, "use_count"),
        ({"content": "x", "colour": "blue"}, "colour"),
        ({"content": "x", "namespace": "someone-elses"}, "namespace"),
        ({"content": "x", "classification": "restricted"}, "classification"),
        ({"content": "x", "keywords": "deploy"}, "keywords"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(
    writer, namespace, payload, field, nothing_written
):
    payload = {"namespace": namespace.slug, **payload}
    with nothing_written():
        response = writer.post("/api/v1/memories", payload, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and field in error["fields"]
    assert Memory.objects.count() == 0


def test_read_only_fields_are_named_as_such(writer, make_memory, nothing_written):
    memory = make_memory()
    with nothing_written():
        response = writer.patch(f"/api/v1/memories/{memory.pk}", {"use_count": 9}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"use_count": ["This field is read-only."]}
    with nothing_written():
        response = writer.patch(f"/api/v1/memories/{memory.pk}", {"namespace": "x"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"namespace": ["This field is read-only."]}


@override_settings(API_MAX_CONTENT_LENGTH=100)
def test_content_longer_than_the_limit_names_the_limit(writer, namespace, nothing_written):
    with nothing_written():
        response = writer.post(
            "/api/v1/memories", {"namespace": namespace.slug, "content": "x" * 101}, format="json"
        )
    assert response.status_code == 400
    assert "API_MAX_CONTENT_LENGTH" in response.json()["error"]["fields"]["content"][0]


@override_settings(API_MAX_BODY_BYTES=2048)
def test_a_body_over_the_limit_is_a_413_naming_the_limit(writer, namespace, nothing_written):
    with nothing_written():
        response = writer.post(
            "/api/v1/memories", {"namespace": namespace.slug, "content": "x" * 5000}, format="json"
        )
    assert response.status_code == 413
    assert response.json()["error"]["limit"] == "API_MAX_BODY_BYTES"


def test_update_forget_restore_touch_and_purge(writer, make_memory):
    memory = make_memory("Deploys happen on Tuesdays.")
    url = f"/api/v1/memories/{memory.pk}"
    assert (
        writer.patch(url, {"content": "Deploys happen on Thursdays."}, format="json").status_code
        == 200
    )
    response = writer.post(f"{url}/forget", {"reason": "obsolete"}, format="json")
    assert response.json()["status"] == "forgotten"
    assert writer.get("/api/v1/memories").json()["results"] == []
    assert len(writer.get("/api/v1/memories", {"status": "forgotten"}).json()["results"]) == 1
    assert writer.post(f"{url}/restore").json()["status"] == "active"
    touched = writer.post(f"{url}/touch", {"boost_strength": True}, format="json").json()
    assert touched["use_count"] == 1 and touched["strength"] == pytest.approx(1.1)

    history = writer.get(f"{url}/history").json()["results"]
    assert [e["kind"] for e in history] == [
        "touched",
        "restored",
        "forgotten",
        "updated",
        "created",
    ]
    assert history[3]["before"] == {"content": "Deploys happen on Tuesdays."}

    assert writer.delete(url).status_code == 204
    assert writer.get(url).status_code == 404
    assert not Memory.objects.filter(pk=memory.pk).exists()


def test_forget_without_a_reason_is_refused(writer, make_memory, nothing_written):
    memory = make_memory()
    with nothing_written():
        response = writer.post(f"/api/v1/memories/{memory.pk}/forget", {}, format="json")
    assert response.status_code == 400 and "reason" in response.json()["error"]["fields"]


def test_list_filters(writer, make_memory):
    from datetime import timedelta

    from django.utils import timezone

    old = make_memory("Old ops note", topic="ops", created_at=timezone.now() - timedelta(days=30))
    semantic = make_memory("Rust borrow checker rules", topic="rust", memory_type="semantic")
    core = make_memory(
        "User prefers Python", topic="user", tier="core", classification=Classification.PUBLIC
    )

    def ids(**params):
        response = writer.get("/api/v1/memories", params)
        assert response.status_code == 200, response.json()
        return {m["id"] for m in response.json()["results"]}

    assert ids(topic="ops") == {old.pk}
    assert ids(memory_type="semantic") == {semantic.pk}
    assert ids(tier="core") == {core.pk}
    assert ids(classification="public") == {core.pk}
    cutoff = (timezone.now() - timedelta(days=1)).isoformat()
    assert ids(created_before=cutoff) == {old.pk}
    assert ids(created_after=cutoff) == {semantic.pk, core.pk}
    assert ids(q="borrow") == {semantic.pk}
    assert ids(q="BORRÓW chécker") == {semantic.pk}
    bad = writer.get("/api/v1/memories", {"tier": "forever"})
    assert bad.status_code == 400 and "tier" in bad.json()["error"]["fields"]
    unknown = writer.get("/api/v1/memories", {"colour": "blue"})
    assert unknown.status_code == 400 and "colour" in unknown.json()["error"]["fields"]


def test_cursor_pagination_walks_every_memory_once(writer, make_memory):
    made = {make_memory(f"memory number {i}").pk for i in range(7)}
    seen: list[int] = []
    response = writer.get("/api/v1/memories", {"limit": 3}).json()
    while True:
        seen += [m["id"] for m in response["results"]]
        if not response["next"]:
            break
        response = writer.get(response["next"]).json()
    assert sorted(seen) == sorted(made)


@override_settings(API_MAX_PAGE_SIZE=5)
def test_a_page_size_over_the_maximum_names_the_limit(writer):
    response = writer.get("/api/v1/memories", {"limit": 6})
    assert response.status_code == 400
    assert "API_MAX_PAGE_SIZE" in response.json()["error"]["fields"]["limit"][0]


def test_the_list_costs_the_same_queries_for_5_or_50_memories(writer, make_memory):
    def count() -> int:
        writer.get("/api/v1/memories")  # warm: the token's first use stamps last_used_at
        with CaptureQueriesContext(connection) as ctx:
            assert writer.get("/api/v1/memories", {"limit": 100}).status_code == 200
        return len(ctx.captured_queries)

    for i in range(5):
        make_memory(f"m{i}")
    small = count()
    for i in range(45):
        make_memory(f"n{i}")
    assert count() == small


def test_bulk_create_is_all_or_nothing_with_per_item_errors(writer, namespace, nothing_written):
    payload = {
        "namespace": namespace.slug,
        "memories": [
            {"content": "first"},
            {"content": ""},
            {"content": "third", "strength": 9},
        ],
    }
    with nothing_written():
        response = writer.post("/api/v1/memories/bulk", payload, format="json")
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]["memories"]
    assert set(fields) == {"1", "2"}
    assert "content" in fields["1"] and "strength" in fields["2"]
    assert Memory.objects.count() == 0 and MemoryEvent.objects.count() == 0

    payload["memories"] = [{"content": f"fact {i}", "topic": "bulk"} for i in range(20)]
    response = writer.post("/api/v1/memories/bulk", payload, format="json")
    assert response.status_code == 201
    assert len(response.json()) == 20
    assert Memory.objects.filter(topic="bulk").count() == 20
    assert MemoryEvent.objects.filter(kind="created").count() == 20
    assert all(m.search_text.startswith("fact") for m in Memory.objects.all())


def test_bulk_without_a_namespace_says_it_is_required_not_null(writer, namespace, nothing_written):
    payload = {"memories": [{"content": "x"}, {"content": "y", "namespace": namespace.slug}]}
    with nothing_written():
        response = writer.post("/api/v1/memories/bulk", payload, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["memories"] == {
        "0": {"namespace": ["This field is required, in the item or for the request."]}
    }
    payload["memories"][0]["namespace"] = None  # a null sent is a null
    with nothing_written():
        response = writer.post("/api/v1/memories/bulk", payload, format="json")
    assert "null" in str(response.json()["error"]["fields"]["memories"]["0"]["namespace"])


def test_bulk_reads_only_the_namespaces_its_items_name(
    user, namespace, make_token, api, nothing_written
):
    other = services.namespace_create(owner=user, name="Second")
    for n in range(20):
        services.namespace_create(owner=user, name=f"Unnamed {n}")
    writer = api(make_token(user, all_namespaces=True)[1])
    payload = {
        "namespace": namespace.slug,
        "memories": [
            {"content": "default namespace"},
            {"content": "the other one", "namespace": other.slug},
            {"content": ""},
            {"content": "nowhere", "namespace": "no-such-namespace"},
        ],
    }
    with nothing_written():
        refused = writer.post("/api/v1/memories/bulk", payload, format="json")
    assert refused.status_code == 400
    fields = refused.json()["error"]["fields"]["memories"]
    assert list(fields) == ["2", "3"]  # in item order, whichever check refused them
    assert "content" in fields["2"] and "namespace" in fields["3"]

    payload["memories"] = payload["memories"][:2]
    with CaptureQueriesContext(connection) as ctx:
        response = writer.post("/api/v1/memories/bulk", payload, format="json")
    assert response.status_code == 201
    assert [m["namespace"] for m in response.json()] == [namespace.slug, other.slug]
    reads = [q["sql"] for q in ctx.captured_queries if 'FROM "memories_namespace"' in q["sql"]]
    # The namespaces are read by the slugs named, not all twenty-two of the user's.
    assert any(f"'{other.slug}'" in sql and f"'{namespace.slug}'" in sql for sql in reads)


def test_bulk_reports_the_services_item_errors_by_index_and_field(
    writer, namespace, monkeypatch, nothing_written
):
    # The serializer catches every rule first (tests/api/test_memory_input.py), so no
    # request body reaches the service's own refusals. Past the serializer, two items are
    # spoiled the way only the service checks (blank after the strip, a NUL character),
    # and the real memory_bulk_create refuses them and writes nothing.
    real = services.memory_bulk_create

    def spoiled(*, items, **kwargs):
        items = [dict(item) for item in items]
        items[1]["content"] = " \t "
        items[3]["topic"] = "a\x00b"
        return real(items=items, **kwargs)

    monkeypatch.setattr(services, "memory_bulk_create", spoiled)
    payload = {"namespace": namespace.slug, "memories": [{"content": f"m{i}"} for i in range(5)]}
    with nothing_written():
        response = writer.post("/api/v1/memories/bulk", payload, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["memories"] == {
        "1": {"content": ["This field may not be blank."]},
        "3": {"topic": ["Null characters are not allowed."]},
    }


def test_bulk_reports_an_error_of_a_whole_item_as_non_field_errors(writer, namespace, monkeypatch):
    # A stub, as no real input reaches this branch: memory_build raises field errors only,
    # but the endpoint must still answer a service's "<index>" error (no field) in its shape.
    from django.core.exceptions import ValidationError

    def refuse(**kwargs):
        raise ValidationError({"4": ["Whole item refused."]})

    monkeypatch.setattr(services, "memory_bulk_create", refuse)
    payload = {"namespace": namespace.slug, "memories": [{"content": "a"}] * 5}
    response = writer.post("/api/v1/memories/bulk", payload, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["memories"] == {
        "4": {"non_field_errors": ["Whole item refused."]}
    }


def test_bulk_of_many_items_stores_them_all_with_events(writer, namespace):
    payload = {
        "namespace": namespace.slug,
        "memories": [
            {"content": f"Memory {i}", "keywords": [f"k{i}"], "strength": 1.5, "topic": "many"}
            for i in range(250)
        ],
    }
    response = writer.post("/api/v1/memories/bulk", payload, format="json")
    assert response.status_code == 201
    body = response.json()
    assert [row["content"] for row in body] == [f"Memory {i}" for i in range(250)]
    stored = {m.pk: m for m in Memory.objects.filter(topic="many")}
    assert len(stored) == 250
    for row in body:
        memory = stored[row["id"]]
        assert memory.content == row["content"] and memory.keywords == row["keywords"]
        assert memory.search_text == f"{row['content'].lower()} {row['keywords'][0]}"
    assert MemoryEvent.objects.filter(kind="created", memory_id__in=stored).count() == 250
    assert MemoryEvent.objects.filter(source="api").count() == 250


@override_settings(API_BULK_MAX=3)
def test_bulk_over_the_limit_names_the_limit(writer, namespace, nothing_written):
    payload = {"namespace": namespace.slug, "memories": [{"content": "x"}] * 4}
    with nothing_written():
        response = writer.post("/api/v1/memories/bulk", payload, format="json")
    assert response.status_code == 400
    assert "API_BULK_MAX" in response.json()["error"]["fields"]["memories"][0]


def test_read_only_tokens_cannot_write(
    user, namespace, make_token, api, make_memory, nothing_written
):
    _, secret = make_token(user, namespaces=[namespace], access="read")
    reader = api(secret)
    memory = make_memory()
    assert reader.get(f"/api/v1/memories/{memory.pk}").status_code == 200
    with nothing_written():
        response = reader.post(
            "/api/v1/memories", {"namespace": namespace.slug, "content": "x"}, format="json"
        )
        assert response.status_code == 403
        assert response.json()["error"]["message"] == "This token is read-only."
        assert reader.delete(f"/api/v1/memories/{memory.pk}").status_code == 403
        url = f"/api/v1/memories/{memory.pk}"
        assert reader.patch(url, {"content": "y"}, format="json").status_code == 403
        assert reader.post(f"{url}/forget", {"reason": "r"}, format="json").status_code == 403
    assert Memory.objects.count() == 1


def test_namespaces_can_be_created_listed_and_updated(
    user, make_token, api, namespace, nothing_written
):
    _, secret = make_token(user)  # write token over all namespaces
    client = api(secret)
    created = client.post(
        "/api/v1/namespaces", {"name": "Agent 7", "mode": "agent_memory"}, format="json"
    )
    assert created.status_code == 201, created.json()
    assert created.json()["slug"] == "agent-7"
    assert created.json()["weights"]["utility"] == 0.2
    slugs = [ns["slug"] for ns in client.get("/api/v1/namespaces").json()]
    assert sorted(slugs) == ["agent-7", "work"]
    updated = client.patch(
        "/api/v1/namespaces/agent-7",
        {"scheduler": "fsrs", "new_cards_per_day": 10, "weight_utility": 0.3},
        format="json",
    )
    assert updated.status_code == 200, updated.json()
    assert updated.json()["weights"]["utility"] == 0.3
    assert updated.json()["scheduler"] == "fsrs"
    with nothing_written():
        bad = client.patch("/api/v1/namespaces/agent-7", {"desired_retention": 2}, format="json")
        assert bad.status_code == 400 and "desired_retention" in bad.json()["error"]["fields"]
        bad = client.patch("/api/v1/namespaces/agent-7", {"slug": "x"}, format="json")
        assert bad.status_code == 400
        assert bad.json()["error"]["fields"] == {"slug": ["This field is read-only."]}


def test_a_token_limited_to_some_namespaces_cannot_create_namespaces(
    user, namespace, make_token, api, nothing_written
):
    _, secret = make_token(user, namespaces=[namespace])
    with nothing_written():
        response = api(secret).post("/api/v1/namespaces", {"name": "Other"}, format="json")
    assert response.status_code == 403


def test_associations_entities_relations_and_digests(
    writer, make_memory, namespace, nothing_written
):
    a, b = make_memory("Alice works with Bob"), make_memory("Bob prefers written updates")
    link = writer.post(
        "/api/v1/associations", {"source": a.pk, "target": b.pk, "weight": 0.7}, format="json"
    )
    assert link.status_code == 201
    with nothing_written():
        again = writer.post("/api/v1/associations", {"source": a.pk, "target": b.pk}, format="json")
    assert again.status_code == 400 and "target" in again.json()["error"]["fields"]
    assert [
        x["target"] for x in writer.get("/api/v1/associations", {"memory": a.pk}).json()["results"]
    ] == [b.pk]

    relation = writer.post(
        "/api/v1/relations",
        {
            "namespace": namespace.slug,
            "subject": "Alice",
            "predicate": "works with",
            "object": "Bob",
            "memory": a.pk,
        },
        format="json",
    )
    assert relation.status_code == 201, relation.json()
    assert relation.json()["predicate"] == "works_with"
    found = writer.get("/api/v1/relations", {"entity": "alice"}).json()["results"]
    assert [(r["subject"], r["object"]) for r in found] == [("alice", "bob")]
    entities = writer.get("/api/v1/entities", {"namespace": namespace.slug}).json()["results"]
    assert {e["name"] for e in entities} == {"alice", "bob"}

    from memories.models import Consolidation

    Consolidation.objects.create(
        namespace=namespace,
        period="daily",
        period_start="2026-11-20",
        topic="",
        text="Alice and Bob",
        memory_ids=[a.pk, b.pk],
        classification=max(a.classification, b.classification),
    )
    digests = writer.get("/api/v1/consolidations", {"period": "daily"}).json()["results"]
    assert [d["text"] for d in digests] == ["Alice and Bob"]

    assert writer.delete(f"/api/v1/associations/{link.json()['id']}").status_code == 204
    assert writer.delete(f"/api/v1/relations/{relation.json()['id']}").status_code == 204


def test_errors_on_unknown_api_paths_are_json(writer):
    response = writer.get("/api/v1/nowhere")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": {"status": 404, "code": "not_found", "message": "Not found."}
    }


def test_unauthenticated_requests_get_a_json_401(api):
    response = api().get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    assert response["WWW-Authenticate"] == "Bearer"


def test_session_users_use_the_api_too(client, user, make_memory):
    memory = make_memory(classification=Classification.RESTRICTED)
    client.force_login(user)
    response = client.get(f"/api/v1/memories/{memory.pk}")
    assert response.status_code == 200  # a person sees their own restricted memories


# --- Services are the only writers of memories ------------------------------------------

PRODUCT = ("config", "memories", "review", "recall", "benchmarks")
# Modules that write memory rows besides the services (any `services.py` or `services/`
# module), and why each may.
SANCTIONED_WRITERS = {
    "memories/importer.py": "a namespace import, set-based and all or nothing",
    "memories/sweep.py": "the decay sweep's set-based SQL (tests/background/test_sweep.py)",
    "memories/tracking.py": "recall's one writer of boosts and counters (docs/architecture.md)",
    "recall/backfill.py": "the embedding backfill writes vectors",
    "recall/embeddings.py": "the embedding backfill writes vectors",
    "review/management/commands/seed_demo.py": "demo data: ages the demo memories",
    "benchmarks/": "benchmark corpora are loaded and dropped in bulk, outside any request",
}
_WRITE_METHODS = {
    "update",
    "bulk_create",
    "bulk_update",
    "create",
    "get_or_create",
    "update_or_create",
    "delete",
    "save",
}
_TABLE = "Memory._meta.db_table"
_SQL_WRITE = re.compile(
    r"\b(?:UPDATE|INSERT\s+INTO|DELETE\s+FROM)\s+\"?memories_memory\"?(?!\w)", re.IGNORECASE
)


def _root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _memory_writes(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, what) of every write of memory rows the code makes: ORM writes on `Memory`
    or on a variable holding one, the bulk writers given `Memory`, and SQL that updates,
    inserts into or deletes from the memories table (named, or through Memory._meta)."""
    found: set[tuple[int, str]] = set()
    module_tables: set[str] = set()
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for scope in [tree, *functions]:
        if scope is tree:
            statements = [s for s in tree.body if not isinstance(s, ast.FunctionDef | ast.ClassDef)]
        else:
            statements = scope.body
        nodes = [node for statement in statements for node in ast.walk(statement)]
        tables, instances = set(module_tables), set()
        if scope is not tree:
            for arg in scope.args.args + scope.args.kwonlyargs:
                if arg.annotation and "Memory" in re.findall(r"\w+", ast.unparse(arg.annotation)):
                    instances.add(arg.arg)
        for node in nodes:
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                pairs = [(target, node.value)]
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs = list(zip(target.elts, node.value.elts, strict=False))
                for name, value in pairs:
                    if not isinstance(name, ast.Name):
                        continue
                    if _TABLE in ast.unparse(value):
                        tables.add(name.id)
                    built = isinstance(value, ast.Call) and ast.unparse(value.func) in {
                        "memory_build",
                        "services.memory_build",
                    }
                    if _root(value) == "Memory" or built:
                        instances.add(name.id)
        if scope is tree:
            module_tables = tables
        for node in nodes:
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in _WRITE_METHODS:
                    target = func.value
                    if _root(target) == "Memory" or (
                        isinstance(target, ast.Name) and target.id in instances
                    ):
                        found.add((node.lineno, ast.unparse(func)))
                name = getattr(func, "id", getattr(func, "attr", ""))
                if name in ("insert_rows", "writer") and node.args[:1]:
                    found |= {(node.lineno, name)} if _root(node.args[0]) == "Memory" else set()
                if name == "insert_new":
                    found.add((node.lineno, name))
            text = None
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            elif isinstance(node, ast.JoinedStr):
                text = "".join(
                    part.value
                    if isinstance(part, ast.Constant)
                    else "memories_memory"
                    if (isinstance(part.value, ast.Name) and part.value.id in tables)
                    or _TABLE in ast.unparse(part.value)
                    else "{}"
                    for part in node.values
                )
            if text and (match := _SQL_WRITE.search(text)):
                found.add((node.lineno, match.group(0)))
    return sorted(found)


def _writers() -> dict[str, list[tuple[int, str]]]:
    root = Path(__file__).resolve().parents[3]
    writers = {}
    for package in PRODUCT:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            writes = _memory_writes(ast.parse(path.read_text(), str(path)))
            if writes:
                writers[path.relative_to(root).as_posix()] = writes
    return writers


def _sanctioned(path: str) -> bool:
    parts = path.split("/")
    if parts[-1] == "services.py" or "services" in parts[:-1]:
        return True
    return any(
        path == name or (name.endswith("/") and path.startswith(name))
        for name in SANCTIONED_WRITERS
    )


def test_services_are_the_only_writers(writer, namespace):
    writers = _writers()
    # The scan sees the writes it looks for: the services' saves, updates and bulk writes,
    # and the sweep's and tracking's SQL.
    services_writes = [
        what
        for path, writes in writers.items()
        if path.startswith("memories/services")
        for _, what in writes
    ]
    assert {"memory.save", "writer", "insert_new"} <= set(services_writes), services_writes
    sql = {what.split()[0].upper() for writes in writers.values() for _, what in writes}
    assert {"UPDATE", "DELETE"} <= sql, writers
    unsanctioned = {path: writes for path, writes in writers.items() if not _sanctioned(path)}
    assert not unsanctioned, f"memory rows written outside the services: {unsanctioned}"
    # And a write through the API is the service's: its history event is recorded.
    before = MemoryEvent.objects.count()
    writer.post("/api/v1/memories", {"namespace": namespace.slug, "content": "x"}, format="json")
    assert MemoryEvent.objects.count() == before + 1


@pytest.mark.parametrize("path", ["entities", "relations", "associations", "consolidations"])
def test_list_parameters_are_validated(writer, path):
    response = writer.get(f"/api/v1/{path}", {"namespace": "bad\x00slug"})
    assert response.status_code == 400 and "namespace" in response.json()["error"]["fields"]
    response = writer.get(f"/api/v1/{path}", {"colour": "x"})
    assert response.status_code == 400 and "colour" in response.json()["error"]["fields"]
