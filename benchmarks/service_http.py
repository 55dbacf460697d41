"""The HTTP side of `manage.py bench`: the gunicorn it starts, the large import through
the worker, and the wrk load test.

Server serves the app on a free port with the bench's database; benchmarks.service
times ingest and recall through it, and this module adds the parts only HTTP has:
import_rows (an export copied to the size asked, imported by the worker) and load_rows
(wrk at each of LOAD_CONCURRENCY).
"""

from __future__ import annotations

import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError
from django.utils import timezone

from benchmarks import corpus
from benchmarks.service_table import Progress, Row
from memories.models import Namespace

LOAD_CONCURRENCY = (1, 8, 32)
UNIQUE_MARK = "UNIQUEMARK"  # in a body's content, replaced by each request's own suffix
# The Lua line that does it: wrk sets `tid` (the thread's number) in setup().
_UNIQUE_LUA = '  body = string.gsub(body, "{mark}", "{unique} " .. tostring(tid) .. "-" .. i)\n'


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """A gunicorn serving the app on a free port, with the bench's database."""

    def __init__(
        self, *, workers: int, database_url: str, redis_url: str = "", asgi: bool = False
    ) -> None:
        """`asgi`: config.asgi under uvicorn workers (the README's production command, with
        MCP at /mcp); otherwise config.wsgi with sync workers."""
        self.port = _free_port()
        self.env = env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "DEBUG": "0",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or "bench-" + "x" * 50,
            "SECURE_SSL_REDIRECT": "0",
            "PYTHONWARNINGS": "ignore:No directory at",
            # No access line per request (config/request_id.py): wrk sends thousands.
            "LOG_LEVEL": "WARNING",
            # The benchmark measures the service, not the per-token throttle.
            "API_RATE_LIMIT": "10000000/min",
        }
        gunicorn = Path(sys.executable).with_name("gunicorn")
        self.process = subprocess.Popen(
            [
                str(gunicorn),
                *(
                    ["config.asgi:application", "-k", "uvicorn_worker.UvicornWorker"]
                    if asgi
                    else ["config.wsgi:application"]
                ),
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(workers),
                "--log-level",
                "warning",
            ],
            cwd=settings.BASE_DIR,
            env=env,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise CommandError("gunicorn exited at start-up")
            try:
                self.request("GET", "/api/v1/schema", token="")
                return
            except (OSError, http.client.HTTPException):
                time.sleep(0.2)
        self.stop()
        raise CommandError("gunicorn did not answer within 30 s")

    def request(
        self, method: str, path: str, *, token: str, body: Any = None
    ) -> tuple[int, float, bytes]:
        """(status, milliseconds, body) of one request on a new connection."""
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        payload = json.dumps(body).encode() if body is not None else None
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            data = response.read()
        finally:
            conn.close()
        return response.status, (time.perf_counter() - started) * 1000, data

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def api_item(item: dict[str, Any]) -> dict[str, Any]:
    return {key: item[key] for key in ("content", "keywords", "topic", "strength", "utility")}


def import_rows(
    namespace: Namespace, server: Server, secret: str, megabytes: float, progress: Progress
) -> list[Row]:
    """The corpus exported over HTTP, copied (new ids) to `megabytes`, imported over
    HTTP into the scratch namespace by the worker; the upload and the job timed."""
    status, _, export = server.request(
        "GET", f"/api/v1/namespaces/{namespace.slug}/export", token=secret
    )
    if status != 200:
        raise CommandError(f"export answered {status}: {export[:300]!r}")
    body = import_file(export, int(megabytes * 1024 * 1024))
    if len(body) > settings.API_IMPORT_MAX_BYTES:
        raise CommandError("--import-mb is over API_IMPORT_MAX_BYTES.")
    scratch = corpus.scratch_namespace()
    # The file repeats the export's texts to reach its size: with duplicates refused it
    # would measure refusals, not writes. Each line is still sketched (MemorySketch).
    Namespace.objects.filter(pk=scratch.pk).update(dedupe=Namespace.Dedupe.OFF)
    worker_log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=settings.BASE_DIR,
        env=server.env,  # the same database, broker and SECRET_KEY (tasks are signed)
        stdout=worker_log,
        stderr=subprocess.STDOUT,
    )

    def failed(message: str) -> CommandError:
        worker_log.seek(0)
        return CommandError(f"{message}\nworker log:\n{worker_log.read()[-3000:].decode()}")

    try:
        progress(f"  importing {len(body) / 1e6:.1f} MB ...")
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
        conn.request(
            "POST",
            f"/api/v1/namespaces/{scratch.slug}/import",
            body=body,
            headers={
                "Authorization": f"Bearer {secret}",
                "Content-Type": "application/x-ndjson",
            },
        )
        response = conn.getresponse()
        answer = json.loads(response.read() or b"{}")
        conn.close()
        uploaded = time.perf_counter() - started
        if response.status == 201:
            state = {"status": "ok", "counts": answer["counts"]}
        elif response.status == 202:
            path = answer["url"].split(str(server.port), 1)[1]
            deadline = time.monotonic() + 3600
            while True:
                time.sleep(0.5)
                _, _, raw = server.request("GET", path, token=secret)
                state = json.loads(raw)
                if state["status"] != "running":
                    break
                if time.monotonic() > deadline or worker.poll() is not None:
                    raise failed("the import job did not finish")
        else:
            raise failed(f"import answered {response.status}: {answer}")
        total = time.perf_counter() - started
        if state["status"] != "ok":
            raise failed(f"the import failed: {state}")
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        worker_log.close()
    memories = state["counts"]["memory"]
    megabytes = len(body) / 1e6
    corpus.scratch_namespace()  # emptied again
    return [
        ("import", "file", f"{megabytes:.1f}", f"MB, {memories:,} memories"),
        ("import", "upload answered", f"{uploaded:.1f}", f"s (HTTP {response.status})"),
        ("import", "until done", f"{total:.1f}", "s"),
        (
            "import",
            "rate",
            f"{megabytes / total:.2f}",
            f"MB/s, {memories / total:,.0f} memories/s",
        ),
    ]


# Export records that refer to memories by id, and the fields that do.
_MEMORY_REFERENCES = {
    "memory": ("id",),
    "association": ("source", "target"),
    "card": ("memory",),
    "review_log": ("memory",),
    "event": ("memory",),
}


def import_file(export: bytes, size: int) -> bytes:
    """An import file of about `size` bytes: the export, plus copies of its memories (with
    their links, cards, logs and history) under new ids until the size is reached.
    Entities, relations and digests appear once (a namespace holds each only once)."""
    lines = export.decode().splitlines()
    header, records = lines[0], [json.loads(line) for line in lines[1:-1]]
    copyable = [r for r in records if r["type"] in _MEMORY_REFERENCES]
    per_copy = sum(len(json.dumps(r)) + 1 for r in copyable) or 1
    offset = 1 + max((r["id"] for r in records if r["type"] == "memory"), default=0)
    out = [header, *lines[1:-1]]
    written = len(export)
    copy = 1
    while written + per_copy <= size:
        for record in copyable:
            shifted = dict(record)
            for field in _MEMORY_REFERENCES[record["type"]]:
                shifted[field] = record[field] + copy * offset
            out.append(json.dumps(shifted))
        written += per_copy
        copy += 1
    out.append(json.dumps({"type": "end", "lines": len(out) + 1}))
    return ("\n".join(out) + "\n").encode()


def load_rows(
    namespace: Namespace, server: Server, token: str, seconds: int, progress: Progress
) -> list[Row]:
    """wrk against the gunicorn: recall and create at each of LOAD_CONCURRENCY."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise CommandError("--load needs wrk (apt-get install wrk).")
    scratch = corpus.scratch_namespace()
    recall = [
        {"query": q, "namespaces": [namespace.slug], "track": False} for q in corpus.queries(100)
    ]
    vocab = corpus.vocabulary()
    rng = random.Random(corpus.SEED + 3)
    create = [
        api_item(item) | {"namespace": scratch.slug}
        for item in corpus.memory_items(scratch, vocab, rng, 100, timezone.now())
    ]
    rows: list[Row] = []
    # "create" writes a new text with every request (each body's content gets a suffix of
    # its own), as an agent storing what it learns does; "create, stored text again" cycles
    # the bodies, so after the first round every request is a repeat that the dedupe path
    # answers with the memory already stored (counted as a use).
    scenarios = (
        ("recall", "/api/v1/recall", recall, LOAD_CONCURRENCY, False),
        ("create", "/api/v1/memories", create, LOAD_CONCURRENCY, True),
        ("create, stored text again", "/api/v1/memories", create, (8,), False),
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, bodies, concurrencies, unique in scenarios:
            for concurrency in concurrencies:
                script = Path(tmp) / f"load-{len(rows)}.lua"
                suffix = f"load {uuid.uuid4().hex[:8]}" if unique else ""
                script.write_text(_wrk_script(path, token, bodies, unique=suffix))
                progress(f"  load: {name} at concurrency {concurrency}, {seconds} s ...")
                figures = _wrk(wrk, server, script, concurrency, seconds)
                rows.append(
                    (
                        "load (wrk)",
                        f"{name} c={concurrency}: req/s",
                        f"{figures['requests'] / figures['seconds']:,.1f}",
                        f"{figures['requests']:,} requests",
                    )
                )
                rows.append(
                    (
                        "load (wrk)",
                        f"{name} c={concurrency}: p50 / p95 / p99",
                        " / ".join(f"{figures[p] / 1000:.1f}" for p in ("p50", "p95", "p99")),
                        "ms",
                    )
                )
                errors = str(figures["errors"])
                rows.append(("load (wrk)", f"{name} c={concurrency}: errors", errors, ""))
    return rows


def _wrk(wrk: str, server: Server, script: Path, concurrency: int, seconds: int) -> dict:
    completed = subprocess.run(
        [
            wrk,
            "--threads",
            str(min(2, concurrency)),
            "--connections",
            str(concurrency),
            "--duration",
            f"{seconds}s",
            "--timeout",
            "60s",
            "--script",
            str(script),
            f"http://127.0.0.1:{server.port}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in completed.stdout.splitlines():
        if line.startswith("BENCH "):
            return json.loads(line[len("BENCH ") :])
    raise CommandError(f"wrk printed no figures: {completed.stdout[-500:]}{completed.stderr}")


def _wrk_script(path: str, token: str, bodies: list[dict[str, Any]], *, unique: str = "") -> str:
    """A wrk Lua script: POST the bodies in turn; print the figures as one JSON line.

    unique: when given, each request's content ends with it and the request's own number
    (per wrk thread), so that no two requests of the run send the same text.
    """
    if unique:
        bodies = [body | {"content": f"{body['content']} {UNIQUE_MARK}"} for body in bodies]
    encoded = ",\n".join(f"  [==[{json.dumps(body)}]==]" for body in bodies)
    suffix_line = _UNIQUE_LUA.format(mark=UNIQUE_MARK, unique=unique) if unique else ""
    return f"""
wrk.method = "POST"
wrk.path = "{path}"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer {token}"
local bodies = {{
{encoded}
}}
local made = 0
setup = function(thread)
  made = made + 1
  thread:set("tid", made)
end
local i = 0
request = function()
  i = i + 1
  local body = bodies[(i % #bodies) + 1]
{suffix_line}  return wrk.format(nil, nil, nil, body)
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {{"requests": %d, "seconds": %f, "errors": %d, "p50": %f, "p95": %f, "p99": %f}}\\n',
    summary.requests, summary.duration / 1e6,
    e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(95), latency:percentile(99)))
end
"""
