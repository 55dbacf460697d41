"""MCP's recall against the REST API's, on one ASGI server in one run (`manage.py bench`,
part recall, with HTTP): the README's production server (config.asgi under uvicorn
workers) answers both, the two interleaved query by query, each client on a kept-alive
connection, so the difference is MCP's own cost (JSON-RPC framing, the tool layer, the
in-process call of the REST view)."""

from __future__ import annotations

import asyncio
import logging
import time

import httpx2
from django.core.management.base import CommandError
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks.service_http import Server
from benchmarks.service_table import Progress, Row
from benchmarks.stats import percentile
from memories.models import Namespace


def _ms(values: list[float]) -> str:
    return " / ".join(f"{percentile(values, q):.1f}" for q in (0.5, 0.95, 0.99))


async def _both(url: str, secret: str, slug: str, queries: list[str]) -> tuple[list, list]:
    headers = {"Authorization": f"Bearer {secret}"}
    rest_times: list[float] = []
    mcp_times: list[float] = []
    async with (
        httpx2.AsyncClient(base_url=url, headers=headers, timeout=120) as rest,
        httpx2.AsyncClient(headers=headers, timeout=120) as transport,
        Client(streamable_http_client(f"{url}/mcp", http_client=transport)) as mcp,
    ):
        for warm in queries[:5]:
            await rest.post("/api/v1/recall", json={"query": warm, "track": False})
            await mcp.call_tool("recall", {"query": warm, "track": False})
        for query in queries:
            body = {"query": query, "namespaces": [slug], "track": False}
            started = time.perf_counter()
            response = await rest.post("/api/v1/recall", json=body)
            rest_times.append((time.perf_counter() - started) * 1000)
            if response.status_code != 200:
                raise CommandError(f"POST /api/v1/recall answered {response.status_code}")
            started = time.perf_counter()
            result = await mcp.call_tool("recall", body)
            mcp_times.append((time.perf_counter() - started) * 1000)
            if result.is_error:
                raise CommandError(f"MCP recall failed: {result.content[0].text[:300]}")
    return rest_times, mcp_times


def mcp_rows(
    namespace: Namespace,
    secret: str,
    queries: list[str],
    *,
    workers: int,
    database_url: str,
    redis_url: str,
    progress: Progress,
) -> list[Row]:
    progress(f"  recall: {len(queries)} queries, REST and MCP, on the ASGI server ...")
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # a line per request otherwise
    server = Server(workers=workers, database_url=database_url, redis_url=redis_url, asgi=True)
    try:
        rest, mcp = asyncio.run(
            _both(f"http://127.0.0.1:{server.port}", secret, namespace.slug, queries)
        )
    finally:
        server.stop()
    gap = percentile(mcp, 0.95) - percentile(rest, 0.95)
    return [
        ("recall", "ASGI: POST /recall p50 / p95 / p99 (kept alive)", _ms(rest), "ms"),
        ("recall", "ASGI: MCP tool recall p50 / p95 / p99 (kept alive)", _ms(mcp), "ms"),
        ("recall", "MCP recall p95 minus REST p95", f"{gap:.1f}", "ms"),
    ]
