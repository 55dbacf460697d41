"""Large imports run as background jobs (issue 13, item 7): a body over API_MAX_BODY_BYTES
is spooled into the database and answered 202 with a job to poll; the worker imports it
all or nothing, and the job reports the counts or the refused line. The real worker and
gunicorn at the documented limit: benchmarks in docs/api.md (`manage.py bench_import`)."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from memories import import_jobs, services
from memories.models import BackgroundRun, Classification, ImportChunk, Memory
from memories.transfer import namespace_export

pytestmark = pytest.mark.django_db


@pytest.fixture
def export_body(namespace, make_memory) -> bytes:
    for index in range(40):
        make_memory(f"Memory number {index} about spooled imports " + "x" * 200)
    lines = namespace_export(namespace=namespace, ceiling=Classification.RESTRICTED)
    return "".join(lines).encode()


def _post(client, slug: str, body: bytes):
    return client.generic(
        "POST", f"/api/v1/namespaces/{slug}/import", body, content_type="application/x-ndjson"
    )


@override_settings(API_MAX_BODY_BYTES=2048)
def test_a_large_import_is_a_job_that_imports_everything(
    user, make_token, api, export_body, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(import_jobs, "SPOOL_PIECE", 1000)  # lines cross piece boundaries
    target = services.namespace_create(owner=user, name="Target")
    _, secret = make_token(user, namespaces=[target], access="write")
    client = api(secret)
    assert len(export_body) > 2048
    with django_capture_on_commit_callbacks(execute=True):
        queued = _post(client, target.slug, export_body)
    assert queued.status_code == 202, queued.content
    job = queued.json()
    assert job["status"] == "running"
    assert queued["Location"] == job["url"]
    assert job["url"].endswith(f"/api/v1/namespaces/{target.slug}/import/{job['job']}")

    state = client.get(job["url"]).json()
    assert state["status"] == "ok", state
    assert state["counts"]["memory"] == 40
    assert len(state["memory_ids"]) == 40
    assert Memory.objects.filter(namespace=target).count() == 40
    assert sorted(Memory.objects.filter(namespace=target).values_list("content", flat=True)) == (
        sorted(f"Memory number {i} about spooled imports " + "x" * 200 for i in range(40))
    )
    assert not ImportChunk.objects.exists()  # the spool is gone once the job ends


@override_settings(API_MAX_BODY_BYTES=2048)
def test_a_refused_line_fails_the_job_naming_it_and_writes_nothing(
    user, make_token, api, export_body, django_capture_on_commit_callbacks
):
    target = services.namespace_create(owner=user, name="Target")
    _, secret = make_token(user, namespaces=[target], access="write")
    client = api(secret)
    lines = export_body.decode().splitlines(keepends=True)
    record = json.loads(lines[5])
    record["content"] = 5  # a type error, as the API refuses it
    lines[5] = json.dumps(record) + "\n"
    with django_capture_on_commit_callbacks(execute=True):
        queued = _post(client, target.slug, "".join(lines).encode())
    assert queued.status_code == 202
    state = client.get(queued.json()["url"]).json()
    assert state["status"] == "failed"
    assert state["error"]["code"] == "invalid_import"
    assert list(state["error"]["fields"]) == ["line 6"]
    assert "content" in state["error"]["fields"]["line 6"][0]
    assert not Memory.objects.filter(namespace=target).exists()
    assert not ImportChunk.objects.exists()


@override_settings(API_MAX_BODY_BYTES=2048)
def test_a_job_runs_once_however_often_the_worker_is_asked(
    user, make_token, api, export_body, django_capture_on_commit_callbacks
):
    target = services.namespace_create(owner=user, name="Target")
    _, secret = make_token(user, namespaces=[target], access="write")
    with django_capture_on_commit_callbacks(execute=True):
        job = _post(api(secret), target.slug, export_body).json()["job"]
    assert import_jobs.import_job_run(run_id=job) == {}  # finished: a retry does nothing
    assert Memory.objects.filter(namespace=target).count() == 40
    assert BackgroundRun.objects.get(pk=job).status == BackgroundRun.Status.OK


def test_a_small_import_is_answered_at_once(user, make_token, api, export_body):
    target = services.namespace_create(owner=user, name="Target")
    _, secret = make_token(user, namespaces=[target], access="write")
    response = _post(api(secret), target.slug, export_body)
    assert response.status_code == 201
    assert response.json()["counts"]["memory"] == 40
    assert not BackgroundRun.objects.filter(kind=BackgroundRun.Kind.IMPORT).exists()


def test_spooled_lines_join_pieces_and_keep_every_line(user, namespace):
    run = BackgroundRun.objects.create(kind=BackgroundRun.Kind.IMPORT, namespace=namespace)
    body = b'{"a": 1}\n{"b": "two"}\n\n{"c": 3}'
    for position, start in enumerate(range(0, len(body), 5)):
        ImportChunk.objects.create(run=run, position=position, data=body[start : start + 5])
    assert list(import_jobs.spooled_lines(run.pk)) == [
        b'{"a": 1}\n',
        b'{"b": "two"}\n',
        b"\n",
        b'{"c": 3}',
    ]
