"""Prometheus metrics: what the web processes, recall, the worker and webhooks measure, and
the protected /metrics view that exposes them (docs/metrics.md lists every metric).

Every metric is created here, once per process. Recording costs a few microseconds (a
dict look-up and a lock, or a write into a memory-mapped file in multiprocess mode).

Multiprocess mode: gunicorn's workers and the django-q2 cluster's workers are separate
processes. With PROMETHEUS_MULTIPROC_DIR set (before prometheus_client is imported: in the
environment of the process), each process writes its values to files in that directory
and /metrics adds them up; the directory must be emptied when the deployment starts
(`manage.py runall` does). Without it, /metrics reads this process's registry (runserver,
tests, one uvicorn process).

Labels are bounded: a request is labelled by its URL route's name, never its path.
"""

from __future__ import annotations

import hmac
import logging
import os
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe
from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector

logger = logging.getLogger(__name__)

# No *_created series beside each metric: Prometheus does not need them, and multiprocess
# mode has none, so both modes expose the same series.
disable_created_metrics()

# Edges at 40 and 60 ms (recall targets: docs/metrics.md, docs/benchmarks.md), so "the share
# of recalls over 40 ms" is exact, not interpolated.
REQUEST_BUCKETS = (0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28)
CANDIDATE_BUCKETS = (0, 5, 10, 25, 50, 100, 200, 400, 800, 1600, 5000)
TASK_BUCKETS = (0.01, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0)
WAIT_BUCKETS = (0.1, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0)

# --- Web requests (config.request_id.RequestIdMiddleware) -----------------------------------

HTTP_REQUEST_SECONDS = Histogram(
    "engram_http_request_duration_seconds",
    "Time from a request's arrival in Django to its response, by URL route name.",
    ["route", "method", "status"],
    buckets=REQUEST_BUCKETS,
)
HTTP_THROTTLED = Counter(
    "engram_http_throttled",
    "Requests answered 429 (over API_RATE_LIMIT), by URL route name.",
    ["route"],
)

# --- Recall (recall.pipeline) ---------------------------------------------------------------

RECALL_SECONDS = Histogram(
    "engram_recall_duration_seconds",
    "The recall pipeline of one query: stages, fusion, ranking and explanations.",
    buckets=REQUEST_BUCKETS,
)
RECALL_STAGE_SECONDS = Histogram(
    "engram_recall_stage_duration_seconds",
    "One recall stage (Sf, Se, Ss, S6, S8), when it ran.",
    ["stage"],
    buckets=STAGE_BUCKETS,
)
RECALL_CANDIDATES = Histogram(
    "engram_recall_candidates",
    "Candidates of one recall: memories the stages found, digests and relations.",
    buckets=CANDIDATE_BUCKETS,
)

# --- The worker (django-q2's signals, connected by memories.apps) ----------------------------

TASK_RUNS = Counter(
    "engram_task_runs", "Background task runs, by task and outcome.", ["func", "outcome"]
)
TASK_SECONDS = Histogram(
    "engram_task_duration_seconds",
    "Time a background task ran in its worker.",
    ["func"],
    buckets=TASK_BUCKETS,
)
TASK_WAIT_SECONDS = Histogram(
    "engram_task_queue_wait_seconds",
    "Time from a task's enqueueing to a worker starting it.",
    ["func"],
    buckets=WAIT_BUCKETS,
)
# "max": the latest success over every process, the dead ones' included.
TASK_LAST_SUCCESS = Gauge(
    "engram_task_last_success_timestamp_seconds",
    "When a task last finished without raising (Unix time).",
    ["func"],
    multiprocess_mode="max",
)

# --- Webhooks (memories.webhook_delivery) ----------------------------------------------------

WEBHOOK_ATTEMPTS = Counter(
    "engram_webhook_delivery_attempts",
    "Webhook delivery attempts: delivered (2xx), retry (failed, will be retried), "
    "failed (failed, and the delivery gave up).",
    ["outcome"],
)

# --- Recording --------------------------------------------------------------------------------

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_of(request: HttpRequest) -> str:
    """The request's URL route name: "static" for static files, "unmatched" for a path no
    route matches (a client's paths must not become label values)."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        # Answered before URL resolution (a static file, a body over the limit, a redirect).
        if request.path_info.startswith("/" + settings.STATIC_URL.lstrip("/")):
            return "static"
        try:
            match = resolve(request.path_info, getattr(request, "urlconf", None))
        except Resolver404:
            return "unmatched"
    return match.view_name


def observe_request(route: str, method: str, status: int, seconds: float) -> None:
    method = method if method in _METHODS else "other"
    HTTP_REQUEST_SECONDS.labels(route, method, f"{status // 100}xx").observe(seconds)
    if status == 429:
        HTTP_THROTTLED.labels(route).inc()


def observe_recall(
    stage_timings: Mapping[str, Mapping[str, Any]], candidates: int, duration_ms: float
) -> None:
    """What recall.pipeline measured for one query (its stage_timings, in ms)."""
    for stage, timing in stage_timings.items():
        # A stage skipped before it started has no time; one that ran out of its budget has.
        if timing["ms"] or not timing["skipped"]:
            RECALL_STAGE_SECONDS.labels(stage).observe(timing["ms"] / 1000)
    RECALL_CANDIDATES.observe(candidates)
    RECALL_SECONDS.observe(duration_ms / 1000)


def observe_webhook_attempts(*, delivered: int, retry: int, failed: int) -> None:
    for outcome, count in (("delivered", delivered), ("retry", retry), ("failed", failed)):
        if count:
            WEBHOOK_ATTEMPTS.labels(outcome).inc(count)


# The worker: pre_execute and post_execute_in_worker are sent in the worker process around
# the task (post_execute comes later, from the monitor process, and never for a task that
# failed in sync mode). Start times by task id, in the worker process that runs them.
_task_started: dict[str, float] = {}


def _task_func(task: Mapping[str, Any]) -> str:
    from django_q.utils import get_func_repr

    return get_func_repr(task.get("func")) or "unknown"


def task_started(sender: Any, task: dict | None = None, **kwargs: Any) -> None:
    if not task:
        return
    _task_started[str(task.get("id"))] = time.perf_counter()
    enqueued = task.get("started")  # set by async_task when it queued the task
    if isinstance(enqueued, datetime):
        wait = max(0.0, time.time() - enqueued.timestamp())
        TASK_WAIT_SECONDS.labels(_task_func(task)).observe(wait)


def task_finished(sender: Any, task: dict | None = None, **kwargs: Any) -> None:
    if not task:
        return
    func = _task_func(task)
    started = _task_started.pop(str(task.get("id")), None)
    if started is not None:
        TASK_SECONDS.labels(func).observe(time.perf_counter() - started)
    # In sync mode a failing task is signalled before django-q2 sets "success".
    success = bool(task.get("success", False))
    TASK_RUNS.labels(func, "success" if success else "failure").inc()
    if success:
        TASK_LAST_SUCCESS.labels(func).set(time.time())


def connect_worker_signals() -> None:
    """Called once from memories.apps (config has no AppConfig of its own)."""
    from django_q.signals import post_execute_in_worker, pre_execute

    pre_execute.connect(task_started, dispatch_uid="engram-metrics-task-started")
    post_execute_in_worker.connect(task_finished, dispatch_uid="engram-metrics-task-finished")


# --- Read at scrape time ------------------------------------------------------------------------


class QueueCollector:
    """engram_task_queue_size: tasks waiting for a worker, asked of the broker per scrape
    (a count on the ORM broker, LLEN on Redis). Computed, so it is right in any mode."""

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "engram_task_queue_size", "Background tasks waiting for a worker (at scrape time)."
        )

    def describe(self):
        # Registering asks for the names only: no broker call at import.
        return [self._family()]

    def collect(self):
        gauge = self._family()
        try:
            from config.queue import broker  # not at import: django-q needs the apps loaded

            gauge.add_metric([], broker().queue_size())
        except Exception:  # the broker down must not take the other metrics with it
            logger.warning("Could not read the task queue's size for /metrics", exc_info=True)
            return
        yield gauge


QUEUE = QueueCollector()
REGISTRY.register(QUEUE)


def exposition(accept: str = "") -> tuple[bytes, str]:
    """(body, content type) of every metric: every process's (multiprocess) or this one's,
    in the format the scraper accepts (Prometheus text, or OpenMetrics)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        registry.register(QUEUE)
    else:
        registry = REGISTRY
    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type


# --- The view --------------------------------------------------------------------------------


def _refusal(request: HttpRequest) -> HttpResponse | None:
    """None when the caller may read the metrics: the METRICS_TOKEN bearer or a staff
    session. Users' API tokens are bearers too, and are refused (403)."""
    scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        expected = settings.METRICS_TOKEN
        given = credential.strip()
        if expected and hmac.compare_digest(given.encode(), expected.encode()):
            return None
        return _text("This token does not open /metrics.", 403)
    user = request.user
    if user.is_authenticated:
        return None if user.is_staff else _text("Staff only.", 403)
    response = _text("Send Authorization: Bearer <METRICS_TOKEN>, or sign in as staff.", 401)
    response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


def _text(message: str, status: int) -> HttpResponse:
    return HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")


@csrf_exempt
@require_safe
def metrics_view(request: HttpRequest) -> HttpResponse:
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    body, content_type = exposition(request.headers.get("Accept", ""))
    response = HttpResponse(body, content_type=content_type)
    response["Cache-Control"] = "no-store"
    return response
