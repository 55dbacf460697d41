"""Time the decay sweep and the simulated worker's due-card selection on N memories.

    DATABASE_URL=postgres://.../bg_bench manage.py migrate
    DATABASE_URL=postgres://.../bg_bench manage.py bench_background --size 1000000

The synthetic memories are built once with bulk INSERT ... SELECT and kept (in their own
user's namespaces) for the next run. Every timed sweep runs at the same virtual `now`
(the dataset's epoch), on a settled dataset where nothing is due to change except a
`--churn` slice of rows (1% by default) reset before each run so that, in equal parts,
they will be forgotten, promoted, moved to cold storage, archived, made core or purged.
So each run scans every memory and changes about churn x N of them, as a sweep of a
steady system does; the first sweep after a build (which settles the random data) is
reported separately. docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import json
import statistics
import time
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.utils import timezone

from memories.models import Memory, MemoryEvent, Namespace
from memories.sweep import SweepConfig, sweep_run
from review.models import Card, ReviewLog
from review.selectors import review_queue

BENCH_USER = "engram-bench-background"
# (slug, mode, decay model); memory i goes to namespace NAMESPACE_OF[i % 6].
NAMESPACES = [
    ("bench-agent", Namespace.Mode.AGENT_MEMORY, "exponential"),
    ("bench-exponential", Namespace.Mode.PERSONAL, "exponential"),
    ("bench-power-law", Namespace.Mode.PERSONAL, "power_law"),
    ("bench-two-component", Namespace.Mode.PERSONAL, "two_component"),
]
NAMESPACE_OF = [0, 0, 0, 1, 2, 3]  # half of the memories are the agent's, with cards
CHURN_GROUPS = 6  # forget, promote, cold, archive, core, purge


def _qn(name: str) -> str:
    return connection.ops.quote_name(name)


def _series(first: int, last: int) -> tuple[str, list[Any]]:
    if connection.vendor == "postgresql":
        return "generate_series(%s, %s) AS g(i)", [first, last]
    return (
        "(WITH RECURSIVE g(i) AS (SELECT %s UNION ALL SELECT i + 1 FROM g WHERE i < %s) "
        "SELECT i FROM g) AS g",
        [first, last],
    )


def _minus_days(base: str, days_sql: str) -> str:
    """SQL for the timestamp `base` minus a number of days given as SQL."""
    if connection.vendor == "postgresql":
        return f"({base}::timestamptz - ({days_sql}) * interval '1 day')"
    return f"strftime('%%Y-%%m-%%d %%H:%%M:%%f', {base}, '-' || ({days_sql}) || ' days')"


def _db_time(value: datetime) -> Any:
    return connection.ops.adapt_datetimefield_value(value)


class Command(BaseCommand):
    help = "Build (once) N synthetic memories and time the decay sweep and the due-card query."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--size", type=int, default=100_000, help="Memories (default 100k).")
        parser.add_argument("--runs", type=int, default=3, help="Timed sweeps (default 3).")
        parser.add_argument(
            "--churn", type=float, default=0.01, help="Share of rows a sweep changes (0.01)."
        )
        parser.add_argument("--batch-size", type=int, default=None, help="SWEEP_BATCH_SIZE.")
        parser.add_argument("--queue-runs", type=int, default=50, help="Timed due-card queries.")
        parser.add_argument("--queue-limit", type=int, default=None, help="Cards per run.")
        parser.add_argument("--rebuild", action="store_true", help="Drop the dataset first.")
        parser.add_argument("--drop", action="store_true", help="Drop the dataset and stop.")
        parser.add_argument("--explain", action="store_true", help="Print one batch's plan.")
        parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")

    def handle(self, *args, **options) -> None:
        from django.conf import settings

        if options["churn"] <= 0 or options["churn"] > 1:
            raise CommandError("--churn must be in (0, 1].")
        if options["drop"] or options["rebuild"]:
            self._drop()
            if options["drop"]:
                self.stdout.write("Dropped the benchmark dataset.")
                return
        size = options["size"]
        started = time.perf_counter()
        namespaces, epoch, state = self._dataset(size)
        build_seconds = time.perf_counter() - started
        config = SweepConfig.from_settings(
            batch_size=options["batch_size"] or settings.SWEEP_BATCH_SIZE
        )
        figures: dict[str, Any] = {
            "vendor": connection.vendor,
            "memories": self._count(namespaces),
            "build_seconds": round(build_seconds, 1),
            "batch_size": config.batch_size,
            "churn": options["churn"],
        }
        if not state.get("settled"):
            self._vacuum()
            report = sweep_run(now=epoch, config=config)
            figures["settling_sweep"] = {
                "seconds": round(report.duration_seconds, 2),
                **{k: v for k, v in report.counts().items() if k != "duration_seconds"},
            }
            state["settled"] = True
            self._save_state(namespaces[0], state)
            self._vacuum()
        if options["explain"]:
            self.stdout.write(self._explain(epoch, config))

        sweeps = []
        for _ in range(options["runs"]):
            expected = self._churn(namespaces, epoch, options["churn"], state)
            report = sweep_run(now=epoch, config=config)
            sweeps.append(report)
            changed = report.changed + report.purged
            if changed != expected:
                self.stderr.write(f"note: {changed} rows changed, {expected} prepared")
            self._top_up(namespaces, size, epoch)
        times = [r.duration_seconds for r in sweeps]
        if sweeps:
            last = sweeps[-1]
            figures["sweep"] = {
                "runs": len(times),
                "median_seconds": round(statistics.median(times), 2),
                "min_seconds": round(min(times), 2),
                "max_seconds": round(max(times), 2),
                "examined": last.examined,
                "batches": last.batches,
                "changed_per_run": last.changed + last.purged,
                **{
                    k: last.counts()[k]
                    for k in ("core", "promoted", "forgotten", "cold", "archived", "purged")
                },
            }
            dry = sweep_run(now=epoch, config=config, dry_run=True)
            figures["dry_run_seconds"] = round(dry.duration_seconds, 2)

        figures["due_cards"] = self._bench_queue(
            namespaces[0],
            epoch,
            runs=options["queue_runs"],
            limit=options["queue_limit"] or settings.SIMULATED_RECALL_BATCH,
        )
        figures["worker_run"] = self._bench_worker(namespaces[0], epoch)
        if options["json"]:
            self.stdout.write(json.dumps(figures, indent=2))
            return
        for key, value in figures.items():
            self.stdout.write(f"{key}: {value}")

    # --- Dataset ---------------------------------------------------------------------

    def _owner(self):
        owner, _ = get_user_model().objects.get_or_create(username=BENCH_USER)
        return owner

    def _namespaces(self) -> list[Namespace]:
        owner = self._owner()
        found = {ns.slug: ns for ns in Namespace.objects.filter(owner=owner)}
        result = []
        for slug, mode, model in NAMESPACES:
            ns = found.get(slug)
            if ns is None:
                ns = Namespace.objects.create(
                    owner=owner, name=slug, slug=slug, mode=mode, decay_model=model
                )
            result.append(ns)
        return result

    @staticmethod
    def _state(ns: Namespace) -> dict[str, Any]:
        try:
            return json.loads(ns.description or "{}")
        except ValueError:
            return {}

    @staticmethod
    def _save_state(ns: Namespace, state: dict[str, Any]) -> None:
        ns.description = json.dumps(state)
        Namespace.objects.filter(pk=ns.pk).update(description=ns.description)

    def _count(self, namespaces: list[Namespace]) -> int:
        return Memory.objects.filter(namespace__in=namespaces).count()

    def _dataset(self, size: int) -> tuple[list[Namespace], datetime, dict[str, Any]]:
        namespaces = self._namespaces()
        state = self._state(namespaces[0])
        if "epoch" not in state:
            state = {"epoch": timezone.now().isoformat(), "runs": 0, "next_i": 0}
            self._save_state(namespaces[0], state)
        epoch = datetime.fromisoformat(state["epoch"])
        have = self._count(namespaces)
        if have < size:
            self.stderr.write(f"Building {size - have} memories ...")
            self._insert(namespaces, state, size - have, epoch)
            self._save_state(namespaces[0], state)
            self._vacuum()
        return namespaces, epoch, state

    def _insert(
        self, namespaces: list[Namespace], state: dict[str, Any], count: int, epoch: datetime
    ) -> None:
        """count more memories (i continues from the last build), cards for the agent's."""
        first = state.get("next_i", 0)
        last = first + count - 1
        memory = _qn(Memory._meta.db_table)
        columns, values, params = [], [], []
        ns_case = (
            "CASE i %% 6 "
            + " ".join(f"WHEN {k} THEN {namespaces[NAMESPACE_OF[k]].pk}" for k in range(6))
            + " END"
        )
        epoch_db = _db_time(epoch)
        expressions: dict[str, tuple[str, list[Any]]] = {
            "namespace": (ns_case, []),
            "content": (
                "'Bench memory ' || CAST(i AS TEXT) || ' about topic ' || CAST(i %% 20 AS TEXT)",
                [],
            ),
            "topic": ("'topic-' || CAST(i %% 20 AS TEXT)", []),
            "use_count": ("(i * 7) %% 8", []),
            "strength": ("0.5 + ((i * 13) %% 16) / 10.0", []),
            "last_used_at": (_minus_days("%s", "((i * 37) %% 4000) / 100.0"), [epoch_db]),
            "created_at": (_minus_days("%s", "40 + (i %% 90)"), [epoch_db]),
            "updated_at": ("%s", [epoch_db]),
            "tier": (
                f"CASE WHEN i %% 10 < 6 OR i %% 20 = 19 THEN '{Memory.Tier.SHORT_TERM}' "
                f"WHEN i %% 20 = 9 THEN '{Memory.Tier.CORE}' "
                f"ELSE '{Memory.Tier.LONG_TERM}' END",
                [],
            ),
            "status": (
                f"CASE WHEN i %% 10 < 6 THEN '{Memory.Status.ACTIVE}' "
                f"WHEN i %% 20 = 19 THEN '{Memory.Status.FORGOTTEN}' "
                f"ELSE '{Memory.Status.PROMOTED}' END",
                [],
            ),
            "forgotten_at": (
                f"CASE WHEN i %% 20 = 19 THEN {_minus_days('%s', '(i * 17) %% 20')} END",
                [epoch_db],
            ),
            "access_count": ("CASE WHEN i %% 97 = 0 THEN 6 ELSE i %% 4 END", []),
            "stability": ("CASE WHEN i %% 97 = 0 THEN 0.6 ELSE (i %% 5) / 10.0 END", []),
            "session_ids": (
                'CASE WHEN i %% 97 = 0 THEN \'["s1", "s2", "s3"]\' ELSE \'[]\' END',
                [],
            ),
        }
        for model_field in Memory._meta.concrete_fields:
            if model_field.primary_key:
                continue
            columns.append(_qn(model_field.column))
            if model_field.name in expressions:
                sql, sql_params = expressions[model_field.name]
                if connection.vendor == "postgresql" and model_field.name == "session_ids":
                    sql = f"CAST({sql} AS jsonb)"
                values.append(sql)
                params.extend(sql_params)
            else:
                values.append("%s")
                params.append(model_field.get_db_prep_save(model_field.get_default(), connection))
        source, source_params = _series(first, last)
        chunk = 200_000
        with connection.cursor() as cursor:
            for start in range(first, last + 1, chunk):
                source, source_params = _series(start, min(start + chunk - 1, last))
                with transaction.atomic():
                    cursor.execute(
                        f"INSERT INTO {memory} ({', '.join(columns)}) "
                        f"SELECT {', '.join(values)} FROM {source}",
                        [*params, *source_params],
                    )
                self.stderr.write(f"  ... {min(start + chunk, last + 1) - first} rows")
        state["next_i"] = last + 1
        self._insert_cards(namespaces[0], epoch)

    def _insert_cards(self, agent: Namespace, epoch: datetime) -> None:
        card, memory = _qn(Card._meta.db_table), _qn(Memory._meta.db_table)
        if connection.vendor == "postgresql":
            next_review = "(%s::timestamptz + ((m.id %% 60) - 30) * interval '1 day')"
        else:
            next_review = "strftime('%%Y-%%m-%%d %%H:%%M:%%f', %s, ((m.id %% 60) - 30) || ' days')"
        expressions = {
            "memory": ("m.id", []),
            "namespace": ("m.namespace_id", []),
            "scheduler": ("%s", [Namespace.SchedulerKind.SM2.value]),
            "easiness": ("1.3 + (m.id %% 13) / 10.0", []),
            "interval_days": ("1 + m.id %% 30", []),
            "repetitions": ("m.id %% 6", []),
            "next_review": (next_review, [_db_time(epoch)]),
            "created_at": ("%s", [_db_time(epoch)]),
        }
        columns, values, params = [], [], []
        for model_field in Card._meta.concrete_fields:
            if model_field.primary_key:
                continue
            columns.append(_qn(model_field.column))
            if model_field.name in expressions:
                sql, sql_params = expressions[model_field.name]
                values.append(sql)
                params.extend(sql_params)
            else:
                values.append("%s")
                params.append(model_field.get_db_prep_save(model_field.get_default(), connection))
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {card} ({', '.join(columns)}) SELECT {', '.join(values)} "
                f"FROM {memory} m WHERE m.namespace_id = %s "
                f"AND NOT EXISTS (SELECT 1 FROM {card} c WHERE c.memory_id = m.id)",
                [*params, agent.pk],
            )

    def _top_up(self, namespaces: list[Namespace], size: int, epoch: datetime) -> None:
        """Put back the memories the purge deleted, so every run sees `size` memories."""
        missing = size - self._count(namespaces)
        if missing > 0:
            state = self._state(namespaces[0])
            self._insert(namespaces, state, missing, epoch)
            # The new rows must be settled too, or the next run would change them.
            sweep_run(now=epoch)
            state["settled"] = True
            self._save_state(namespaces[0], state)

    def _churn(
        self, namespaces: list[Namespace], epoch: datetime, churn: float, state: dict[str, Any]
    ) -> int:
        """Reset one slice of rows (id % M == k) so that the next sweep changes each of them.

        Group g = (id / M) % 6 decides what the sweep will do: 0 forget, 1 promote, 2 cold,
        3 archive, 4 core, 5 purge. Returns how many rows were reset.
        """
        modulus = max(1, round(1 / churn))
        state["runs"] = state.get("runs", 0) + 1
        self._save_state(namespaces[0], state)
        k = state["runs"] % modulus
        memory = _qn(Memory._meta.db_table)
        epoch_db = _db_time(epoch)
        group = f"((id / {modulus}) %% {CHURN_GROUPS})"
        json = "CAST(%s AS jsonb)" if connection.vendor == "postgresql" else "%s"
        ago = {days: _minus_days("%s", str(days)) for days in (60, 150, 200, 2, 90)}
        sql = f"""
        UPDATE {memory} SET
            tier = CASE {group} WHEN 2 THEN 'long_term' WHEN 3 THEN 'long_term'
                ELSE 'short_term' END,
            status = CASE {group} WHEN 2 THEN 'promoted' WHEN 3 THEN 'promoted'
                WHEN 5 THEN 'forgotten' ELSE 'active' END,
            storage = CASE {group} WHEN 3 THEN 'cold' ELSE 'hot' END,
            use_count = CASE {group} WHEN 1 THEN 3 ELSE 0 END,
            strength = 1.0,
            last_used_at = CASE {group} WHEN 0 THEN {ago[60]} WHEN 1 THEN %s
                WHEN 2 THEN {ago[150]} WHEN 3 THEN {ago[200]} ELSE {ago[2]} END,
            forgotten_at = CASE {group} WHEN 5 THEN {ago[90]} END,
            forgotten_reason = '',
            forgotten_score = NULL,
            access_count = CASE {group} WHEN 4 THEN 6 ELSE 0 END,
            stability = CASE {group} WHEN 4 THEN 0.6 ELSE 0.0 END,
            session_ids = CASE {group} WHEN 4 THEN {json} ELSE {json} END
        WHERE namespace_id IN ({", ".join(["%s"] * len(namespaces))}) AND id %% {modulus} = %s
        """
        sessions = '["s1", "s2", "s3"]'
        params = [epoch_db, epoch_db, epoch_db, epoch_db, epoch_db, epoch_db, sessions, "[]"]
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, [*params, *[ns.pk for ns in namespaces], k])
            return cursor.rowcount

    def _drop(self) -> None:
        owner = get_user_model().objects.filter(username=BENCH_USER).first()
        if owner is None:
            return
        ids = list(Namespace.objects.filter(owner=owner).values_list("pk", flat=True))
        if ids:
            marks = ", ".join(["%s"] * len(ids))
            with transaction.atomic(), connection.cursor() as cursor:
                for model in (ReviewLog, Card, MemoryEvent, Memory):
                    cursor.execute(
                        f"DELETE FROM {_qn(model._meta.db_table)} WHERE namespace_id IN ({marks})",
                        ids,
                    )
        owner.delete()

    def _vacuum(self) -> None:
        if connection.vendor != "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
            return
        with connection.cursor() as cursor:
            for model in (Memory, Card, MemoryEvent):
                cursor.execute(f"VACUUM ANALYZE {_qn(model._meta.db_table)}")

    def _explain(self, epoch: datetime, config: SweepConfig) -> str:
        from memories.sweep import _decisions_sql, params_cte

        p_sql, p_params = params_cte(config, epoch)
        decisions, d_params = _decisions_sql(namespace_id=None)
        first = Memory.objects.order_by("id").values_list("id", flat=True).first() or 0
        prefix = (
            "EXPLAIN (ANALYZE, BUFFERS)"
            if connection.vendor == "postgresql"
            else ("EXPLAIN QUERY PLAN")
        )
        with connection.cursor() as cursor:
            cursor.execute(
                f"{prefix} WITH {p_sql}, {decisions} SELECT count(*) FROM d",
                [*p_params, first, first + config.batch_size, *d_params],
            )
            return "\n".join(" ".join(str(c) for c in row) for row in cursor.fetchall())

    def _bench_worker(self, agent: Namespace, epoch: datetime) -> dict[str, Any]:
        """One whole run of the simulated worker: card creation, queue, grading."""
        from review.services import cards_create_for_namespace
        from review.worker import simulated_recall_run

        started = time.perf_counter()
        created = cards_create_for_namespace(namespace=agent, now=epoch)
        cards_ms = (time.perf_counter() - started) * 1000
        report = simulated_recall_run(namespace=agent, now=epoch)
        return {
            "seconds": round(time.perf_counter() - started, 2),
            "card_creation_ms": round(cards_ms, 1),
            "cards_created": created + report.cards_created,
            "reviewed": report.reviewed,
            "conflicts": report.conflicts,
        }

    def _bench_queue(self, agent: Namespace, epoch: datetime, *, runs: int, limit: int):
        tz = ZoneInfo("UTC")
        review_queue(namespace=agent, tz=tz, now=epoch, limit=limit)  # warm-up
        timings = []
        returned = 0
        for _ in range(runs):
            started = time.perf_counter()
            queue = review_queue(namespace=agent, tz=tz, now=epoch, limit=limit)
            timings.append((time.perf_counter() - started) * 1000)
            returned = len(queue.items)
        timings.sort()
        return {
            "cards": Card.objects.filter(namespace=agent).count(),
            "due": Card.objects.filter(namespace=agent, next_review__lte=epoch).count(),
            "limit": limit,
            "returned": returned,
            "median_ms": round(statistics.median(timings), 2),
            "p95_ms": round(timings[int(0.95 * (len(timings) - 1))], 2),
            "min_ms": round(timings[0], 2),
        }
