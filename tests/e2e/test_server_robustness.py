"""Over real HTTP against gunicorn: a chunked body is read (or refused with 411 by a server
that cannot end it), never taken for an empty one; a database that is down is a JSON 503."""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse

import pytest
from django.db import connection

from tests.support.servers import Gunicorn, new_token, server_env

pytestmark = pytest.mark.slow


def _send(base_url: str, method: str, path: str, body=None, headers=None, chunked=False):
    """(status, headers, parsed body); a chunked body is sent as the given pieces."""
    address = urllib.parse.urlparse(base_url)
    conn = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    headers = dict(headers or {})
    if chunked:
        headers["Transfer-Encoding"] = "chunked"
    conn.request(method, path, body=body, headers=headers, encode_chunked=chunked)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    kind = response.getheader("Content-Type", "")
    parsed = json.loads(raw) if kind.startswith("application/json") and raw else raw
    return response.status, response, parsed


def _pieces(data: bytes, size: int = 7):
    return iter([data[i : i + size] for i in range(0, len(data), size)])


def test_gunicorn_reads_a_chunked_body_and_refuses_one_over_the_limit(prepared_database, tmp_path):
    slug, secret = new_token(prepared_database)
    auth = {"Authorization": f"Bearer {secret}"}
    env = server_env(prepared_database, API_MAX_BODY_BYTES=4096)
    with Gunicorn(env, tmp_path / "gunicorn.log") as server:
        body = json.dumps({"namespace": slug, "content": "Sent in chunks"}).encode()
        status, _, created = _send(
            server.url,
            "POST",
            "/api/v1/memories",
            _pieces(body),
            {**auth, "Content-Type": "application/json"},
            chunked=True,
        )
        assert status == 201, (created, server.tail())
        assert created["content"] == "Sent in chunks"

        # An import (its own, larger limit) streams the spooled body line by line.
        export_path = f"/api/v1/namespaces/{slug}/export"
        status, _, export = _send(server.url, "GET", export_path, None, auth)
        assert status == 200
        status, _, imported = _send(
            server.url,
            "POST",
            f"/api/v1/namespaces/{slug}/import",
            _pieces(export, 100),
            {**auth, "Content-Type": "application/x-ndjson"},
            chunked=True,
        )
        assert status == 201, imported
        # Read to the end: its one memory line is the memory the namespace holds.
        assert (imported["counts"]["memory"], imported["counts"]["deduplicated"]) == (0, 1)

        listing = f"/api/v1/memories?namespace={slug}&limit=100"
        _, _, stored = _send(server.url, "GET", listing, None, auth)
        big = json.dumps({"namespace": slug, "content": "x" * 5000}).encode()
        status, _, refused = _send(
            server.url,
            "POST",
            "/api/v1/memories",
            _pieces(big, 1000),
            {**auth, "Content-Type": "application/json"},
            chunked=True,
        )
        assert status == 413
        assert refused["error"]["limit"] == "API_MAX_BODY_BYTES"
        _, _, after = _send(server.url, "GET", listing, None, auth)

        # Nothing written; decay_score is computed at read time (it moves with the clock,
        # and the import above just counted a use of the memory).
        def written(results):
            return [{k: v for k, v in r.items() if k != "decay_score"} for r in results]

        assert written(after["results"]) == written(stored["results"])


@pytest.mark.django_db(transaction=True)
def test_a_server_that_cannot_end_a_chunked_body_answers_411(
    live_server, user, make_token, nothing_written
):
    # Django's own server (runserver, the live test server) sets no wsgi.input_terminated.
    # The whole request goes out in one write: the server answers 411 from the headers and
    # may close before a client sending chunk by chunk is done (a broken pipe, not an answer).
    _, secret = make_token(user)
    payload = b'{"namespace": "work", "content": "lost?"}'
    address = urllib.parse.urlparse(live_server.url)
    request = (
        b"POST /api/v1/memories HTTP/1.1\r\n"
        + f"Host: {address.hostname}:{address.port}\r\n".encode()
        + f"Authorization: Bearer {secret}\r\n".encode()
        + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        + b"Connection: close\r\n\r\n"
        + f"{len(payload):x}\r\n".encode()
        + payload
        + b"\r\n0\r\n\r\n"
    )
    with (
        nothing_written(),
        socket.create_connection((address.hostname, address.port), timeout=60) as sock,
    ):
        sock.sendall(request)
        response = http.client.HTTPResponse(sock)
        response.begin()
        status, body = response.status, json.loads(response.read())
    assert status == 411
    assert body["error"]["code"] == "length_required"


def test_gunicorn_with_its_database_down_answers_json_503(tmp_path, db):
    if connection.vendor == "sqlite":
        unreachable = f"sqlite:///{tmp_path}"  # a directory: SQLite cannot open it
    else:
        unreachable = "postgres://postgres@127.0.0.1:1/engram"  # nothing listens on port 1
    with Gunicorn(server_env(unreachable), tmp_path / "gunicorn.log") as server:
        calls = [
            ("GET", "/api/v1/memories", {"Authorization": "Bearer eng_abc_def"}),
            ("POST", "/api/v1/namespaces", {"Authorization": "Bearer eng_abc_def"}),
            ("GET", "/api/v1/memories", {"Cookie": "sessionid=abcdefghijklmnopqrstuvwxyz012345"}),
        ]
        for method, path, headers in calls:
            headers = {**headers, "Content-Type": "application/json", "Accept": "text/html"}
            body = b"{}" if method == "POST" else None
            status, response, answer = _send(server.url, method, path, body, headers)
            assert status == 503, (method, path, answer, server.tail())
            assert response.getheader("Content-Type") == "application/json"
            assert answer["error"]["code"] == "unavailable"
