"""Large imports, in the background: POST .../import over API_MAX_BODY_BYTES.

import_job_create spools the body into the database (ImportChunk, so the worker that runs
the job may be on another machine) and queues memories.tasks.namespace_import_job, which
calls import_job_run: memories.importer.namespace_import over spooled_lines, all or
nothing, the outcome (counts, or the refused line) recorded in the job's BackgroundRun.
import_job_state is what GET .../import/{job} answers.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from typing import IO, Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from config.api import error_body
from config.queue import enqueue
from memories.importer import ImportFailed, namespace_import
from memories.models import BackgroundRun, Classification, ImportChunk, Namespace

IMPORT_KIND = BackgroundRun.Kind.IMPORT
# Pieces of a spooled body: large enough that a 200 MB import is 200 rows, small enough
# that one piece in memory costs nothing.
SPOOL_PIECE = 1024 * 1024
SPOOL_BATCH = 8  # pieces per INSERT


def import_job_create(
    *,
    namespace: Namespace,
    body: IO[bytes],
    ceiling: int,
    apply_settings: bool = False,
    actor=None,
) -> BackgroundRun:
    """Spool an import's body into the database (ImportChunk) and queue its import.

    The run records the job: `counts["request"]` what to do, then what the import did or
    the line it refused. The spool is in the database, not a local file, so the worker
    that runs the job may be on another machine.
    """
    request = {
        "ceiling": int(ceiling),
        "apply_settings": apply_settings,
        "actor": getattr(actor, "pk", None),
    }
    with transaction.atomic():
        run = BackgroundRun.objects.create(
            kind=IMPORT_KIND, namespace=namespace, counts={"request": request}
        )
        pieces: list[ImportChunk] = []
        position = 0
        while piece := body.read(SPOOL_PIECE):
            pieces.append(ImportChunk(run=run, position=position, data=piece))
            position += 1
            if len(pieces) == SPOOL_BATCH:
                ImportChunk.objects.bulk_create(pieces)
                pieces = []
        ImportChunk.objects.bulk_create(pieces)
        enqueue("memories.tasks.namespace_import_job", run.pk)
    return run


def spooled_lines(run_id: int) -> Iterator[bytes]:
    """The lines of a spooled body, each with its newline, reading one piece at a time."""
    rest = b""
    position = -1
    while True:
        row = (
            ImportChunk.objects.filter(run_id=run_id, position__gt=position)
            .order_by("position")
            .values_list("position", "data")
            .first()
        )
        if row is None:
            break
        position, data = row
        *lines, rest = (rest + bytes(data)).split(b"\n")
        for line in lines:
            yield line + b"\n"
    if rest:
        yield rest


def import_job_run(*, run_id: int) -> dict[str, Any]:
    """Run a queued import once, recording its outcome in its run; returns the counts.

    Idempotent: the outcome is written in the import's own transaction, so a retry of a
    finished job finds it done and does nothing, and a retry after a killed worker finds
    nothing written and starts again.
    """
    try:
        return _import_job_run(run_id)
    except Exception:
        # Recorded so the job answers "failed"; re-raised for django-q2's record. A retry
        # then finds the run finished.
        BackgroundRun.objects.filter(pk=run_id, status=BackgroundRun.Status.RUNNING).update(
            status=BackgroundRun.Status.FAILED,
            finished_at=timezone.now(),
            error=traceback.format_exc()[-20_000:],
        )
        ImportChunk.objects.filter(run_id=run_id).delete()
        raise


def _import_job_run(run_id: int) -> dict[str, Any]:
    with transaction.atomic():
        run = (
            BackgroundRun.objects.select_for_update(of=("self",))
            .select_related("namespace")
            .filter(pk=run_id, kind=IMPORT_KIND)
            .first()
        )
        if run is None or run.status != BackgroundRun.Status.RUNNING:
            return {}
        request = dict(run.counts.get("request") or {})
        actor = get_user_model().objects.filter(pk=request.get("actor")).first()
        try:
            result = namespace_import(
                namespace=run.namespace,
                lines=spooled_lines(run.pk),
                ceiling=request["ceiling"],
                actor=actor,
                apply_settings=request["apply_settings"],
            )
        except ImportFailed as refused:
            status, error = BackgroundRun.Status.FAILED, str(refused)
            counts = {"request": request, "line": refused.line, "messages": refused.messages}
        else:
            status, error = BackgroundRun.Status.OK, ""
            counts = {"request": request, **result.as_dict()["counts"]}
            counts["memory_ids"] = result.as_dict()["memory_ids"]
        BackgroundRun.objects.filter(pk=run.pk).update(
            status=status, error=error, counts=counts, finished_at=timezone.now()
        )
    ImportChunk.objects.filter(run_id=run_id).delete()
    return {key: value for key, value in counts.items() if key != "memory_ids"}


def import_job_visible(run: BackgroundRun, ceiling: int) -> bool:
    """A job is the business of callers who could have started it: its counts and ids
    describe memories up to the starting token's ceiling, so a caller below that ceiling
    gets the same answer as for a job that does not exist."""
    request = (run.counts or {}).get("request") or {}
    return int(request.get("ceiling", Classification.RESTRICTED)) <= ceiling


def import_job_state(run: BackgroundRun) -> dict[str, Any]:
    """What GET .../import/{job} answers: status, then the counts or the refused line."""
    counts = dict(run.counts or {})
    state: dict[str, Any] = {
        "job": run.pk,
        "status": run.status,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
    }
    if run.status == BackgroundRun.Status.OK:
        state["counts"] = {
            key: value
            for key, value in counts.items()
            if key not in ("request", "memory_ids", "line", "messages")
        }
        state["memory_ids"] = counts.get("memory_ids", {})
    elif run.status == BackgroundRun.Status.FAILED:
        line = counts.get("line")
        if line is None:  # not a refused line: the traceback is the admin's to read
            body = error_body(500, "server_error", "The import failed; it has been logged.")
        else:
            fields = {f"line {line}": counts.get("messages", [])}
            body = error_body(400, "invalid_import", run.error, fields)
        state["error"] = body["error"]
    return state
