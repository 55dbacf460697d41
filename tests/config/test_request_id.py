"""Request ids: on every response, on every log record written during the request, in the
access log line; and the JSON log format (LOG_FORMAT=json)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from django.test import Client, override_settings
from django.urls import path

from config.logs import JsonFormatter, RequestIdFilter, request_id_var
from config.request_id import request_id_from
from config.urls import urlpatterns as project_urlpatterns

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
GENERATED = re.compile(r"[0-9a-f]{32}")


def boom(request):
    logging.getLogger("engram.test").warning("about to fail")
    raise RuntimeError("a view that fails")


# This module is the URL configuration of the tests marked urls(...): the project's, and a
# page and an API route that fail with a 500.
urlpatterns = [path("boom/", boom), path("api/v1/boom", boom), *project_urlpatterns]
handler400 = "config.api.handler400"
handler403 = "config.api.handler403"
handler404 = "config.api.handler404"
handler500 = "config.api.handler500"


@contextmanager
def json_lines(logger: str = "") -> Iterator[list[dict]]:
    """The records written to `logger` (the root: every logger) inside the block, as
    LOG_FORMAT=json writes them: the root handler's filter and the JSON formatter. The
    list is filled when the block ends."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter())
    target = logging.getLogger(logger or None)
    target.addHandler(handler)
    lines: list[dict] = []
    try:
        yield lines
    finally:
        target.removeHandler(handler)
        lines.extend(json.loads(line) for line in stream.getvalue().splitlines())


def _access(lines: list[dict]) -> list[dict]:
    return [line for line in lines if line["logger"] == "engram.request"]


# --- The header ----------------------------------------------------------------------------


@pytest.mark.parametrize("incoming", ["abc-123", "trace.4bf92f3577b34da6_01", "x" * 64])
def test_a_plain_incoming_id_is_echoed(client, incoming):
    assert client.get("/api/v1/recall", HTTP_X_REQUEST_ID=incoming)["X-Request-ID"] == incoming
    assert client.get("/accounts/login/", HTTP_X_REQUEST_ID=incoming)["X-Request-ID"] == incoming


@pytest.mark.parametrize(
    "incoming",
    ["x" * 65, "y" * 200, "two words", "line\nbreak", "trailing\n", "ümlaut", "a/b", ""],
)
def test_any_other_incoming_id_is_replaced(client, incoming):
    answered = client.get("/api/v1/recall", HTTP_X_REQUEST_ID=incoming)["X-Request-ID"]
    assert GENERATED.fullmatch(answered)


def test_without_one_each_request_gets_its_own(client):
    first = client.get("/accounts/login/")["X-Request-ID"]
    second = client.get("/accounts/login/")["X-Request-ID"]
    assert GENERATED.fullmatch(first) and GENERATED.fullmatch(second) and first != second


def test_request_id_from():
    assert request_id_from("ok_1.2-3") == "ok_1.2-3"
    assert request_id_from(None) != request_id_from(None)


@pytest.mark.parametrize(
    ("method", "url", "status"),
    [
        ("get", "/api/v1/no-such-route", 404),  # no route: the JSON 404
        ("get", "/no/such/page/", 404),  # no route: the HTML 404
        ("get", "/api/v1/memories/999999", 401),  # DRF's answer, through its handler
        ("post", "/api/v1/recall", 400),  # not JSON
        ("get", "/", 302),  # the sign-in redirect
        ("get", "/memories/", 302),
    ],
)
def test_errors_and_redirects_have_one_too(client, user, method, url, status):
    body = {"data": "{not json", "content_type": "application/json"} if method == "post" else {}
    if status == 400:
        client.force_login(user)  # past authentication, to the parser
    response = getattr(client, method)(url, HTTP_X_REQUEST_ID="err-1", **body)
    assert response.status_code == status
    assert response["X-Request-ID"] == "err-1"


def test_a_request_refused_by_a_middleware_has_one(client):
    # An unknown Host: Django's 400, raised by a middleware below this one.
    response = client.get("/", HTTP_HOST="evil.example", HTTP_X_REQUEST_ID="host-1")
    assert response.status_code == 400
    assert response["X-Request-ID"] == "host-1"


def test_a_body_refused_before_any_view_has_one(client):
    response = client.post(
        "/api/v1/memories",
        data="{}",
        content_type="application/json",
        CONTENT_LENGTH="999999999",
        HTTP_X_REQUEST_ID="big-1",
    )
    assert response.status_code == 413
    assert response["X-Request-ID"] == "big-1"


@pytest.mark.urls("tests.config.test_request_id")
@pytest.mark.parametrize("url", ["/boom/", "/api/v1/boom"])
def test_a_server_error_has_one(url):
    response = Client(raise_request_exception=False).get(url, HTTP_X_REQUEST_ID="boom-7")
    assert response.status_code == 500
    assert response["X-Request-ID"] == "boom-7"


@pytest.mark.urls("tests.config.test_request_id")
def test_every_record_written_during_a_request_names_it():
    with json_lines() as lines:
        Client(raise_request_exception=False).get("/boom/", HTTP_X_REQUEST_ID="boom-8")
        logging.getLogger("engram.test").warning("after the request")
    by_message = {line["message"]: line for line in lines}
    # The view's own record, Django's record of the failure, and the access line.
    assert by_message["about to fail"]["request_id"] == "boom-8"
    failure = by_message["Internal Server Error: /boom/"]
    assert failure["request_id"] == "boom-8"
    assert "RuntimeError: a view that fails" in failure["exc_info"]
    [access] = _access(lines)
    assert access["request_id"] == "boom-8" and access["status"] == 500
    # Outside a request the id is "-": the request's did not stay behind in this thread.
    assert by_message["after the request"]["request_id"] == "-"
    assert request_id_var.get() == "-"


@pytest.mark.parametrize(
    ("method", "url", "status"),
    [
        ("get", "/nope-probe", 404),  # the page's 404, no exception
        ("get", "/api/v1/no-such-route", 404),
        ("get", "/api/v1/memories/999999", 401),
        ("post", "/api/v1/recall", 400),
    ],
)
def test_djangos_record_of_a_4xx_names_the_request_once(client, user, method, url, status):
    """Django's handler writes it after the middleware chain returned, when the id is
    no longer set: the middleware writes it in the request instead."""
    body = {"data": "{not json", "content_type": "application/json"} if method == "post" else {}
    if status == 400:
        client.force_login(user)
    with json_lines() as lines:
        response = getattr(client, method)(url, HTTP_X_REQUEST_ID="rid-4xx", **body)
    assert response.status_code == status
    [record] = [line for line in lines if line["logger"] == "django.request"]
    assert record["message"] == f"{response.reason_phrase}: {url}"
    assert record["request_id"] == "rid-4xx" and record["level"] == "WARNING"
    assert [line["request_id"] for line in lines] == ["rid-4xx"] * len(lines)


# --- The access log ------------------------------------------------------------------------


def test_one_access_line_per_request_with_its_route_and_user(user, make_token, api):
    _, secret = make_token(user)
    with json_lines("engram.request") as lines:
        response = api(secret).get("/api/v1/namespaces?secret=hunter2", HTTP_X_REQUEST_ID="acc-1")
        Client().get("/nowhere/at/all", HTTP_X_REQUEST_ID="acc-2")
    assert response.status_code == 200
    first, second = lines
    assert first["request_id"] == "acc-1"
    assert (first["method"], first["path"], first["route"], first["status"]) == (
        "GET",
        "/api/v1/namespaces",
        "api-namespaces",
        200,
    )
    assert first["user_id"] == user.pk
    assert isinstance(first["duration_ms"], float) and first["duration_ms"] >= 0
    assert first["level"] == "INFO" and first["logger"] == "engram.request"
    # Never the token, never the query string.
    assert secret not in json.dumps(lines) and "hunter2" not in json.dumps(lines)
    assert (second["request_id"], second["route"], second["status"], second["user_id"]) == (
        "acc-2",
        "unmatched",
        404,
        None,
    )


def test_a_session_user_is_named(client, user):
    client.force_login(user)
    with json_lines("engram.request") as lines:
        assert client.get("/memories/").status_code == 200
    assert [(line["route"], line["user_id"]) for line in lines] == [("memory-list", user.pk)]


def test_the_access_line_looks_up_no_user(client, user, django_assert_num_queries):
    """A request that never asked who its session's user is (a scraper with the metrics
    token and a stray session cookie) is not made to ask for the log's sake."""
    client.force_login(user)
    with (
        override_settings(METRICS_TOKEN="metrics-scraper-token-0123456789"),
        json_lines("engram.request") as lines,
        django_assert_num_queries(1),  # the task queue's size; no session, no user
    ):
        client.get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-scraper-token-0123456789")
    assert [(line["route"], line["status"], line["user_id"]) for line in lines] == [
        ("metrics", 200, None)
    ]


def test_a_path_cannot_forge_a_log_line(client):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.getLogger("engram.request").addHandler(handler)
    try:
        client.get("/x%0AINFO%20forged/")
    finally:
        logging.getLogger("engram.request").removeHandler(handler)
    assert stream.getvalue().count("\n") == 1
    assert "/x%0AINFO%20forged/" in stream.getvalue()


# --- The JSON format -----------------------------------------------------------------------


def test_the_json_formatter_writes_one_object_a_line():
    record = logging.LogRecord("engram.x", logging.ERROR, __file__, 1, "n=%d", (3,), None)
    record.request_id = "r-1"
    record.answer = 42
    record.request = object()  # what JSON cannot hold is written as text
    try:
        raise ValueError("bad")
    except ValueError:
        record.exc_info = sys.exc_info()
    line = JsonFormatter().format(record)
    assert "\n" not in line  # the traceback too is inside the one line
    entry = json.loads(line)
    assert entry["message"] == "n=3" and entry["level"] == "ERROR"
    assert entry["logger"] == "engram.x" and entry["request_id"] == "r-1"
    assert entry["answer"] == 42 and entry["request"].startswith("<object")
    assert entry["exc_info"].startswith("Traceback") and "ValueError: bad" in entry["exc_info"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["timestamp"])


JSON_LOGS = """
import logging, django
django.setup()
from django.test import Client
Client().get("/nope-probe", HTTP_X_REQUEST_ID="json-404")
logging.getLogger("django.server").info("a runserver line")
logging.getLogger("engram.test").warning("hello %s", "world", extra={"answer": 42})
"""


def test_log_format_json_writes_json_from_every_logger_once(tmp_path):
    """With DEBUG on (make run's default) too, where Django's own console handler would
    write its records a second time, in plain text."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "LOG_FORMAT": "json",
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    result = subprocess.run(
        [sys.executable, "-c", JSON_LOGS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stderr.strip().splitlines()]  # JSON only
    entry = lines[-1]
    assert entry["message"] == "hello world" and entry["answer"] == 42
    assert entry["logger"] == "engram.test" and entry["request_id"] == "-"
    [not_found] = [line for line in lines if line["logger"] == "django.request"]
    assert not_found["message"] == "Not Found: /nope-probe"
    assert not_found["request_id"] == "json-404"
    assert [line["message"] for line in lines if line["logger"] == "django.server"] == [
        "a runserver line"
    ]


def test_log_format_json_covers_uvicorns_own_lines(tmp_path):
    """make run serves with uvicorn, which writes its start-up, shutdown and access lines
    with handlers and a text format of its own; under json they are JSON too."""
    from tests.e2e.test_make_run import _free_port

    port = _free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "LOG_FORMAT": "json",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "config.asgi:application", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        for _ in range(200):
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=2)
                break
            except httpx.TransportError:
                if server.poll() is not None:
                    break
                time.sleep(0.1)
        else:
            pytest.fail("uvicorn did not answer")
    finally:
        server.terminate()
        output, _ = server.communicate(timeout=30)
    assert answer.status_code == 405, output
    lines = [json.loads(line) for line in output.strip().splitlines()]  # JSON only
    loggers = {line["logger"] for line in lines}
    assert {"uvicorn.error", "uvicorn.access"} <= loggers, output
    [access] = [line for line in lines if line["logger"] == "uvicorn.access"]
    assert "GET /mcp" in access["message"] and "405" in access["message"]


@pytest.mark.slow
@pytest.mark.parametrize("asgi", [True, False], ids=["asgi", "wsgi"])
def test_log_format_json_covers_gunicorns_master_lines(tmp_path, asgi):
    """The production server is gunicorn, whose master writes its own lines (Listening at,
    Booting worker, Handling signal) before any app loads, in its own text format: under
    json they are JSON too (gunicorn.conf.py), and its access log stays off (engram.request
    is the access log). Every line of the output, from start to shutdown."""
    from tests.support.servers import Gunicorn, server_env

    env = server_env(f"sqlite:///{tmp_path / 'db.sqlite3'}", LOG_FORMAT="json", LOG_LEVEL="INFO")
    log = tmp_path / "gunicorn.log"
    with Gunicorn(env, log, workers=1, asgi=asgi):
        pass
    output = log.read_text()
    lines = [json.loads(line) for line in output.strip().splitlines()]  # JSON only
    master = [line["message"] for line in lines if line["logger"] == "gunicorn.error"]
    assert any(m.startswith("Listening at") for m in master), output
    assert any(m.startswith("Booting worker") for m in master), output
    assert any(m.startswith("Handling signal") for m in master), output
    loggers = {line["logger"] for line in lines}
    assert "engram.request" in loggers and "gunicorn.access" not in loggers, output
    # uvicorn's copy of a message with terminal colour codes is not a field of the line.
    assert not any("color_message" in line for line in lines)


# --- MCP, beside Django (config/asgi.py) ---------------------------------------------------


def test_mcp_answers_carry_one_too():
    from config.asgi import application

    async def go() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            return [
                await http.post("/mcp", json={}, headers={"X-Request-ID": "mcp-1"}),
                await http.post("/mcp", json={}, headers={"X-Request-ID": "no good"}),
                await http.get("/accounts/login/", headers={"X-Request-ID": "page-1"}),
            ]

    echoed, replaced, page = asyncio.run(go())
    assert echoed.status_code == 401 and echoed.headers["x-request-id"] == "mcp-1"
    assert GENERATED.fullmatch(replaced.headers["x-request-id"])
    assert page.headers["x-request-id"] == "page-1"  # Django's, through a2wsgi
