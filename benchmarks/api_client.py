"""A small client of Engram's REST API for the benchmarks that go through real HTTP
(`eval_recall --http`): JSON in and out, a bearer token, every failure a CommandError
that quotes the server's answer."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from django.core.management.base import CommandError


class ApiClient:
    def __init__(self, url: str, token: str, *, timeout: float = 120.0) -> None:
        self.base = url.rstrip("/") + "/api/v1"
        self.token = token
        self.timeout = timeout

    def post(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            self.base + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")[:2000]
            raise CommandError(f"POST {path}: {error.code} {detail}") from None
        except (urllib.error.URLError, OSError) as error:
            raise CommandError(f"POST {path}: {self.base} does not answer ({error})") from None
