"""The agent's write path over real HTTP (issue 15): concurrent writers of one conversation,
and the evaluation through the REST API, against a real gunicorn on the engine under test."""

from __future__ import annotations

import itertools
import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.support.servers import Gunicorn, api_json, manage, server_env

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).parents[1] / "benchmarks" / "fixtures" / "locomo_small.json"
WRITERS = 8
TURNS = 6
SEED = """
from django.contrib.auth import get_user_model
from memories import services
user = get_user_model().objects.create_user("agent-{tag}", password="pw-agent-12345")
token, secret = services.token_create(
    owner=user, name="agent", all_namespaces=True, access="write", ceiling=3
)
print(secret)
"""


def all_namespaces_token(database_url: str) -> str:
    code = SEED.format(tag=uuid.uuid4().hex[:8])
    return manage(server_env(database_url), "shell", "--no-imports", "-c", code).splitlines()[-1]


def every(server: Gunicorn, secret: str, path: str) -> list[dict]:
    items, page = [], path
    while page:
        body = api_json(server, secret, "GET", page)
        items += body["results"]
        page = body["next"] and body["next"].split("/api/v1", 1)[1]
    return items


@pytest.fixture
def server(prepared_database, tmp_path):
    env = server_env(prepared_database, API_RATE_LIMIT="100000/hour")
    with Gunicorn(env, tmp_path / "gunicorn.log", workers=2, threads=4) as running:
        yield running


def test_concurrent_writers_of_one_session_miss_no_link_and_write_none_twice(
    server, prepared_database
):
    secret = all_namespaces_token(prepared_database)
    slug = f"chat-{uuid.uuid4().hex[:6]}"
    api_json(server, secret, "POST", "/namespaces", {"name": slug, "slug": slug})

    def writer(number: int) -> list[int]:
        return [
            api_json(
                server,
                secret,
                "POST",
                "/memories",
                {"namespace": slug, "content": f"writer {number} turn {i}", "session_id": "s"},
            )["id"]
            for i in range(TURNS)
        ]

    with ThreadPoolExecutor(WRITERS) as pool:
        written = [memory_id for ids in pool.map(writer, range(WRITERS)) for memory_id in ids]

    memories = every(server, secret, f"/memories?namespace={slug}&limit=100")
    assert sorted(m["id"] for m in memories) == sorted(written)
    # The session's order: created_at (taken under the session's lock), then id.
    turns = [m["id"] for m in sorted(memories, key=lambda m: (m["created_at"], m["id"]))]
    links = every(server, secret, f"/associations?namespace={slug}&limit=100")
    pairs = [(link["source"], link["target"], link["weight"], link["kind"]) for link in links]
    assert len(pairs) == len(set(pairs))
    expected = {(a, b, 1.0, "next_turn") for a, b in itertools.pairwise(turns)} | {
        (a, b, 0.5, "near_turn") for a, b in zip(turns, turns[2:], strict=False)
    }
    assert set(pairs) == expected, server.tail()


def test_eval_recall_over_http_prints_the_in_process_figures(
    server, prepared_database, tmp_path, db
):
    secret = all_namespaces_token(prepared_database)
    in_process, over_http = tmp_path / "local.json", tmp_path / "http.json"
    call_command("eval_recall", str(FIXTURE), "--json", str(in_process), stdout=StringIO())
    out = StringIO()
    call_command(
        "eval_recall",
        str(FIXTURE),
        "--http",
        server.url,
        "--token",
        secret,
        "--json",
        str(over_http),
        stdout=out,
    )
    assert "through the REST API of" in out.getvalue()
    local, remote = json.loads(in_process.read_text()), json.loads(over_http.read_text())
    assert remote["questions"] == local["questions"] == 7
    assert remote["memories"] == local["memories"]
    assert remote["recall"] == local["recall"]
    assert remote["by_category"] == local["by_category"]
