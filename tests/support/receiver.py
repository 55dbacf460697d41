"""A real local HTTP receiver for webhook tests: records every request, answers a script."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def payload(self) -> dict:
        return json.loads(self.body)

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]


@dataclass
class Receiver:
    """`codes` are answered in turn (then 200); the next request after `hold` is set
    waits that many seconds before its answer (to kill a worker mid-delivery)."""

    url: str = ""
    requests: list[Received] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)
    hold: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def unique(self) -> dict[str, Received]:
        """The requests by webhook-id, as a receiver that dedupes keeps them (first wins)."""
        seen: dict[str, Received] = {}
        for request in list(self.requests):
            seen.setdefault(request.webhook_id, request)
        return seen


def serve(receiver: Receiver) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            with receiver.lock:
                receiver.requests.append(
                    Received({k.lower(): v for k, v in self.headers.items()}, body)
                )
                code = receiver.codes.pop(0) if receiver.codes else 200
                hold, receiver.hold = receiver.hold, 0.0
            if hold:
                time.sleep(hold)
            try:
                self.send_response(code)
                self.send_header("content-length", "0")
                self.end_headers()
            except OSError:  # the sender was killed while we held its request
                pass

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    server = serve(found)
    yield found
    server.shutdown()
    server.server_close()
