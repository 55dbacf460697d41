"""A real gunicorn (the README's production server) on a database of its own, for tests
that need real HTTP: chunked bodies, a database that is down, the throttle under load.

The database is a fresh one of the engine under test, migrated once per module
(tests/api/conftest.py's `prepared_database`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_make_run import _free_port

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = str(Path(sys.executable).with_name("gunicorn"))
SEED = """
from django.contrib.auth import get_user_model
from memories import services
user = get_user_model().objects.create_user("server-{tag}", password="pw-server-12345")
namespace = services.namespace_create(owner=user, name="server-{tag}")
token, secret = services.token_create(owner=user, name="t", namespaces=[namespace], access="write")
print(secret)
"""


def server_env(database_url: str, **settings: Any) -> dict[str, str]:
    """The real settings (not the test ones), on `database_url`, plus `settings`."""
    env = {**os.environ, "DATABASE_URL": database_url, "LOG_LEVEL": "WARNING"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.pop("REDIS_URL", None)
    env.update({name: str(value) for name, value in settings.items()})
    return env


def manage(env: dict[str, str], *args: str, timeout: float = 300) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip()


def new_token(database_url: str) -> tuple[str, str]:
    """A new user with a namespace and a write token: (namespace slug, secret)."""
    tag = uuid.uuid4().hex[:8]
    code = SEED.format(tag=tag)
    secret = manage(server_env(database_url), "shell", "--no-imports", "-c", code)
    return f"server-{tag}", secret.splitlines()[-1]


def api_json(server: Gunicorn, secret: str, method: str, path: str, body=None) -> Any:
    """The decoded JSON answer of an API route of a running server (under /api/v1)."""
    request = urllib.request.Request(
        f"{server.url}/api/v1{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def migrate(url: str) -> None:
    env = server_env(url)
    manage(env, "migrate", "--no-input")
    manage(env, "createcachetable")


class Gunicorn:
    """The production gunicorn (config.asgi, or config.wsgi) in its own process group."""

    def __init__(
        self,
        env: dict[str, str],
        log: Path,
        workers: int = 2,
        threads: int = 1,
        *,
        asgi: bool = True,
    ):
        """By default the README's production command (config.asgi under uvicorn workers:
        dashboard, API and MCP; `threads` does not apply); `asgi=False`: config.wsgi with
        sync workers or threads."""
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        app = (
            ["config.asgi:application", "-k", "uvicorn_worker.UvicornWorker"]
            if asgi
            else ["config.wsgi", "--threads", str(threads)]
        )
        with log.open("a") as out:
            self.process = subprocess.Popen(
                [
                    GUNICORN,
                    *app,
                    "--workers",
                    str(workers),
                    "--bind",
                    f"127.0.0.1:{self.port}",
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._wait()

    def _wait(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"gunicorn exited:\n{self.tail()}")
            try:
                urllib.request.urlopen(f"{self.url}/accounts/login/", timeout=2)
                return
            except urllib.error.HTTPError:  # an answer all the same
                return
            except OSError:
                time.sleep(0.3)
        pytest.fail(f"gunicorn never answered:\n{self.tail()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)

    def tail(self) -> str:
        return self.log.read_text()[-4000:]

    def __enter__(self) -> Gunicorn:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()
