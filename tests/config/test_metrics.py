"""/metrics: what it counts (requests, recall, the worker, webhooks), who may read it, and
its figures added up over processes in multiprocess mode."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings
from django.urls import URLResolver, get_resolver
from django.utils import timezone
from django_q.tasks import async_task
from prometheus_client.parser import text_string_to_metric_families

from memories import services
from memories.models import WebhookDelivery
from memories.services import webhooks as hooks
from memories.webhook_delivery import webhook_deliver_run

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "metrics-scraper-token-0123456789"

Samples = dict[tuple[str, frozenset], float]


def samples(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(found: Samples, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def scrape():
    """scrape() -> every sample /metrics shows now, read as Prometheus reads it."""

    def read() -> Samples:
        with override_settings(METRICS_TOKEN=TOKEN):
            response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 200, response.content
        assert response["Content-Type"].startswith("text/plain;")
        return samples(response.content.decode())

    return read


# --- Requests and recall -------------------------------------------------------------------


def test_each_request_is_counted_once_under_its_route_name(
    user, namespace, make_memory, make_token, api, scrape
):
    make_memory(content="The project uses PostgreSQL in production.")
    _, secret = make_token(user, namespaces=[namespace])
    client = api(secret)
    before = scrape()
    for _ in range(3):
        response = client.post(
            "/api/v1/recall", {"query": "postgresql", "namespaces": ["work"]}, format="json"
        )
        assert response.status_code == 200, response.json()
    assert client.post("/api/v1/recall", {"query": ""}, format="json").status_code == 400
    after = scrape()

    ok = {"route": "api-recall", "method": "POST", "status": "2xx"}
    name = "engram_http_request_duration_seconds"
    assert value(after, f"{name}_count", **ok) - value(before, f"{name}_count", **ok) == 3
    bad = {**ok, "status": "4xx"}
    assert value(after, f"{name}_count", **bad) - value(before, f"{name}_count", **bad) == 1
    # Buckets at the recall target, cumulative up to +Inf.
    at_40ms = value(after, f"{name}_bucket", **ok, le="0.04")
    assert 0 <= at_40ms <= value(after, f"{name}_bucket", **ok, le="+Inf")
    assert value(after, f"{name}_sum", **ok) > value(before, f"{name}_sum", **ok)


def test_recall_is_measured_stage_by_stage(user, namespace, make_memory, make_token, api, scrape):
    make_memory(content="The project uses PostgreSQL in production.")
    _, secret = make_token(user, namespaces=[namespace])
    before = scrape()
    timings = []
    for _ in range(2):
        response = api(secret).post(
            "/api/v1/recall", {"query": "postgresql", "namespaces": ["work"]}, format="json"
        )
        assert response.status_code == 200
        timings.append(response.json()["stage_timings"])
    after = scrape()

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    # Each stage that ran is observed with the time the response's stage_timings gave it;
    # Se, off in the test settings, was skipped before it started and is not.
    stage = "engram_recall_stage_duration_seconds"
    for code in ("Sf", "S6", "S8"):
        assert grew(f"{stage}_count", stage=code) == 2, code
        reported = sum(timing[code]["ms"] for timing in timings) / 1000
        assert grew(f"{stage}_sum", stage=code) == pytest.approx(reported, abs=1e-9), code
    assert all(timing["Se"]["skipped"] and not timing["Se"]["ms"] for timing in timings)
    assert grew(f"{stage}_count", stage="Se") == 0
    assert grew("engram_recall_duration_seconds_count") == 2
    assert grew("engram_recall_candidates_count") == 2
    assert grew("engram_recall_candidates_sum") >= 2  # the memory, found each time
    assert value(after, "engram_recall_candidates_bucket", le="0.0") == value(
        before, "engram_recall_candidates_bucket", le="0.0"
    )


def test_paths_never_become_labels(client, scrape):
    before = scrape()
    client.get("/api/v1/no-such-route-4711")
    client.get("/no/such/page/4711")
    client.generic("BREW", "/api/v1/recall")
    after = scrape()
    unmatched = {"route": "unmatched", "method": "GET", "status": "4xx"}
    count = "engram_http_request_duration_seconds_count"
    assert value(after, count, **unmatched) - value(before, count, **unmatched) == 2
    other = {"route": "api-recall", "method": "other", "status": "4xx"}
    assert value(after, count, **other) - value(before, count, **other) == 1
    labels = {value for _, pairs in after for _, value in pairs}
    assert not any("4711" in label or "BREW" in label for label in labels)


def test_throttled_requests_are_counted(user, namespace, make_token, api, scrape):
    _, secret = make_token(user, namespaces=[namespace])
    before = scrape()
    with override_settings(API_RATE_LIMIT="2/min"):
        codes = [api(secret).get("/api/v1/namespaces").status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    after = scrape()
    throttled = "engram_http_throttled_total"
    grew = value(after, throttled, route="api-namespaces") - value(
        before, throttled, route="api-namespaces"
    )
    assert grew == 1


# --- The worker ----------------------------------------------------------------------------


def fails() -> None:
    raise RuntimeError("a task that fails, for the failure counter")


def test_task_runs_are_counted_by_task_and_outcome(scrape):
    """Through django-q2's own worker (sync in the test settings), so its real signals."""
    good, bad = "memories.tasks.webhooks_retry", "tests.config.test_metrics.fails"
    before = scrape()
    async_task(good)
    async_task(good)
    with pytest.raises(RuntimeError, match="a task that fails"):
        async_task(bad)
    after = scrape()

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("engram_task_runs_total", func=good, outcome="success") == 2
    assert grew("engram_task_runs_total", func=good, outcome="failure") == 0
    assert grew("engram_task_runs_total", func=bad, outcome="failure") == 1
    assert grew("engram_task_duration_seconds_count", func=good) == 2
    assert grew("engram_task_duration_seconds_count", func=bad) == 1
    assert grew("engram_task_queue_wait_seconds_count", func=good) == 2
    last = value(after, "engram_task_last_success_timestamp_seconds", func=good)
    assert abs(last - timezone.now().timestamp()) < 60
    assert value(after, "engram_task_last_success_timestamp_seconds", func=bad) == 0
    assert value(after, "engram_task_queue_size") == 0  # sync: nothing ever waits


# --- Webhooks ------------------------------------------------------------------------------


def test_webhook_attempts_are_counted_by_outcome(namespace, receiver, committed, scrape):
    """Through the real delivery, to a local receiver: a failure retried, the retry given
    up, then the next event delivered."""
    subscription = hooks.webhook_subscription_create(namespace=namespace, url=receiver.url)
    receiver.codes = [500, 503]
    before = scrape()
    with override_settings(WEBHOOK_MAX_ATTEMPTS=2):
        with committed():
            services.memory_create(namespace=namespace, content="First, refused twice.")
        with committed():  # queued behind the first, which waits for its retry
            services.memory_create(namespace=namespace, content="Second, delivered.")
        WebhookDelivery.objects.update(next_attempt_at=timezone.now())
        webhook_deliver_run(subscription_id=subscription.pk)
    after = scrape()
    assert [r.payload["data"]["memory"]["content"] for r in receiver.requests] == [
        "First, refused twice.",
        "First, refused twice.",
        "Second, delivered.",
    ]
    name = "engram_webhook_delivery_attempts_total"
    grew = {
        outcome: value(after, name, outcome=outcome) - value(before, name, outcome=outcome)
        for outcome in ("delivered", "retry", "failed")
    }
    assert grew == {"delivered": 1, "retry": 1, "failed": 1}


# --- Who may read it -----------------------------------------------------------------------


def test_without_credentials_it_asks_for_a_bearer(client):
    response = client.get("/metrics")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert b"engram_" not in response.content


@override_settings(METRICS_TOKEN=TOKEN)
@pytest.mark.parametrize(
    "header", [f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer ", "bearer"]
)
def test_a_wrong_token_is_forbidden(client, header):
    response = client.get("/metrics", HTTP_AUTHORIZATION=header)
    assert response.status_code == 403
    assert b"engram_" not in response.content


@pytest.mark.parametrize("configured", [TOKEN, ""])
def test_an_api_token_does_not_open_it(user, make_token, client, configured):
    user.is_staff = True  # even a staff member's token
    user.save(update_fields=["is_staff"])
    _, secret = make_token(user)
    with override_settings(METRICS_TOKEN=configured):
        response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 403


def test_with_no_token_configured_no_bearer_opens_it(client):
    with override_settings(METRICS_TOKEN=""):
        assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 403


def test_the_metrics_token_opens_it(client):
    with override_settings(METRICS_TOKEN=TOKEN):
        response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        head = client.head("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert b"# TYPE engram_http_request_duration_seconds histogram" in response.content
    assert response["Cache-Control"] == "no-store"
    assert head.status_code == 200


def test_it_speaks_openmetrics_to_a_scraper_asking_for_it(client):
    with override_settings(METRICS_TOKEN=TOKEN):
        response = client.get(
            "/metrics",
            HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
            HTTP_ACCEPT="application/openmetrics-text; version=1.0.0,text/plain;q=0.5",
        )
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.endswith(b"# EOF\n")


def test_a_staff_session_opens_it_and_a_user_session_does_not(client, user):
    client.force_login(user)
    assert client.get("/metrics").status_code == 403
    staff = get_user_model().objects.create_user("root", password="pw-root-12345", is_staff=True)
    client.force_login(staff)
    response = client.get("/metrics")
    assert response.status_code == 200
    assert b"engram_recall_duration_seconds" in response.content


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_it_only_reads(method):
    # CSRF-exempt: a scraper has no cookie, and a write is refused for being one (405).
    client = Client(enforce_csrf_checks=True)
    with override_settings(METRICS_TOKEN=TOKEN):
        response = getattr(client, method)("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 405


# --- Every route outside the API, classified -----------------------------------------------

PUBLIC = {"login", "api-schema", "api-docs", "api-redoc"}  # no credentials needed
BEARER = {"metrics"}  # an operator's scraper: 401 with WWW-Authenticate, never a login page
ICON = {"favicon"}  # what browsers ask for on any page, the login page too: a redirect


def _routes(patterns=None, prefix: str = "") -> list[tuple[str, str]]:
    found = []
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            if not route.startswith(("api/v1/", "admin/")):  # their own tests
                found += _routes(pattern.url_patterns, route)
        else:
            found.append((pattern.name, route))
    return found


def test_every_route_outside_the_api_and_the_admin_refuses_an_anonymous_visitor(client):
    """Generated from the URL configuration: a new route must be a page behind the
    sign-in, or be named above."""
    routes = _routes()
    assert {name for name, _ in routes} >= PUBLIC | BEARER | {"home", "memory-list"}
    for name, route in routes:
        path = "/" + re.sub(r"<int:\w+>", "1", re.sub(r"<slug:\w+>", "work", route))
        response = client.get(path)
        where = f"{name} {path}: {response.status_code}"
        if name in PUBLIC:
            assert response.status_code == 200, where
        elif name in ICON:
            assert response.status_code == 301, where
            assert response["Location"].startswith("/static/"), where
        elif name in BEARER:
            assert response.status_code == 401 and "WWW-Authenticate" in response, where
        elif response.status_code == 302:
            assert response["Location"].startswith("/accounts/login/"), where
        else:
            assert response.status_code == 405, where  # a POST-only action


# --- Multiprocess mode ---------------------------------------------------------------------

MULTIPROCESS = """
import os, sys, django
django.setup()
from django.test import RequestFactory
from config.metrics import metrics_view, observe_webhook_attempts

child = os.fork()
if child == 0:  # a second process: a gunicorn worker, a django-q2 worker
    observe_webhook_attempts(delivered=2, retry=0, failed=0)
    os._exit(0)
os.waitpid(child, 0)
observe_webhook_attempts(delivered=3, retry=1, failed=0)
request = RequestFactory().get("/metrics", HTTP_AUTHORIZATION="Bearer " + sys.argv[1])
response = metrics_view(request)
print(response.status_code)
print(response.content.decode())
"""


def test_in_multiprocess_mode_every_process_is_added_up(tmp_path):
    directory = tmp_path / "metrics"
    directory.mkdir()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "PROMETHEUS_MULTIPROC_DIR": str(directory),
        "METRICS_TOKEN": TOKEN,
        "LOG_LEVEL": "CRITICAL",  # the queue's size: no table in this empty database
    }
    result = subprocess.run(
        [sys.executable, "-c", MULTIPROCESS, TOKEN],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    status, text = result.stdout.split("\n", 1)
    assert status == "200"
    found = samples(text)
    name = "engram_webhook_delivery_attempts_total"
    assert value(found, name, outcome="delivered") == 5
    assert value(found, name, outcome="retry") == 1
    assert len(list(directory.glob("counter_*.db"))) == 2  # one file per process


def test_make_run_empties_its_metrics_directory_of_metric_files_only(tmp_path, monkeypatch):
    from memories.management.commands.runall import metrics_dir_ready

    named = tmp_path / "named"
    named.mkdir()
    for name in ("counter_41.db", "histogram_41.db", "gauge_max_42.db", "notes.txt"):
        (named / name).write_text("x")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(named))
    assert metrics_dir_ready(8000) == str(named)
    assert [p.name for p in named.iterdir()] == ["notes.txt"]

    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR")
    with override_settings(VAR_DIR=tmp_path / "var"):
        assert metrics_dir_ready(8001) == str(tmp_path / "var" / "metrics-8001")
    assert (tmp_path / "var" / "metrics-8001").is_dir()


# --- Settings --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"METRICS_TOKEN": "short"}, "METRICS_TOKEN must be at least 16 characters"),
        ({"PROMETHEUS_MULTIPROC_DIR": "/nonexistent/engram"}, "PROMETHEUS_MULTIPROC_DIR="),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT='xml' must be one of: plain, json"),
    ],
)
def test_a_malformed_setting_stops_start_up(tmp_path, env, message):
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "SECRET_KEY"}}
    clean.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        **env,
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert message in result.stderr.strip().splitlines()[-1]
