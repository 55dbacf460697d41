"""The seed 003 decay score of memories, computed in SQL (float8) on both engines.

params_cte is the constants row `p` (the sweep's settings, typed for the engine), and
scored_memories_sql the CTEs that give each selected memory its score with its namespace's
decay model. The sweep (memories.sweep) decides its rules on it; the home page's decay
histogram (memories.selectors) and consolidation read it. The pure twin is
memories.decay.decay_score (tests/memories/test_sweep_agreement.py compares them).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import connection

from config.db import is_postgres, is_sqlite, pick
from memories.decay import SCORE_FLOOR, iso_second
from memories.models import DecayFit, Memory, Namespace

if TYPE_CHECKING:  # the sweep's config; memories.sweep imports this module
    from memories.sweep import SweepConfig

# exp() of anything below this is 0 for every threshold; PostgreSQL raises on float8
# underflow instead of returning 0, so the exponent is clamped here.
MIN_EXPONENT = -700.0


def quote(name: str) -> str:
    return connection.ops.quote_name(name)


def db_datetime(value: datetime) -> Any:
    return connection.ops.adapt_datetimefield_value(value)


def params_cte(config: SweepConfig, now: datetime) -> tuple[str, list[Any]]:
    """WITH p AS (SELECT ...): the sweep's constants as one row, typed for the engine."""
    decay, thresholds, cold, core = config.decay, config.thresholds, config.cold, config.core
    window_start = thresholds.window_start(now)
    values: list[tuple[str, Any, str]] = [
        ("now_ts", db_datetime(now), "timestamptz"),
        ("window_start", db_datetime(window_start), "timestamptz"),
        # recall_timestamps holds ISO 8601 strings: compared as text on their first 19
        # characters (decay.iso_second), which never fails on a malformed entry.
        ("window_stamp", iso_second(window_start), "text"),
        ("archive_before", db_datetime(cold.archive_before(now)), "timestamptz"),
        ("archive_on", 1 if cold.archives else 0, "int"),
        ("model", decay.model, "text"),
        ("hl", decay.half_life_days, "float8"),
        ("beta", decay.beta, "float8"),
        ("alpha", decay.power_alpha, "float8"),
        ("fhl", decay.fast_half_life_days, "float8"),
        ("shl", decay.slow_half_life_days, "float8"),
        ("fw", decay.fast_weight, "float8"),
        ("promote", thresholds.promote, "float8"),
        ("use_n", thresholds.promote_use_count, "int"),
        ("score_min_uses", thresholds.promote_score_min_uses, "int"),
        ("forget", thresholds.forget, "float8"),
        ("cold_floor", cold.floor, "float8"),
        ("cold_grace_before", db_datetime(cold.grace_start(now)), "timestamptz"),
        ("core_sessions", core.min_sessions, "int"),
        ("core_access", core.min_access_count, "int"),
        ("core_stability", core.min_stability, "float8"),
        ("reason", config.forget_reason, "text"),
    ]
    if is_postgres():
        columns = [f"%s::{pgtype} AS {name}" for name, _, pgtype in values]
        columns.append("date_part('epoch', %s::timestamptz) AS now_epoch")
    else:
        columns = [f"%s AS {name}" for name, _, _ in values]
        columns.append("julianday(%s) AS now_jd")
    params = [value for _, value, _ in values] + [db_datetime(now)]
    return f"p AS (SELECT {', '.join(columns)})", params


def float8(value: float) -> str:
    """A float8 literal (REAL on SQLite): constants must not turn the arithmetic numeric."""
    return f"CAST({value!r} AS {pick(postgres='double precision', sqlite='REAL')})"


def keep_subquery() -> str:
    """Keeps a subquery a real subquery, so the score is computed once per row rather than
    inlined into every CASE branch that reads it (SQLite needs a LIMIT before OFFSET)."""
    return pick(postgres="OFFSET 0", sqlite="LIMIT -1 OFFSET 0")


def scored_memories_sql(*, where: str, columns: tuple[str, ...] = ()) -> str:
    """CTEs ns, base, terms, logs and scored, to follow p (from params_cte): the memories
    `where` selects (SQL on alias m) with their seed 003 score at p.now_ts, computed in
    float8 as the exp of its logarithm (terms and logs), never as the product: PostgreSQL
    raises where a product or an exp underflows to 0, so a score that does is SCORE_FLOOR's
    0 before it is computed, as decay.decay_score_after makes it.

    Each memory gets its namespace's decay model and parameters (columns of
    memories_namespace, or the applied fit's under decay_fit auto), the global settings in p
    filling the empty ones. scored has the columns the sweep reads plus `columns` (names of
    memories_memory columns) and score.
    """
    ensure_sqlite_math()
    pg = is_postgres()
    f8 = pick(postgres="double precision", sqlite="REAL")
    memory, namespace = quote(Memory._meta.db_table), quote(Namespace._meta.db_table)
    fits = quote(DecayFit._meta.db_table)
    # The applied fit (Namespace.applied_fit, under decay_fit auto), then the namespace's
    # own decay_* columns, then the settings in p: Namespace.decay_params's precedence.
    hl = "COALESCE(f.half_life_days, n.decay_half_life_days, p.hl)"
    alpha = "COALESCE(f.power_alpha, n.decay_power_alpha, p.alpha)"
    num, keep = float8, keep_subquery()
    ln2 = num(math.log(2))
    if pg:
        dt = f"GREATEST({num(0.0)}, p.now_epoch - date_part('epoch', m.last_used_at))"
        greatest = "GREATEST"
    else:
        dt = f"MAX({num(0.0)}, (p.now_jd - julianday(m.last_used_at)) * {num(86400.0)})"
        greatest = "MAX"

    def exp(expr: str) -> str:
        return f"exp({greatest}({num(MIN_EXPONENT)}, {expr}))"

    wanted = (
        "id",
        "namespace_id",
        "status",
        "tier",
        "storage",
        "use_count",
        "last_used_at",
        "strength",
        "access_count",
        "stability",
        "session_ids",
        "recall_timestamps",
        "last_accessed_at",
    )
    selected = ", ".join(f"m.{name}" for name in dict.fromkeys((*wanted, *columns)))
    return f"""
    ns AS (
        SELECT n.id,
            COALESCE(NULLIF(f.model, ''), NULLIF(n.decay_model, ''), p.model) AS model,
            {ln2} / ({hl} * {num(86400.0)}) AS lam,
            {hl} * {num(86400.0)}
                / (power({num(2.0)}, {num(1.0)} / {alpha}) - {num(1.0)}) AS t0,
            {alpha} AS alpha,
            COALESCE(f.fast_weight, n.decay_fast_weight, p.fw) AS w,
            {ln2} / (COALESCE(f.fast_half_life_days, n.decay_fast_half_life_days, p.fhl)
                * {num(86400.0)}) AS lf,
            {ln2} / (COALESCE(f.slow_half_life_days, n.decay_slow_half_life_days, p.shl)
                * {num(86400.0)}) AS ls,
            COALESCE(f.beta, n.decay_beta, p.beta) AS beta
        FROM {namespace} n CROSS JOIN p
        LEFT JOIN {fits} f ON f.id = n.decay_fit_applied_id AND n.decay_fit = 'auto'
    ),
    base AS (
        SELECT {selected}, ns.model, ns.lam, ns.t0, ns.alpha, ns.w, ns.lf, ns.ls,
            ns.beta, {dt} AS dt
        FROM {memory} m JOIN ns ON ns.id = m.namespace_id CROSS JOIN p
        WHERE {where}
        {keep}
    ),
    terms AS (
        SELECT b.*,
            CASE WHEN b.model = 'two_component' AND b.w > 0
                THEN ln(b.w) - b.lf * b.dt END AS ln_fast,
            CASE WHEN b.model = 'two_component' AND b.w < 1
                THEN ln({num(1.0)} - b.w) - b.ls * b.dt END AS ln_slow
        FROM base b
        {keep}
    ),
    logs AS (
        SELECT t.*,
            CASE WHEN t.strength > 0 THEN
                t.beta * ln(CAST(t.use_count + 1 AS {f8})) + ln(t.strength) + CASE t.model
                    WHEN 'power_law' THEN -t.alpha * ln({num(1.0)} + t.dt / t.t0)
                    WHEN 'two_component' THEN CASE
                        WHEN t.ln_fast IS NULL THEN t.ln_slow
                        WHEN t.ln_slow IS NULL THEN t.ln_fast
                        WHEN t.ln_fast >= t.ln_slow THEN t.ln_fast
                            + ln({num(1.0)} + {exp("t.ln_slow - t.ln_fast")})
                        ELSE t.ln_slow + ln({num(1.0)} + {exp("t.ln_fast - t.ln_slow")})
                      END
                    ELSE -t.lam * t.dt
                  END
            END AS ln_score
        FROM terms t
        {keep}
    ),
    scored AS (
        SELECT l.*,
            CASE WHEN l.ln_score IS NULL OR l.ln_score < {num(math.log(SCORE_FLOOR))}
                THEN {num(0.0)} ELSE exp(l.ln_score) END AS score
        FROM logs l
        {keep}
    )"""


def ensure_sqlite_math() -> None:
    """SQLite builds without the math functions get deterministic Python ones (on this
    connection: scored_memories_sql calls it when it builds the SQL)."""
    if not is_sqlite():
        return
    connection.ensure_connection()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT exp(0.0), ln(2.0), power(2.0, 0.5)")
    except Exception:  # sqlite3.OperationalError: no such function
        raw = connection.connection
        raw.create_function("exp", 1, math.exp, deterministic=True)
        raw.create_function("ln", 1, math.log, deterministic=True)
        raw.create_function("power", 2, math.pow, deterministic=True)
