"""`make run` on a fresh database: server and worker up, demo login works, Ctrl-C stops both."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def fresh_database_url(tmp_path, db):
    """A brand-new database of the engine under test."""
    if connection.vendor == "sqlite":
        yield f"sqlite:///{tmp_path / 'smoke.sqlite3'}"
        return
    import psycopg

    settings = connection.settings_dict
    name = f"engram_smoke_{uuid.uuid4().hex[:8]}"
    conninfo = psycopg.conninfo.make_conninfo(
        host=settings["HOST"] or "",
        port=str(settings["PORT"] or ""),
        user=settings["USER"] or "",
        password=settings["PASSWORD"] or "",
        dbname="postgres",
    )
    with psycopg.connect(conninfo, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    user = urllib.parse.quote(settings["USER"] or "")
    password = urllib.parse.quote(settings["PASSWORD"] or "")
    auth = f"{user}:{password}@" if password else f"{user}@"
    yield f"postgres://{auth}{settings['HOST']}:{settings['PORT']}/{name}"
    with psycopg.connect(conninfo, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _wait_for(url: str, process: subprocess.Popen, log: Path, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"make run exited early:\n{log.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"{url} never answered:\n{log.read_text()[-3000:]}")


def _manage(env: dict[str, str], code: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_make_run_serves_the_demo_login_and_runs_the_worker(fresh_database_url, tmp_path):
    port = _free_port()
    env = {**os.environ, "DATABASE_URL": fresh_database_url, "DJANGO_SETTINGS_MODULE": ""}
    env.pop("DJANGO_SETTINGS_MODULE")
    log = tmp_path / "make-run.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            ["make", "run", f"PORT={port}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(f"{base}/accounts/login/", process, log)
        output = log.read_text()
        login = re.search(r"username '(\w+)', password '([^']+)'", output)
        assert login, output

        # Log in through the real login page, as a browser would.
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        page = opener.open(f"{base}/accounts/login/?next=/").read().decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        form = urllib.parse.urlencode(
            {
                "csrfmiddlewaretoken": token,
                "username": login.group(1),
                "password": login.group(2),
                "next": "/",
            }
        ).encode()
        request = urllib.request.Request(
            f"{base}/accounts/login/", data=form, headers={"Referer": f"{base}/accounts/login/"}
        )
        response = opener.open(request)
        assert response.status == 200
        assert response.url == f"{base}/"
        # The published demo password opens the dashboard, never the admin.
        admin = opener.open(f"{base}/admin/")
        assert admin.url.startswith(f"{base}/admin/login/")
        assert "Site administration" not in admin.read().decode()
        # The same server serves the static files and MCP, whose 401 says where to start.
        assert urllib.request.urlopen(f"{base}/static/css/engram.css").status == 200
        mcp = urllib.request.Request(
            f"{base}/mcp", data=b"{}", headers={"Content-Type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(mcp)
        assert refused.value.code == 401
        assert "resource_metadata=" in refused.value.headers["WWW-Authenticate"]

        # The worker started with the server picks up a task from the broker.
        task_id = _manage(
            env, "from django_q.tasks import async_task; print(async_task('math.floor', 2.5))"
        )
        deadline = time.monotonic() + 60
        result = ""
        while time.monotonic() < deadline and not result:
            result = _manage(
                env,
                "from django_q.models import Success; "
                f"print(Success.objects.filter(id='{task_id}')"
                ".values_list('result', flat=True).first() or '')",
            )
            time.sleep(1)
        assert result == "2", log.read_text()[-3000:]
    finally:
        # Ctrl-C reaches the whole foreground process group.
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail("make run did not stop on Ctrl-C")
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{base}/accounts/login/", timeout=2)
    assert "has stopped" in log.read_text()  # the worker shut down cleanly too
