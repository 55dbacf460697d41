"""Scale out past one machine (issue 20): two web servers and two worker clusters on one
PostgreSQL database and one Redis, under a bounded mixed load; nothing lost, nothing twice.

Processes, each in its own process group: two gunicorns (the README's production command,
two uvicorn workers each, on two ports), two `manage.py qcluster` (two workers each, on the
Redis broker) and two "other machines' schedulers": `manage.py shell` processes that
enqueue the scheduled tasks through the broker on every tick, both at the same moment. The
clusters' own django-q2 schedulers run too: about 30 s after they start, the schedules made
by setup_schedules are due and both clusters look at them at once.

The load, from a thread pool, every request on one of the two servers in turn: single
creates (distinct texts; pairs of near-duplicates and pairs of one text sent to both servers
at once), bulk creates, imports large enough to be jobs the worker runs, touches and
tracked recalls of the same few memories, review grades and touches of the same cards'
memories. Meanwhile sweeps, digests, simulated recall, review.due and webhook retries are
enqueued from both sides, and two namespaces' events are POSTed to a local receiver (two of
its answers are 500s, so two deliveries are retried).

Checked after everything settled: every answer was the expected 2xx; counters add up
exactly (uses, recalls, accesses, the use log, grades, cards' versions, the throttle's
counters in Redis); memories are exactly what was sent (an import's lines once each, a text
sent twice at once stored once, each near-duplicate pair linked once); every task ran once
(one `processing` line per task over both clusters' logs, one run record per task id, one
task per due schedule); the sweeps' history has one event per memory and rule; every
webhook was received once, or twice when its first answer was a 500, and never more than
WEBHOOK_MAX_ATTEMPTS times.

`ENGRAM_SCALE_BROKER=database` runs the same without Redis: the django-q2 broker and the
cache (so the throttle's counters) in PostgreSQL, which several machines can share too.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import pickle
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, suppress
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connection

from tests.e2e.test_cluster import Cluster, ClusterDatabase, _env, make_database  # noqa: F401
from tests.support.receiver import Receiver, serve
from tests.support.redis_db import redis_url
from tests.support.servers import Gunicorn, manage

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="two web servers and two worker clusters share one database only on "
        "PostgreSQL (SQLite is one machine's file); run with DATABASE_URL=postgres://...",
    ),
]

REDIS_URL = redis_url("scale-out")  # a database of its own, emptied at start and end
QUEUE_KEY = "django_q:engram:q"  # the broker's list (Q_CLUSTER name "engram")
BROKER = os.environ.get("ENGRAM_SCALE_BROKER", "redis")  # or "database": no Redis at all
assert BROKER in ("redis", "database"), f"ENGRAM_SCALE_BROKER={BROKER!r}: redis or database"
THROTTLE_KEYS = ":1:throttle_api_token-"  # the cache's keys of the API throttle's counters

# The load: about 650 requests, the import jobs' polls included.
SINGLES = 160  # single creates of distinct texts
NEAR_PAIRS = 8  # two near-duplicate texts, one to each server at the same moment
EXACT_PAIRS = 5  # one text, to both servers at the same moment: stored once
BULKS, BULK_SIZE = 10, 20
IMPORTS, IMPORT_LINES = 4, 150  # each file is over API_MAX_BODY_BYTES: a worker's job
HOT, TOUCHES, RECALLS = 12, 10, 10  # per hot memory
CARDS, GRADES, CARD_TOUCHES = 16, 5, 3  # per card
THREADS = 12
TICK_SECONDS = 5  # how often each side enqueues the scheduled tasks
SCHEDULER_PASS_SECONDS = 34  # a cluster's scheduler first runs about 30 s after it starts
MAX_BODY = 16 * 1024
WEBHOOK_CODES = [200, 200, 500, 200, 200, 200, 200, 500]  # then 200s
WEBHOOK_MAX_ATTEMPTS = 5

# The swept namespace: memory n is of kind n % 6 (tests/e2e/test_cluster.py), so each
# sweep rule has SWEPT // 6 memories to apply to, once, however many sweeps run at once.
SWEPT = 600
SEED = """
import json, random
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone
from memories import services
from memories.models import Memory
user = get_user_model().objects.create_user("scale")
def make(name, mode):
    return services.namespace_create(owner=user, name=name, mode=mode)
load, hot = make("load", "agent_memory"), make("hot", "knowledge_base")
cards, swept = make("cards", "personal"), make("swept", "knowledge_base")
a, a_secret = services.token_create(owner=user, name="a", namespaces=[load, hot], access="write")
b, b_secret = services.token_create(
    owner=user, name="b", namespaces=[cards, swept], access="write"
)
now = timezone.now()
kinds = [
    {"last_used_at": now - timedelta(days=30)},
    {"last_used_at": now, "use_count": 2},
    {"last_used_at": now - timedelta(days=5)},
    {"last_used_at": now - timedelta(days=40), "tier": "long_term", "status": "promoted"},
    {"last_used_at": now - timedelta(days=1), "session_ids": ["a", "b", "c"],
     "access_count": 6, "stability": 0.7},
    {"status": "forgotten", "forgotten_at": now - timedelta(days=60)},
]
rng = random.Random(6)
def word():
    return "".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(4))
made = Memory.objects.bulk_create(
    [
        Memory(namespace=swept, content=" ".join(word() for _ in range(6)), topic=f"t{n % 4}",
               **kinds[n % 6])
        for n in range(COUNT)
    ]
)
# Kept and promoted ones were written two days ago: the digests have ended days to build.
Memory.objects.filter(pk__in=[m.pk for n, m in enumerate(made) if n % 6 in (1, 2)]).update(
    created_at=now - timedelta(days=2)
)
call_command("setup_schedules")
print(json.dumps({"a": [a.pk, a_secret], "b": [b.pk, b_secret]}))
""".replace("COUNT", str(SWEPT))
SWEPT_EVENTS = {"forgotten": SWEPT // 6, "promoted": 2 * SWEPT // 6, "cold": SWEPT // 6}
SWEPT_EVENTS["purged"] = SWEPT // 6
SWEPT_WEBHOOKS = {"memory.forgotten": SWEPT // 6, "memory.promoted": 2 * SWEPT // 6}
SWEPT_WEBHOOKS["memory.purged"] = SWEPT // 6

# Another machine's scheduler: enqueues through the broker what it is told to, by name.
FEEDER = """
import sys
from django_q.tasks import async_task
from config.queue import Q_OPTIONS
TASKS = {
    "all": [
        "memories.tasks.decay_sweep",
        "memories.tasks.consolidation_digests",
        "memories.tasks.webhooks_retry",
        "review.tasks.simulated_recall",
        "review.tasks.review_due_webhooks",
    ],
    "retry": ["memories.tasks.webhooks_retry"],
}
for line in sys.stdin:
    ids = [async_task(func, q_options=dict(Q_OPTIONS)) for func in TASKS[line.strip()]]
    print(" ".join(ids), flush=True)
"""

PROCESSING = re.compile(r"processing (\S+) '")
FINISHED = re.compile(r"(?:Processed|Failed) '[^']*' \((\S+)\)")
FAILED = re.compile(r"Failed '[^']*' \((\S+)\)")
CREATED_FROM_SCHEDULE = re.compile(r"created task (\S+) from schedule \[([^\]]+)\]")


# --- The processes ----------------------------------------------------------------------


def _stop_group(process: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
    """Stop a process started with start_new_session: `sig`, then SIGKILL to its group."""
    if process.poll() is None:
        process.send_signal(sig)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=timeout)
    with suppress(ProcessLookupError):  # whatever the leader left behind in its group
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


class Feeder:
    """Another machine's scheduler: a `manage.py shell` that enqueues tasks per stdin line
    and prints the ids of the tasks it queued."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.log = log
        self.ids: list[str] = []
        with log.open("a") as err:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "shell", "--no-imports", "-c", FEEDER],
                cwd=ROOT,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                start_new_session=True,
            )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.ids.extend(line.split())

    def send(self, what: str) -> None:
        if self.process.poll() is not None:
            pytest.fail(f"a feeder exited:\n{self.log.read_text()[-3000:]}")
        assert self.process.stdin is not None
        self.process.stdin.write(what + "\n")
        self.process.stdin.flush()

    def stop(self) -> None:
        if self.process.stdin and not self.process.stdin.closed:
            with suppress(BrokenPipeError):
                self.process.stdin.close()  # its loop ends, the shell exits
        with suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=30)
        _stop_group(self.process)
        self.reader.join(timeout=5)


def _quoted(ids: list[str]) -> str:
    """Task ids (hex, from the feeders) as an SQL list."""
    assert all(re.fullmatch(r"[0-9a-f]+", i) for i in ids)
    return ", ".join(f"'{i}'" for i in ids)


def _log_names(log: Path, pattern: re.Pattern[str]) -> list[str]:
    return pattern.findall(log.read_text()) if log.exists() else []


@pytest.fixture
def redis_db() -> Iterator[Any]:
    """Redis database 7, empty; skipped when no Redis answers on 127.0.0.1:6379."""
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_timeout=5)
    try:
        client.flushdb()
    except redis.RedisError as error:
        pytest.skip(f"Redis is not answering on 127.0.0.1:6379 ({error})")
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    """Stops every process the test started, in reverse order, pass or fail."""
    with ExitStack() as exits:
        yield exits


# --- The client side --------------------------------------------------------------------


class Api:
    """Both servers, one pooled HTTP client each; counts requests per token and records
    every answer that is not the expected one (nothing is retried)."""

    def __init__(self, servers: list[Gunicorn], secrets: dict[str, str]) -> None:
        logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
        # gunicorn closes a connection idle for --keep-alive (2 s by default, uvicorn's
        # timeout_keep_alive); httpx keeps idle ones 5 s. A request sent on a connection
        # the server is closing at that moment is reset (it happened, 1 run in 2): the
        # client lets go first, as a load balancer in front of gunicorn must.
        limits = httpx.Limits(keepalive_expiry=1.0)
        self.clients = [
            httpx.Client(base_url=f"{s.url}/api/v1", timeout=60, limits=limits) for s in servers
        ]
        self.secrets = secrets
        self.sent: Counter[str] = Counter()
        self.per_server: Counter[int] = Counter()
        self.problems: list[str] = []
        self.lock = threading.Lock()

    def call(
        self,
        side: int,
        token: str,
        method: str,
        path: str,
        body: Any = None,
        *,
        expect: tuple[int, ...],
        content: bytes | None = None,
        content_type: str = "application/json",
    ) -> httpx.Response | None:
        server = side % len(self.clients)
        headers = {"Authorization": f"Bearer {self.secrets[token]}"}
        if body is not None or content is not None:
            headers["Content-Type"] = content_type
        data = content if content is not None else None if body is None else json.dumps(body)
        with self.lock:
            self.sent[token] += 1
            self.per_server[server] += 1
        try:
            response = self.clients[server].request(method, path, content=data, headers=headers)
        except httpx.HTTPError as error:
            self.problem(f"{method} {path} on server {server}: {error!r}")
            return None
        if response.status_code not in expect:
            self.problem(
                f"{method} {path} on server {server}: {response.status_code} "
                f"(expected {expect}) {response.text[:300]}"
            )
            return None
        return response

    def problem(self, text: str) -> None:
        with self.lock:
            self.problems.append(text)

    def close(self) -> None:
        for client in self.clients:
            client.close()


class Words:
    """Made-up words, never twice: texts that share no words are not near-duplicates."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seen: set[str] = set()

    def word(self) -> str:
        while True:
            made = "".join(
                self.rng.choice("bdfgklmnprstvz") + self.rng.choice("aeiou") for _ in range(4)
            )
            if made not in self.seen:
                self.seen.add(made)
                return made

    def text(self, count: int = 6) -> str:
        return " ".join(self.word() for _ in range(count)).capitalize() + "."


def _at_once(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls in threads released together (one request to each server at once)."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        barrier.wait()
        results[index] = calls[index]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _import_file(k: int, words: Words) -> bytes:
    lines: list[dict[str, Any]] = [
        {"type": "header", "format": "engram-export", "version": 1, "namespace": {}}
    ]
    for n in range(IMPORT_LINES):
        text = f"import{k} line{n} " + " ".join(words.word() for _ in range(18))
        lines.append({"type": "memory", "id": n + 1, "content": text})
    lines.append({"type": "end", "lines": len(lines) + 1})
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    assert len(body) > MAX_BODY  # a job for the worker, not the request
    return body


# --- The test ---------------------------------------------------------------------------


def test_two_servers_and_two_clusters_lose_nothing_and_do_nothing_twice(
    make_database,  # noqa: F811
    stack,
    tmp_path,
    request,
):
    started = time.monotonic()
    redis_db = request.getfixturevalue("redis_db") if BROKER == "redis" else None
    database = make_database("scale")
    env = _env(
        database,
        Q_WORKERS=2,
        API_MAX_BODY_BYTES=MAX_BODY,
        API_RATE_LIMIT="1000000/day",  # the counters are checked, not the limit
        WEBHOOK_ALLOW_LOOPBACK="true",
        WEBHOOK_BACKOFF_SECONDS=1,
        WEBHOOK_MAX_ATTEMPTS=WEBHOOK_MAX_ATTEMPTS,
        WEBHOOK_RETRY_INTERVAL_MINUTES=30,  # every schedule is due once during the test
    )
    if redis_db is None:
        env.pop("REDIS_URL", None)
    else:
        env["REDIS_URL"] = REDIS_URL

    def queued() -> int:
        if redis_db is None:
            return database.scalar("SELECT count(*) FROM django_q_ormq")  # until acknowledged
        return redis_db.llen(QUEUE_KEY)

    def throttle_counts() -> Counter[int]:
        """The throttle's counters in the shared cache, summed per token over windows."""
        if redis_db is None:
            found = [
                (key, pickle.loads(base64.b64decode(value)))
                for key, value in database.query(
                    "SELECT cache_key, value FROM engram_cache "
                    f"WHERE cache_key LIKE '{THROTTLE_KEYS}%'"
                )
            ]
        else:
            found = [
                (key.decode(), int(redis_db.get(key)))
                for key in redis_db.scan_iter(match=f"{THROTTLE_KEYS}*")
            ]
        counts: Counter[int] = Counter()
        for key, value in found:
            counts[int(key.removeprefix(THROTTLE_KEYS).split("_")[0])] += value
        return counts

    receiver = Receiver(codes=list(WEBHOOK_CODES))
    server = serve(receiver)
    stack.callback(server.server_close)
    stack.callback(server.shutdown)

    manage(env, "migrate", "--no-input")
    if redis_db is None:
        manage(env, "createcachetable")
    # The clusters first: their schedulers' first pass, 30 s on, sets the test's length.
    logs = [tmp_path / "cluster-0.log", tmp_path / "cluster-1.log"]
    clusters = [Cluster(env, log) for log in logs]
    clusters_started = time.monotonic()
    for cluster in clusters:
        stack.callback(_stop_group, cluster.process)
    seeded = json.loads(manage(env, "shell", "--no-imports", "-c", SEED).splitlines()[-1])
    token_pks = {name: pk for name, (pk, _) in seeded.items()}
    secrets = {name: secret for name, (_, secret) in seeded.items()}
    schedules = {row[0] for row in database.query("SELECT name FROM django_q_schedule")}
    servers: list[Gunicorn | None] = [None, None]
    failures: list[BaseException] = []

    def start_server(i: int) -> None:
        try:
            servers[i] = Gunicorn(env, tmp_path / f"gunicorn-{i}.log", workers=2)
        except BaseException as error:  # pytest.fail in the server's wait: raised below
            failures.append(error)

    _at_once(lambda: start_server(0), lambda: start_server(1))
    web_servers: list[Gunicorn] = [s for s in servers if s is not None]
    for web in web_servers:
        stack.callback(web.stop)
    if failures:
        raise failures[0]
    feeders = [Feeder(env, tmp_path / f"feeder-{i}.log") for i in range(2)]
    for feeder in feeders:
        stack.callback(feeder.stop)
    api = Api(web_servers, secrets)
    stack.callback(api.close)

    # --- Setup over the API: two subscriptions, the hot memories, the cards -------------
    words = Words(20)
    for side, (token, slug) in enumerate([("a", "load"), ("b", "swept")]):
        answer = api.call(
            side,
            token,
            "POST",
            f"/namespaces/{slug}/webhooks",
            {"url": receiver.url},
            expect=(201,),
        )
        assert answer is not None, api.problems
    hot_words = [words.word() for _ in range(HOT)]
    hot_ids: list[int] = []
    for j, keyword in enumerate(hot_words):
        text = f"{keyword.capitalize()} {words.text(5)}"
        answer = api.call(
            j, "a", "POST", "/memories", {"namespace": "hot", "content": text}, expect=(201,)
        )
        assert answer is not None, api.problems
        hot_ids.append(answer.json()["id"])
    answer = api.call(
        1,
        "b",
        "POST",
        "/memories/bulk",
        {"memories": [{"namespace": "cards", "content": words.text()} for _ in range(CARDS)]},
        expect=(201,),
    )
    assert answer is not None, api.problems
    card_memories = [item["id"] for item in answer.json()]
    card_of = dict(
        database.query(
            "SELECT memory_id, id FROM review_card WHERE memory_id IN "
            f"({', '.join(map(str, card_memories))})"
        )
    )
    assert len(card_of) == CARDS

    # --- The load -------------------------------------------------------------------------
    lock = threading.Lock()
    created: list[int] = []  # load memories made by single and bulk creates
    exact_answers: list[list[tuple[int, int, bool]]] = []
    near_pairs: list[tuple[int, int]] = []
    imports: list[dict[str, Any]] = []
    direct_hits: Counter[int] = Counter()
    all_hits: Counter[int] = Counter()
    recalls_done: list[int] = []

    def create(side: int, text: str, expect=(201,)) -> dict[str, Any] | None:
        answer = api.call(
            side, "a", "POST", "/memories", {"namespace": "load", "content": text}, expect=expect
        )
        return None if answer is None else answer.json()

    def single(side: int, text: str) -> None:
        body = create(side, text)
        if body is not None:
            with lock:
                created.append(body["id"])

    def near_pair(a: str, b: str) -> None:
        first, second = _at_once(lambda: create(0, a), lambda: create(1, b))
        if first and second:
            with lock:
                created.extend([first["id"], second["id"]])
                near_pairs.append((first["id"], second["id"]))

    def exact_pair(text: str) -> None:
        both = _at_once(
            lambda: api.call(
                0,
                "a",
                "POST",
                "/memories",
                {"namespace": "load", "content": text},
                expect=(200, 201),
            ),
            lambda: api.call(
                1,
                "a",
                "POST",
                "/memories",
                {"namespace": "load", "content": text},
                expect=(200, 201),
            ),
        )
        if all(both):
            answers = [(r.status_code, r.json()["id"], r.json()["deduplicated"]) for r in both]
            with lock:
                exact_answers.append(answers)
                created.extend({pk for _, pk, _ in answers})

    def bulk(side: int, texts: list[str]) -> None:
        items = [{"namespace": "load", "content": text} for text in texts]
        answer = api.call(side, "a", "POST", "/memories/bulk", {"memories": items}, expect=(201,))
        if answer is not None:
            with lock:
                created.extend(item["id"] for item in answer.json())

    def import_job(side: int, k: int, body: bytes) -> None:
        answer = api.call(
            side,
            "a",
            "POST",
            "/namespaces/load/import",
            content=body,
            content_type="application/x-ndjson",
            expect=(202,),
        )
        if answer is None:
            return
        job = answer.json()["job"]
        deadline = time.monotonic() + 120
        poll = side + 1
        while time.monotonic() < deadline:
            state = api.call(poll, "a", "GET", f"/namespaces/load/import/{job}", expect=(200,))
            poll += 1
            if state is None:
                return
            if state.json()["status"] != "running":
                with lock:
                    imports.append({"k": k, "job": job, **state.json()})
                return
            time.sleep(0.5)
        api.problem(f"import job {job} still running after 120 s")

    def touch(side: int, token: str, memory_id: int) -> None:
        api.call(side, token, "POST", f"/memories/{memory_id}/touch", {}, expect=(200,))

    def recall(side: int, keyword: str) -> None:
        body = {"query": keyword, "namespaces": ["hot"], "limit": 3}
        answer = api.call(side, "a", "POST", "/recall", body, expect=(200,))
        if answer is None:
            return
        results = [r for r in answer.json()["results"] if r.get("kind") == "memory"]
        with lock:
            recalls_done.append(1)
            for result in results:
                all_hits[result["memory_id"]] += 1
                if not result["associative"]:
                    direct_hits[result["memory_id"]] += 1

    def grade_card(side: int, card: int) -> None:
        version = 0
        for g in range(GRADES):
            answer = api.call(
                side + g,
                "b",
                "POST",
                f"/review/cards/{card}/grade",
                {"grade": ["good", "easy"][g % 2], "version": version},
                expect=(201,),
            )
            if answer is None:
                return
            version = answer.json()["state_after"]["version"]

    jobs: list[Callable[[], None]] = []
    for i in range(SINGLES):
        jobs.append(partial(single, i, words.text()))
    for _ in range(NEAR_PAIRS):
        core = " ".join(words.word() for _ in range(5))
        jobs.append(partial(near_pair, f"User {core} keeps.", f"The user {core} keeps."))
    for _ in range(EXACT_PAIRS):
        jobs.append(partial(exact_pair, words.text()))
    for k in range(BULKS):
        jobs.append(partial(bulk, k, [words.text() for _ in range(BULK_SIZE)]))
    for k in range(IMPORTS):
        jobs.append(partial(import_job, k, k, _import_file(k, words)))
    for j, memory_id in enumerate(hot_ids):
        jobs.extend(partial(touch, j + t, "a", memory_id) for t in range(TOUCHES))
        jobs.extend(partial(recall, j + r + 1, hot_words[j]) for r in range(RECALLS))
    for c, memory_id in enumerate(card_memories):
        jobs.append(partial(grade_card, c, card_of[memory_id]))
        jobs.extend(partial(touch, c + t + 1, "b", memory_id) for t in range(CARD_TOUCHES))
    random.Random(7).shuffle(jobs)

    def guarded(job: Callable[[], None]) -> None:
        try:
            job()
        except Exception as error:  # recorded, so the test fails with every problem listed
            api.problem(f"a load job raised {error!r}")

    load_done = threading.Event()

    def ticker() -> None:
        while not load_done.is_set():
            for feeder in feeders:  # both sides at the same moment
                feeder.send("all")
            load_done.wait(TICK_SECONDS)

    ticking = threading.Thread(target=ticker, daemon=True)
    load_started = time.monotonic()
    ticking.start()
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(guarded, jobs))
    load_done.set()
    ticking.join(timeout=30)
    load_seconds = time.monotonic() - load_started
    assert not api.problems, "\n".join(api.problems[:20])

    # --- Let everything settle: queue empty, every task done, every webhook delivered ----
    namespace_ids = dict(database.query("SELECT slug, id FROM memories_namespace"))
    api_namespaces = ", ".join(str(namespace_ids[slug]) for slug in ("load", "hot", "cards"))

    def unsettled() -> list[str]:
        waiting = []
        if queued():
            waiting.append(f"{queued()} tasks queued")
        for log in logs:
            running = Counter(_log_names(log, PROCESSING)) - Counter(_log_names(log, FINISHED))
            if running:
                waiting.append(f"{log.name}: running {sorted(running)}")
        if database.scalar("SELECT count(*) FROM memories_backgroundrun WHERE status = 'running'"):
            waiting.append("a run is running")
        pending = database.scalar(
            "SELECT count(*) FROM memories_webhookdelivery WHERE status <> 'delivered'"
        )
        if pending:
            waiting.append(f"{pending} deliveries pending")
        unsketched = database.scalar(
            "SELECT count(*) FROM memories_memory m WHERE m.namespace_id IN "
            f"({api_namespaces}) AND NOT EXISTS "
            "(SELECT 1 FROM memories_memorysketch s WHERE s.memory_id = m.id)"
        )
        if unsketched:
            waiting.append(f"{unsketched} memories not yet compared")
        fired = {
            row[0]
            for row in database.query(
                'SELECT "group" FROM django_q_task WHERE "group" LIKE \'engram: %\''
            )
        }
        if not schedules <= fired:
            waiting.append(f"schedules not yet fired: {sorted(schedules - fired)}")
        if time.monotonic() - clusters_started < SCHEDULER_PASS_SECONDS:
            waiting.append("both clusters' first scheduler pass")
        enqueued = [i for feeder in feeders for i in feeder.ids]
        if not enqueued:
            waiting.append("the feeders' task ids")
        elif (
            done := database.scalar(
                f"SELECT count(*) FROM django_q_task WHERE id IN ({_quoted(enqueued)})"
            )
        ) != len(enqueued):
            waiting.append(f"{len(enqueued) - done} enqueued tasks not done")
        return waiting

    deadline = time.monotonic() + 150
    calm = 0
    last_retry = 0.0
    while calm < 2:
        if time.monotonic() > deadline:
            pytest.fail(f"never settled: {unsettled()}\n{clusters[0].tail()}")
        for cluster in clusters:
            if cluster.process.poll() is not None:
                pytest.fail(f"a cluster exited:\n{cluster.tail()}")
        waiting = unsettled()
        calm = 0 if waiting else calm + 1
        if any("deliveries pending" in w for w in waiting) and time.monotonic() - last_retry > 2:
            feeders[0].send("retry")  # as the retry schedule would
            last_retry = time.monotonic()
        time.sleep(1)
    settled_seconds = time.monotonic() - load_started

    # --- A namespace taken from a token reaches both servers on their next request -------
    # Each web process keeps the namespaces a token named (memories/token_cache.py) under
    # the token's generation; a third process takes namespace "cards" from token b.
    for side in (0, 1):
        listed = api.call(side, "b", "GET", "/memories?namespace=cards", expect=(200,))
        assert listed is not None, api.problems
    manage(
        env,
        "shell",
        "--no-imports",
        "-c",
        "from memories.models import ApiToken, Namespace; "
        "ApiToken.objects.get(name='b').namespaces.remove(Namespace.objects.get(slug='cards'))",
    )
    for side in (0, 1):
        refused = api.call(side, "b", "GET", "/memories?namespace=cards", expect=(400,))
        assert refused is not None, api.problems
        assert refused.json()["error"]["fields"] == {"namespace": ["No such namespace."]}

    # --- A revocation reaches both servers on their next request ------------------------
    # With Redis both hold token a in the token cache (memories/token_cache.py) by now; a
    # third process (an administrator on another machine) revokes it.
    for side in (0, 1):
        assert api.call(side, "a", "GET", "/memories", expect=(200,)) is not None, api.problems
    if redis_db is not None:
        assert list(redis_db.scan_iter(match="*engram:token:*")), "the token cache is unused"
    manage(
        env,
        "shell",
        "--no-imports",
        "-c",
        "from memories import services; from memories.models import ApiToken; "
        "services.token_revoke(token=ApiToken.objects.get(name='a'))",
    )
    for client in api.clients:  # not counted: a refused token is not throttled
        answer = client.get("/memories", headers={"Authorization": f"Bearer {secrets['a']}"})
        assert answer.status_code == 401, answer.text
        assert answer.json()["error"]["message"] == "This token has been revoked."

    # --- Stop everything, then read what it left -----------------------------------------
    for feeder in feeders:
        feeder.stop()
    for web in web_servers:
        web.stop()
    for cluster in clusters:
        cluster.stop()
        assert "has stopped" in cluster.tail()
    throttle = throttle_counts()
    server.shutdown()

    def rows(sql: str) -> list[tuple]:
        return database.query(sql)

    load_id, hot_id, cards_id, swept_id = (
        namespace_ids[s] for s in ("load", "hot", "cards", "swept")
    )

    # Requests: spread over both servers, and every one counted once by the shared throttle.
    assert min(api.per_server.values()) > 0.4 * sum(api.per_server.values())
    assert throttle == Counter({token_pks[name]: n for name, n in api.sent.items()}), (
        throttle,
        api.sent,
    )

    # Memories: exactly what was sent.
    assert len(imports) == IMPORTS
    for job in imports:
        assert job["status"] == "ok", job
        assert job["counts"]["memory"] == IMPORT_LINES, job["counts"]
    imported = dict(
        rows(
            "SELECT substring(content from '^import[0-9]+'), count(*) FROM memories_memory "
            f"WHERE namespace_id = {load_id} AND content LIKE 'import%' GROUP BY 1"
        )
    )
    assert imported == {f"import{k}": IMPORT_LINES for k in range(IMPORTS)}
    sent_texts = SINGLES + 2 * NEAR_PAIRS + EXACT_PAIRS + BULKS * BULK_SIZE
    assert len(created) == len(set(created)) == sent_texts
    load_count = database.scalar(
        f"SELECT count(*) FROM memories_memory WHERE namespace_id = {load_id}"
    )
    assert load_count == sent_texts + IMPORTS * IMPORT_LINES
    for answers in exact_answers:  # one text sent to both servers at once: stored once
        assert sorted((code, dedup) for code, _, dedup in answers) == [(200, True), (201, False)]
        assert answers[0][1] == answers[1][1]
    assert len(exact_answers) == EXACT_PAIRS
    exact_ids = ", ".join(str(a[0][1]) for a in exact_answers)
    assert rows(f"SELECT DISTINCT use_count FROM memories_memory WHERE id IN ({exact_ids})") == [
        (1,)
    ]

    # Near-duplicates written at once on two servers, compared on two clusters: linked once.
    links = rows(
        "SELECT source_id, target_id FROM memories_association WHERE kind = 'near_duplicate'"
    )
    unordered = Counter(frozenset(link) for link in links)
    assert max(unordered.values(), default=1) == 1, "a pair linked twice"
    for pair in near_pairs:
        assert unordered[frozenset(pair)] == 1, (pair, links)

    # Counters: every touch, recall and grade counted, once.
    assert len(recalls_done) == HOT * RECALLS
    assert database.scalar("SELECT count(*) FROM recall_recallevent") == HOT * RECALLS
    counters = {
        pk: (uses, recalls, accesses)
        for pk, uses, recalls, accesses in rows(
            "SELECT id, use_count, recall_count, access_count FROM memories_memory "
            f"WHERE namespace_id = {hot_id}"
        )
    }
    assert counters == {
        pk: (TOUCHES + direct_hits[pk], all_hits[pk], all_hits[pk]) for pk in hot_ids
    }
    assert sum(direct_hits.values()) >= HOT * RECALLS  # each recall found its memory
    cards = {
        card: (version, total, logs, uses)
        for card, version, total, logs, uses in rows(
            "SELECT c.id, c.version, c.total_reviews, "
            "(SELECT count(*) FROM review_reviewlog l WHERE l.card_id = c.id), m.use_count "
            "FROM review_card c JOIN memories_memory m ON m.id = c.memory_id "
            f"WHERE c.namespace_id = {cards_id}"
        )
    }
    # Passing grades by a person are uses too (AUTO_REINFORCE).
    assert cards == {
        card: (GRADES, GRADES, GRADES, GRADES + CARD_TOUCHES) for card in card_of.values()
    }
    # Every card (the simulated worker's too): one version step and one log per grade.
    assert (
        rows(
            "SELECT c.id FROM review_card c WHERE c.version <> c.total_reviews OR c.version <> "
            "(SELECT count(*) FROM review_reviewlog l WHERE l.card_id = c.id)"
        )
        == []
    )
    # The use log: use n of a memory saw use_count n, for every n, once.
    uses: dict[int, list[int]] = defaultdict(list)
    for ref, count in rows(
        "SELECT memory_ref, use_count FROM memories_memoryuse "
        f"WHERE namespace_id IN ({hot_id}, {cards_id}) ORDER BY use_count"
    ):
        uses[ref].append(count)
    expected_uses = {pk: counters[pk][0] for pk in hot_ids}
    expected_uses.update({pk: GRADES + CARD_TOUCHES for pk in card_memories})
    assert {ref: seen for ref, seen in uses.items()} == {
        pk: list(range(1, n + 1)) for pk, n in expected_uses.items()
    }

    # Tasks: each ran once, on one of the clusters, and both clusters worked.
    processed = [Counter(_log_names(log, PROCESSING)) for log in logs]
    total = processed[0] + processed[1]
    assert all(processed), "a cluster ran nothing"
    assert [name for name, n in total.items() if n > 1] == []
    assert not any(_log_names(log, FAILED) for log in logs), [c.tail() for c in clusters]
    enqueued = [i for feeder in feeders for i in feeder.ids]
    assert len(enqueued) == len(set(enqueued))
    assert database.scalar(
        f"SELECT count(*) FROM django_q_task WHERE success AND id IN ({_quoted(enqueued)})"
    ) == len(enqueued)
    assert database.scalar("SELECT count(*) FROM django_q_task WHERE success") < 1000  # unpruned
    assert (
        rows(
            "SELECT task_id, count(*) FROM memories_backgroundrun WHERE task_id <> '' "
            "GROUP BY task_id HAVING count(*) > 1"
        )
        == []
    )
    assert rows("SELECT kind, status, error FROM memories_backgroundrun WHERE status <> 'ok'") == []
    runs = Counter(dict(rows("SELECT kind, count(*) FROM memories_backgroundrun GROUP BY kind")))
    assert runs["sweep"] > 2 and runs["digests"] > 2 and runs["import"] == IMPORTS
    # Each due schedule made one task, though both clusters' schedulers looked at it.
    fired = Counter(
        dict(
            rows(
                'SELECT "group", count(*) FROM django_q_task '
                "WHERE \"group\" LIKE 'engram: %' GROUP BY 1"
            )
        )
    )
    assert fired == Counter(dict.fromkeys(schedules, 1))
    from_schedules = [
        schedule for log in logs for _, schedule in CREATED_FROM_SCHEDULE.findall(log.read_text())
    ]
    assert sorted(from_schedules) == sorted(schedules)

    # The sweeps' history: one event per memory and rule, however many sweeps ran at once.
    assert (
        rows(
            "SELECT memory_ref, kind, count(*) FROM memories_memoryevent WHERE source = 'sweep' "
            "GROUP BY 1, 2 HAVING count(*) > 1"
        )
        == []
    )
    swept = dict(
        rows(
            "SELECT kind, count(*) FROM memories_memoryevent WHERE source = 'sweep' "
            f"AND namespace_id = {swept_id} GROUP BY kind"
        )
    )
    assert swept == SWEPT_EVENTS
    # Digests: each made once (what the runs say they created, less what they deleted).
    digests = rows("SELECT counts FROM memories_backgroundrun WHERE kind = 'digests'")
    made = sum(c["created"] - c["deleted"] for (c,) in digests)
    assert made == database.scalar("SELECT count(*) FROM memories_consolidation") > 0

    # Webhooks: each received once, or once more after each 500; never past the attempts.
    answered = WEBHOOK_CODES + [200] * len(receiver.requests)
    received: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    for request, code in zip(receiver.requests, answered, strict=False):
        received[request.webhook_id] += 1
        failed[request.webhook_id] += code != 200
    assert {w: n for w, n in received.items() if n != failed[w] + 1} == {}
    assert max(received.values()) <= WEBHOOK_MAX_ATTEMPTS
    assert sum(failed.values()) == WEBHOOK_CODES.count(500)
    deliveries = {
        webhook_id: (status, attempts)
        for webhook_id, status, attempts in rows(
            "SELECT webhook_id, status, attempts FROM memories_webhookdelivery"
        )
    }
    assert deliveries == {w: ("delivered", n) for w, n in received.items()}
    events = [r.payload for r in receiver.unique().values()]
    created_hooks = Counter(
        e["data"]["memory"]["id"]
        for e in events
        if e["type"] == "memory.created" and e["data"]["namespace"]["slug"] == "load"
    )
    assert created_hooks == Counter(dict.fromkeys(created, 1))  # imports announce nothing
    swept_hooks = Counter(
        e["type"]
        for e in events
        if e["data"]["namespace"]["slug"] == "swept" and e["type"] in SWEPT_WEBHOOKS
    )
    assert swept_hooks == SWEPT_WEBHOOKS

    wall = time.monotonic() - started
    print(
        f"\nscale-out: {sum(api.sent.values())} requests ({dict(api.per_server)} per server) "
        f"in {load_seconds:.1f} s of load, settled at {settled_seconds:.1f} s; tasks "
        f"{sum(processed[0].values())} + {sum(processed[1].values())} per cluster; runs "
        f"{dict(runs)}; webhooks {len(receiver.requests)} requests, {len(received)} ids; "
        f"{wall:.1f} s in all"
    )
