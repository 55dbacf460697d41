"""ASGI entry point: the dashboard, the REST API and MCP in one deployment.

`gunicorn config.asgi:application -k uvicorn_worker.UvicornWorker` (README, Production) and
`make run` serve it. Requests under /mcp (and MCP's protected-resource metadata) go to the
MCP app (memories.mcp, streamable HTTP), everything else to Django. The MCP app is named
by string, as config/urls.py names the apps: config imports none of them.

Django runs as its WSGI app in a2wsgi's thread pool, one thread hop a request: under
Django's own ASGI handler every sync middleware and the view each hopped between the
event loop and a thread, and a recall at 100,000 memories took 47 ms at the median
instead of 26 (docs/mcp.md). a2wsgi streams the request body to the app, so the body
limits (config.api.ApiBodyLimitMiddleware) still stop a large upload early.
"""

from __future__ import annotations

import io
import json
import os

from a2wsgi import WSGIMiddleware
from django.core.wsgi import get_wsgi_application
from django.utils.module_loading import import_string

from config.request_id import request_id_from

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
wsgi_app = get_wsgi_application()


class _BodyReader(io.RawIOBase):
    """a2wsgi's body as a raw stream, for io.BufferedReader: a2wsgi's own readline(limit)
    answers b"" when no data has arrived yet, which Django's LimitedStream (a request read
    line by line: an import) takes for the end of the body."""

    def __init__(self, body) -> None:
        self._body = body

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._body.read(len(buffer))  # blocks until that much, or the body's end
        buffer[: len(data)] = data
        return len(data)


def _wsgi_input(environ, start_response):
    """a2wsgi's wsgi.input ends where the ASGI request body ends (its last message), as
    gunicorn's does: say so, so a chunked API body is read to its end, under its limit
    (config.api.ApiBodyLimitMiddleware), rather than refused with 411."""
    environ["wsgi.input"] = io.BufferedReader(_BodyReader(environ["wsgi.input"]), 64 * 1024)
    environ["wsgi.input_terminated"] = True
    return wsgi_app(environ, start_response)


django_app = WSGIMiddleware(_wsgi_input)
mcp_app = import_string("memories.mcp.asgi_app")()


async def _mcp_with_request_id(scope, receive, send) -> None:
    """MCP's answers carry an X-Request-ID too, as Django's do (config.request_id): the
    client's when acceptable, else a new one. Only the header: MCP's requests are not in
    the request metrics or the access log (a streamed answer has no one duration)."""
    incoming = next((v for k, v in scope.get("headers", ()) if k == b"x-request-id"), b"")
    request_id = request_id_from(incoming.decode("latin-1"))

    async def send_with_id(message) -> None:
        if message["type"] == "http.response.start":
            headers = [*message.get("headers", ()), (b"x-request-id", request_id.encode())]
            message = {**message, "headers": headers}
        await send(message)

    if scope.get("method") == "GET" and not scope.get("path", "").startswith("/.well-known/"):
        # The app is stateless with JSON answers: it has no stream for a GET to listen on,
        # and the SDK's would send pings for ever, holding a connection (and a worker's
        # slot) per caller. The transport's spec allows this answer; clients carry on.
        await _method_not_allowed(send_with_id)
        return
    await mcp_app(scope, receive, send_with_id)


async def _method_not_allowed(send) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32000,
                "message": "Method not allowed: this server answers POST with JSON "
                "(stateless; no event stream to open with GET).",
            },
        }
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"allow", b"POST"),
    ]
    await send({"type": "http.response.start", "status": 405, "headers": headers})
    await send({"type": "http.response.body", "body": body})


MCP_PREFIXES = ("/mcp", "/.well-known/oauth-protected-resource")


def _is_mcp(path: str) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in MCP_PREFIXES)


async def application(scope, receive, send) -> None:
    # Lifespan goes to the MCP app, whose start-up runs its session manager (Django's ASGI
    # handler serves HTTP only).
    if scope["type"] == "lifespan":
        await mcp_app(scope, receive, send)
        return
    if scope["type"] == "http" and _is_mcp(scope.get("path", "")):
        await _mcp_with_request_id(scope, receive, send)
        return
    await django_app(scope, receive, send)
