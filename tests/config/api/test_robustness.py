"""No input gets a 5xx: strict JSON, JSON whatever Accept says, database errors (a racing
duplicate, a broken constraint, an unreachable database, a cancelled statement) answered
in the JSON error shape. The same over a real server: tests/api/test_server_robustness.py.
"""

from __future__ import annotations

import json
import re
import threading

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import QuerySet
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from config import jsonparse
from config.api import exception_handler
from config.dberrors import unique_or
from memories import services
from memories.models import Association, Namespace
from tests.conftest import database_rows

pytestmark = pytest.mark.django_db
postgres_only = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="PostgreSQL behaviour"
)


@pytest.fixture
def writer(user, make_token, api):
    _, secret = make_token(user)
    return api(secret)


def _post(client, path: str, raw: bytes | str):
    return client.generic("POST", path, raw, content_type="application/json")


# --- Strict JSON bodies -----------------------------------------------------------------


def test_a_body_nested_100000_deep_is_a_400(writer, namespace, nothing_written):
    with nothing_written():
        response = _post(writer, "/api/v1/memories", "[" * 100_000)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "parse_error" and "nested deeper than 64" in error["message"]


def test_a_refused_string_names_its_path_in_fields(writer, namespace, nothing_written):
    items = [{"namespace": "work", "content": f"fact {n}"} for n in range(3)]
    raw = json.dumps({"memories": items}).replace("fact 2", "fact\\u00002")
    with nothing_written():
        response = _post(writer, "/api/v1/memories/bulk", raw)
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "memories.2.content": ["NUL characters are not allowed"]
    }


@pytest.mark.parametrize(
    "raw, reason, field",
    [
        (
            '{"namespace": "work", "content": "x", "strength": NaN}',
            "NaN is not allowed",
            "strength",
        ),
        ('{"namespace": "work", "content": "x", "strength": 1e999}', "out of range", "strength"),
        (
            '{"namespace": "work", "content": "x", "keywords": [-Infinity]}',
            "not allowed",
            "keywords.0",
        ),
        (b'{"namespace": "work", "content": "caf\xe9"}', "not valid UTF-8", None),
        ('{"namespace": "work", "content": "\\ud800"}', "lone surrogates", "content"),
        ('{"namespace": "work", "content": ', "not valid JSON", None),
    ],
)
def test_json_the_databases_cannot_hold_is_a_400(
    writer, namespace, raw, reason, field, nothing_written
):
    with nothing_written():
        response = _post(writer, "/api/v1/memories", raw)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert reason in error["message"]
    assert list(error.get("fields", {})) == ([field] if field else [])


def test_an_unterminated_string_after_deep_brackets_is_refused_in_linear_time():
    # The depth check's string pattern used to fail on a string with no closing quote and
    # be retried from every later quote: quadratic, 2 s for 24 KB. Linear means one match
    # takes such a string whole, to the end of the text.
    tail = '"' + 'a\\"' * 500_000
    match = jsonparse._STRING.match(tail)
    assert match is not None and match.end() == len(tail)
    with pytest.raises(jsonparse.JsonInputError, match="nested deeper"):
        jsonparse.loads("[" * 65 + tail)


# --- JSON whatever the Accept header says ------------------------------------------------


def _api_routes() -> list[str]:
    """Every /api/v1/ route of the URLconf, with sample values in its parameters."""
    routes: list[str] = []

    def walk(patterns, prefix: str) -> None:
        for entry in patterns:
            route = prefix + str(entry.pattern)
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, route)
            elif isinstance(entry, URLPattern) and route.startswith("api/v1/"):
                routes.append("/" + route)

    walk(get_resolver("config.urls").url_patterns, "")
    return routes


JSON_TYPES = {"application/json", "application/x-ndjson"}


def test_every_api_route_answers_json_to_a_client_asking_for_html(writer, make_memory):
    """JSON (or the export's JSON Lines) whatever Accept says, never a 5xx; and a request
    refused with a 4xx writes nothing."""
    memory = make_memory()
    html_pages = {"/api/v1/docs", "/api/v1/redoc", "/api/v1/schema"}
    routes = _api_routes()
    assert len(routes) > 30
    for route in routes:
        path = re.sub(r"<int:\w+>", str(memory.pk), re.sub(r"<slug:\w+>", "work", route))
        if path in html_pages:
            continue
        for method in ("get", "post", "patch", "delete"):
            body = {} if method == "get" else {"data": "{}", "content_type": "application/json"}
            before = database_rows()
            response = getattr(writer, method)(path, **body, HTTP_ACCEPT="text/html")
            where = f"{method.upper()} {path}: {response.status_code}"
            assert response.status_code < 500, where
            if 400 <= response.status_code < 500:
                assert database_rows() == before, where
            if response.status_code == 204:
                continue
            # JSON, or the export's JSON Lines: never a page.
            assert response["Content-Type"].split(";")[0] in JSON_TYPES, where
            if response.status_code >= 400:
                assert response["Content-Type"] == "application/json", where
                assert set(response.json()["error"]) >= {"status", "code", "message"}, where


def test_the_docs_pages_still_answer_html(client):
    for path in ("/api/v1/docs", "/api/v1/redoc"):
        response = client.get(path, HTTP_ACCEPT="text/html")
        assert response.status_code == 200
        assert response["Content-Type"].startswith("text/html")
    script = client.get("/api/v1/docs?script=")
    assert script.status_code == 200 and "SwaggerUIBundle" in script.content.decode()


# --- Racing duplicates: the sequential answer, never a 500 -------------------------------


def _blind_check(monkeypatch, model) -> None:
    """The services' "already exists?" check on `model` sees nothing, as a racing one does."""
    exists = QuerySet.exists
    monkeypatch.setattr(QuerySet, "exists", lambda qs: False if qs.model is model else exists(qs))


def test_a_namespace_slipping_past_the_check_gets_the_sequential_answer(
    user, client, monkeypatch, nothing_written
):
    client.force_login(user)
    first = client.post("/api/v1/namespaces", {"name": "Shared"}, content_type="application/json")
    assert first.status_code == 201
    with nothing_written():
        sequential = client.post(
            "/api/v1/namespaces", {"name": "Shared"}, content_type="application/json"
        )
    assert sequential.status_code == 400
    assert set(sequential.json()["error"]["fields"]) == {"name"}  # the slug came from it

    # A concurrent request's check ran before the first insert committed: it sees nothing.
    _blind_check(monkeypatch, Namespace)
    with nothing_written():
        raced = client.post(
            "/api/v1/namespaces", {"name": "Shared"}, content_type="application/json"
        )
    assert raced.status_code == 400
    assert raced.json() == sequential.json()
    assert Namespace.objects.filter(owner=user, slug="shared").count() == 1


def test_an_association_slipping_past_the_check_gets_the_sequential_answer(
    writer, make_memory, monkeypatch, nothing_written
):
    a, b = make_memory("first"), make_memory("second")
    body = {"source": a.pk, "target": b.pk}
    assert writer.post("/api/v1/associations", body, format="json").status_code == 201
    with nothing_written():
        sequential = writer.post("/api/v1/associations", body, format="json")
    assert sequential.status_code == 400
    _blind_check(monkeypatch, Association)
    with nothing_written():
        raced = writer.post("/api/v1/associations", body, format="json")
    assert raced.status_code == 400 and raced.json() == sequential.json()
    assert raced.json()["error"]["fields"] == {"target": ["These memories are already linked."]}


def test_unique_or_keeps_the_callers_transaction_usable(user, namespace):
    taken = "You already have a namespace with this slug."
    with transaction.atomic():
        with (
            pytest.raises(ValidationError, match="already have"),
            unique_or("slug", taken),
        ):
            Namespace.objects.create(owner=user, name="Again", slug=namespace.slug)
        # The savepoint was rolled back, not the transaction: it can go on.
        assert Namespace.objects.filter(owner=user).count() == 1


def _race(call, parties: int = 2) -> list:
    """Run `call` in `parties` threads at once; each thread's result or exception."""
    results: list = [None] * parties

    def run(index: int) -> None:
        try:
            results[index] = call()
        except Exception as error:
            results[index] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(parties)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def _barrier_before(monkeypatch, model, parties: int = 2) -> None:
    """Hold every caller at model.full_clean (after the duplicate check, before the insert)
    until all have passed the check: the race, every time."""
    barrier = threading.Barrier(parties, timeout=10)
    original = model.full_clean

    def held(self, *args, **kwargs):
        barrier.wait()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(model, "full_clean", held)


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_namespace_creations_get_201_and_the_sequential_400(user, monkeypatch):
    from rest_framework.test import APIClient

    _barrier_before(monkeypatch, Namespace)

    def create():
        client = APIClient()
        client.force_authenticate(user)
        return client.post("/api/v1/namespaces", {"name": "Race"}, format="json")

    results = sorted(_race(create), key=lambda r: r.status_code)
    assert [r.status_code for r in results] == [201, 400]
    assert results[1].json()["error"]["fields"] == {
        "name": ["You already have a namespace with this name (slug “race”)."]
    }
    assert Namespace.objects.filter(owner=user, slug="race").count() == 1


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_links_get_201_and_the_sequential_400(user, make_token, monkeypatch):
    from rest_framework.test import APIClient

    namespace = services.namespace_create(owner=user, name="Race")
    a = services.memory_create(namespace=namespace, content="first")
    b = services.memory_create(namespace=namespace, content="second")
    _, secret = make_token(user)
    _barrier_before(monkeypatch, Association)

    def link():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client.post("/api/v1/associations", {"source": a.pk, "target": b.pk}, format="json")

    results = sorted(_race(link), key=lambda r: r.status_code)
    assert [r.status_code for r in results] == [201, 400]
    assert results[1].json()["error"]["fields"] == {
        "target": ["These memories are already linked."]
    }
    assert Association.objects.filter(source=a, target=b).count() == 1


# --- The backstop: any IntegrityError reaching the API ------------------------------------


def _integrity_error(create) -> IntegrityError:
    try:
        with transaction.atomic():
            create()
    except IntegrityError as error:
        return error
    raise AssertionError("no IntegrityError")


def test_integrity_errors_map_to_409_for_unique_and_400_for_check_and_not_null(
    user, namespace, make_memory
):
    memory, other = make_memory("one"), make_memory("two")
    unique = _integrity_error(
        lambda: Namespace.objects.create(owner=user, name="Dup", slug=namespace.slug)
    )
    check = _integrity_error(
        lambda: Association.objects.create(
            namespace=namespace, source=memory, target=other, weight=7.0
        )
    )
    not_null = _integrity_error(lambda: Namespace.objects.create(owner=user, name=None, slug="n"))
    answers = {}
    for name, error in (("unique", unique), ("check", check), ("not_null", not_null)):
        response = exception_handler(error, {})
        answers[name] = (response.status_code, response.data["error"]["code"])
    assert answers == {
        "unique": (409, "conflict"),
        "check": (400, "invalid"),
        "not_null": (400, "invalid"),
    }


def test_an_unguarded_unique_violation_in_a_view_is_a_409(
    writer, user, namespace, monkeypatch, nothing_written
):
    error = _integrity_error(
        lambda: Namespace.objects.create(owner=user, name="Dup", slug=namespace.slug)
    )

    def racing(**kwargs):
        raise error

    monkeypatch.setattr(services, "namespace_create", racing)
    with nothing_written():
        response = writer.post("/api/v1/namespaces", {"name": "Other"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"


# --- An unreachable database --------------------------------------------------------------


def _database_down(execute, sql, params, many, context):
    raise OperationalError("connection to server at 127.0.0.1, port 1 failed")


def test_a_database_failure_during_authentication_is_a_json_503(user, make_token, api):
    _, secret = make_token(user)
    client = api(secret)
    with connection.execute_wrapper(_database_down):
        response = client.get("/api/v1/memories")
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "unavailable"


class _LoadUserMiddleware:
    """A middleware that reads the session user before any view, as some do."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        request.user.is_authenticated  # noqa: B018 - loads the session and the user
        return self.get_response(request)


def test_a_database_failure_in_middleware_is_a_json_503(user, settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}._LoadUserMiddleware"]
    client = Client(raise_request_exception=False)
    client.force_login(user)
    with connection.execute_wrapper(_database_down):
        response = client.get("/api/v1/memories")
    assert response.status_code == 503
    assert response.json()["error"] == {
        "status": 503,
        "code": "unavailable",
        "message": "The database is unavailable; try again shortly.",
    }


# --- The statement timeout of web requests ------------------------------------------------


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_query_over_the_statement_timeout_is_a_json_503(writer, namespace, settings, monkeypatch):
    from memories.models import MemoryQuerySet

    settings.DATABASE_STATEMENT_TIMEOUT_MS = 100
    Client()  # builds the middleware: this process now serves web requests
    connection.close()  # the next connection is a web connection

    def slow(self, text):
        return self.extra(where=["(SELECT count(*) FROM pg_sleep(2)) = 1"])

    monkeypatch.setattr(MemoryQuerySet, "containing", slow)
    response = writer.get("/api/v1/memories", {"q": "anything"})
    # The statement was cancelled at the limit (a pg_sleep(2) finishing would be a 200).
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "timeout"
    assert response.json()["error"]["limit"] == "DATABASE_STATEMENT_TIMEOUT_MS"
    connection.close()


# --- Query parameters ---------------------------------------------------------------------


def _integer_query_parameters() -> list[tuple[str, str]]:
    """(path, parameter) for every integer query parameter of a GET in the OpenAPI
    schema, ids in the path filled with 1: a new one is covered as it is declared."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    found = []
    for template, operations in schema["paths"].items():
        path = re.sub(r"\{[^}]+\}", "1", template)
        for parameter in operations.get("get", {}).get("parameters", []):
            if parameter["in"] == "query" and parameter["schema"].get("type") == "integer":
                found.append((path, parameter["name"]))
    return found


def test_every_integer_query_parameter_refuses_what_no_column_holds(writer, namespace):
    parameters = _integer_query_parameters()
    assert ("/api/v1/associations", "memory") in parameters
    for path, name in parameters:
        for value in (2**63, -(2**63) - 1, 10**40):
            response = writer.get(path, {name: str(value)})
            assert response.status_code < 500, (path, name, value)
            if response.status_code == 400:
                assert name in response.json()["error"].get("fields", {}), (path, name)


# --- Routes that take no body -----------------------------------------------------------


@pytest.fixture
def person(user):
    """Signed in to the dashboard: every route is open to it (tokens' too)."""
    client = Client()
    client.force_login(user)
    return client


def _routes_without_body() -> list[tuple[str, str]]:
    """(method, path) of every write in the OpenAPI schema that declares no request body,
    ids filled with 1: a new one is covered as it is declared."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return [
        (method.upper(), re.sub(r"\{[^}]+\}", "1", template))
        for template, operations in schema["paths"].items()
        for method, operation in operations.items()
        if method in ("post", "put", "patch", "delete") and "requestBody" not in operation
    ]


@pytest.mark.parametrize(
    "raw, named",
    [
        ('{"a": ', None),
        ("null", "non_field_errors"),
        ("[1]", "non_field_errors"),
        ('{"x": 1}', "x"),
    ],
)
def test_a_route_that_takes_no_body_refuses_one(person, namespace, nothing_written, raw, named):
    routes = _routes_without_body()
    assert ("POST", "/api/v1/memories/1/restore") in routes
    for method, path in routes:
        with nothing_written():
            response = person.generic(method, path, raw, content_type="application/json")
        assert response.status_code == 400, (method, path, response.content[:200])
        error = response.json()["error"]
        if named is None:
            assert error["code"] == "parse_error", (method, path)
        else:
            assert named in error["fields"], (method, path, error)


def test_a_route_that_takes_no_body_takes_none_or_an_empty_object(person, namespace):
    for method, path in _routes_without_body():
        for raw in ("", "{}"):
            response = person.generic(method, path, raw, content_type="application/json")
            assert response.status_code == 404, (method, path, raw, response.content[:200])
        # A form library's bare POST is no body either; a form with fields is not JSON.
        if method == "POST":
            assert person.post(path).status_code == 404, path
            assert person.post(path, {"x": "1"}).status_code == 415, path


# --- Cursors ------------------------------------------------------------------------------


def _cursor_lists() -> list[str]:
    """Every GET of the OpenAPI schema that takes a `cursor`, ids filled with 1."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return [
        re.sub(r"\{[^}]+\}", "1", template)
        for template, operations in schema["paths"].items()
        if any(p["name"] == "cursor" for p in operations.get("get", {}).get("parameters", []))
    ]


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    "cursor",
    ["!!!", "x" * 5000, _b64("p=2026"), _b64("o=-5"), _b64("z=1"), _b64("o=1&o=2"), "é"],
)
def test_a_cursor_no_list_gave_is_a_400_naming_it(writer, namespace, make_memory, cursor):
    make_memory("one")
    lists = _cursor_lists()
    assert "/api/v1/memories" in lists
    for path in lists:
        response = writer.get(path, {"cursor": cursor})
        if response.status_code == 404 and "/1" in path:
            continue  # the object of the path is missing: nothing to page through
        assert response.status_code == 400, (path, response.content[:200])
        assert "cursor" in response.json()["error"]["fields"], path


def test_the_cursors_a_list_gives_still_page_through_it(writer, namespace, make_memory):
    for n in range(3):
        make_memory(f"note {n}")
    first = writer.get("/api/v1/memories", {"limit": 2}).json()
    second = writer.get(first["next"]).json()
    back = writer.get(second["previous"]).json()
    assert len(first["results"]) == 2 and len(second["results"]) == 1
    assert [m["id"] for m in back["results"]] == [m["id"] for m in first["results"]]


@pytest.mark.parametrize(
    "path", ["/api/v1/nowhere", "/api/v1/memories/", "/api/v1//memories", "/api/v1/memories/-1"]
)
@pytest.mark.parametrize("debug", [False, True])
def test_an_api_address_with_no_route_is_a_json_404(writer, path, debug, settings):
    settings.DEBUG = debug
    response = writer.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "not_found"
