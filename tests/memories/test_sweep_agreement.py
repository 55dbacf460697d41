"""The sweep's SQL decides exactly as the pure twins of its rules, for generated rows.

memories/sweep.py decides every rule in SQL; memories.decay (should_promote,
should_forget, count_uses_in_window) and memories.boosting (should_promote_to_core,
should_archive, should_move_to_cold, at_floor) state the same rules for one memory. Here
Hypothesis builds random memory rows (zero uses, never used, exactly-at-threshold
scores and boundary times included), with random 'touched' events and recall times,
under random rule parameters, and on the real database (SQLite or PostgreSQL, whichever
DATABASE_URL names) checks that the rule each row gets from the sweep is the first of
sweep.RULES whose twin says yes.

The twins are given the score the SQL computed (a float8 one ulp away from Python's can
sit on the other side of a threshold), and that score is checked against
decay.decay_score separately, to 1e-7 (SQLite's julianday() arithmetic is good to ~40 µs).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from memories import services as memory_services
from memories.boosting import (
    ColdStorageRule,
    CorePromotionRule,
    should_archive,
    should_move_to_cold,
    should_promote_to_core,
)
from memories.decay import (
    count_uses_in_window,
    decay_score,
    iso_second,
    should_forget,
    should_promote,
)
from memories.models import Memory, MemoryEvent, Namespace
from memories.models.namespaces import POWER_ALPHA_MAX
from memories.score_sql import params_cte, scored_memories_sql
from memories.sweep import (
    ARCHIVE,
    COLD,
    CORE,
    FORGET,
    PROMOTE,
    RULES,
    SweepConfig,
    cold_rule_from_settings,
    sweep_run,
    thresholds_from_settings,
)
from tests.support.background import NOW, sweep_events

pytestmark = pytest.mark.django_db

MICROSECOND = timedelta(microseconds=1)


# --- Generated worlds --------------------------------------------------------------------


@dataclass
class Row:
    namespace: int  # index into the namespaces fixture
    status: str
    tier: str
    storage: str
    use_count: int
    last_used_at: datetime
    created_at: datetime
    strength: float
    access_count: int
    stability: float
    session_ids: list[str]
    last_accessed_at: datetime | None
    recall_timestamps: list[str]
    touched_at: list[datetime]
    other_events_at: list[datetime] = field(default_factory=list)


def configs():
    settings_thresholds, settings_cold = thresholds_from_settings(), cold_rule_from_settings()
    thresholds = st.builds(
        lambda min_uses, use_n, window: replace(
            settings_thresholds,
            promote_score_min_uses=min_uses,
            promote_use_count=use_n,
            promote_window_days=window,
        ),
        st.sampled_from([settings_thresholds.promote_score_min_uses, 0, 0, 3]),
        st.sampled_from([settings_thresholds.promote_use_count, 1, 2]),
        st.sampled_from([settings_thresholds.promote_window_days, 1.5]),
    )
    cold = st.builds(
        lambda floor, grace, archive: ColdStorageRule(
            floor=floor, grace_days=grace, archive_after_days=archive
        ),
        st.sampled_from([settings_cold.floor, 0.3, 0.0]),  # 0: a zero score is exactly on it
        st.sampled_from([settings_cold.grace_days, 0.0]),
        st.sampled_from([settings_cold.archive_after_days, 0.0, 20.0]),
    )
    core = st.builds(
        CorePromotionRule,
        min_sessions=st.sampled_from([3, 2]),
        min_access_count=st.sampled_from([5, 0]),
        min_stability=st.sampled_from([0.5, 0.0]),
    )
    return st.builds(
        lambda t, c, k, batch: SweepConfig.from_settings(
            thresholds=t, cold=c, core=k, batch_size=batch
        ),
        thresholds,
        cold,
        core,
        st.sampled_from([50_000, 2]),
    )


def moments(config: SweepConfig):
    """Times around NOW: every boundary a rule compares with (exactly, and a microsecond
    either side), inside the promotion window, and anything from a day in the future to
    500 days ago."""
    window_start = config.thresholds.window_start(NOW)
    anchors = [
        NOW,
        window_start,
        config.cold.grace_start(NOW),
        config.cold.archive_before(NOW),
        NOW - timedelta(days=3),  # the default half-life
    ]
    boundary = st.builds(
        lambda anchor, jitter: anchor + jitter * MICROSECOND,
        st.sampled_from(anchors),
        st.sampled_from([0, -1, 1]),
    )
    return st.one_of(boundary, in_window(config), ago(-1, 30), ago(-1, 500))


def ago(low_days: float, high_days: float):
    return st.builds(
        lambda seconds: NOW - timedelta(seconds=seconds),
        st.floats(min_value=low_days * 86_400, max_value=high_days * 86_400),
    )


def in_window(config: SweepConfig):
    """Inside the promotion window, its first microsecond included."""
    window_start = config.thresholds.window_start(NOW)
    return st.one_of(
        st.just(window_start),
        st.builds(
            lambda fraction: window_start + (NOW - window_start) * fraction,
            st.floats(min_value=0.0, max_value=1.0),
        ),
    )


def near(*values: float) -> list[float]:
    """Each value and its two float neighbours."""
    return [v2 for v in values for v2 in (math.nextafter(v, -1), v, math.nextafter(v, 3))]


def recall_texts(config: SweepConfig):
    """recall_timestamps entries as recall writes them (ISO 8601), as whole seconds (the
    window's first second among them), and junk."""
    when = st.one_of(in_window(config), moments(config))
    return st.one_of(
        st.builds(lambda m: m.isoformat(), when),
        st.builds(iso_second, when),
        st.builds(lambda m: iso_second(m) + "Z", when),
        st.sampled_from(["", "garbage", "3", "1999"]),
    )


LIVE = [("active", "short_term", "hot"), ("promoted", "long_term", "hot"),
        ("promoted", "long_term", "cold")]  # fmt: skip
ANY = [
    (status, tier, storage)
    for status in ("active", "promoted", "forgotten", "archived")
    for tier in ("short_term", "long_term", "core")
    for storage in ("hot", "cold")
]


def jittered(*moments_: datetime) -> list[datetime]:
    return [m + j * MICROSECOND for m in moments_ for j in (-1, 0, 1)]


@st.composite
def worlds(draw):
    """A config and rows of five shapes: anything, and one aimed at each rule's edges."""
    config = draw(configs())
    t, cold, core = config.thresholds, config.cold, config.core
    window_start = t.window_start(NOW)
    # Strengths on and beside each threshold (a strength is within [0, 2]).
    thresholds = [x for x in near(t.promote, t.forget, cold.floor) if 0 <= x <= 2]
    strengths = st.one_of(
        st.sampled_from([0.0, 2.0, 1.0, *thresholds]),
        # exactly at a threshold after one half-life without use (3 days, exponential)
        st.sampled_from([t.promote / 2, t.forget / 2, cold.floor / 2]),
        # denormals included: a score that underflows float8 must not stop the sweep
        st.floats(min_value=0.0, max_value=2.0),
        st.sampled_from([5e-324, 1e-310, 1e-300, 1.0000001e-300, 1e-150]),
    )
    use_counts = st.one_of(
        st.sampled_from(
            [0, t.promote_use_count, t.promote_use_count - 1, t.promote_score_min_uses]
        ).filter(lambda n: n >= 0),
        st.integers(min_value=0, max_value=12),
    )
    sessions = st.one_of(
        st.just([]), st.lists(st.sampled_from(["", "a", "b", "c", "d", " "]), max_size=5)
    )
    stabilities = st.one_of(st.sampled_from([0.0, 1.0, *near(0.5)]), st.floats(0.0, 1.0))
    combos = st.sampled_from(LIVE * 6 + ANY)

    def general(draw) -> dict:
        use_count = draw(use_counts)
        last_used_at = draw(moments(config))
        return {
            "use_count": use_count,
            "last_used_at": last_used_at,
            "strength": draw(strengths),
            "last_accessed_at": draw(st.one_of(st.none(), moments(config))),
            "recall_timestamps": draw(st.lists(recall_texts(config), max_size=6)),
            "touched_at": draw(st.lists(st.one_of(in_window(config), moments(config)), max_size=6)),
            "access_count": draw(st.integers(0, 8)),
            "stability": draw(stabilities),
            "session_ids": draw(sessions),
        }

    def exact_score(draw) -> dict:
        # No time since the last use (or a use in the future, which counts as none) and no
        # use before: the score is the strength itself, exactly on a threshold or beside it.
        return {
            **general(draw),
            "use_count": 0,
            "last_used_at": NOW + draw(st.sampled_from([0, 0, 1, 10**6])) * MICROSECOND,
            "strength": draw(st.sampled_from([t.promote, t.forget, cold.floor] * 3 + thresholds)),
        }

    def counted(draw) -> dict:
        # Promotion by uses: the counts and times around the window's start.
        stamps = [iso_second(window_start), iso_second(window_start - timedelta(seconds=1))]
        use_n = t.promote_use_count
        return {
            **general(draw),
            "use_count": draw(st.sampled_from([use_n - 1, use_n, use_n + 1, 0])),
            "last_used_at": draw(st.sampled_from(jittered(window_start, NOW))),
            "strength": draw(st.sampled_from([0.0, 0.01])),
            "touched_at": draw(
                st.lists(st.sampled_from(jittered(window_start) + [NOW]), max_size=use_n + 1)
            ),
            "recall_timestamps": draw(
                st.lists(
                    st.sampled_from(stamps + [stamps[0] + "+00:00", stamps[1] + ".999999"]),
                    max_size=3,
                )
            ),
        }

    def floor_edge(draw) -> dict:
        # Cold storage and archiving: the floor, the window, the grace and the archive age.
        cold_moments = jittered(window_start, cold.archive_before(NOW))
        return {
            **general(draw),
            "strength": draw(st.sampled_from([0.0, 0.0, 1e-9, 1.0])),
            "last_used_at": draw(st.sampled_from(cold_moments)),
            "last_accessed_at": draw(st.sampled_from([None, *jittered(cold.grace_start(NOW))])),
        }

    def core_edge(draw) -> dict:
        # Core promotion: sessions (blank and repeated ones too), accesses and stability
        # around the rule's minimums.
        return {
            **general(draw),
            "session_ids": draw(
                st.lists(st.sampled_from(["", "a", "b", "c"]), max_size=core.min_sessions + 1)
            ),
            "access_count": max(0, core.min_access_count + draw(st.sampled_from([-1, 0, 1]))),
            "stability": min(1.0, max(0.0, draw(st.sampled_from(near(core.min_stability))))),
        }

    shapes = {
        "general": general,
        "exact": exact_score,
        "counted": counted,
        "core": core_edge,
        "floor": floor_edge,
    }

    @st.composite
    def rows(draw):
        shape = draw(st.sampled_from(sorted(shapes)))
        status, tier, storage = draw(combos)
        if shape in ("exact", "counted"):
            status, tier, storage = draw(st.sampled_from(LIVE + LIVE[:1] * 3))
        if shape == "floor":
            status, tier = "promoted", draw(st.sampled_from(["long_term", "long_term", "core"]))
            storage = draw(st.sampled_from(["hot", "cold"]))
        columns = shapes[shape](draw)
        never_used = columns["use_count"] == 0 and draw(st.booleans())
        last_used_at = columns["last_used_at"]
        created_at = (
            last_used_at if never_used else last_used_at - timedelta(days=draw(st.integers(0, 30)))
        )
        return Row(
            namespace=draw(st.integers(0, 2)),
            status=status,
            tier=tier,
            storage=storage,
            created_at=created_at,
            other_events_at=draw(st.lists(moments(config), max_size=2)),
            **columns,
        )

    return config, draw(st.lists(rows(), min_size=10, max_size=30))


# --- The twins, in the sweep's order -----------------------------------------------------


def expected_rule(row: Row, score: float, config: SweepConfig) -> str | None:
    t = config.thresholds
    uses = count_uses_in_window(
        touched_at=row.touched_at,
        recall_timestamps=row.recall_timestamps,
        window_start=t.window_start(NOW),
    )
    floor_inputs = {
        "status": row.status,
        "tier": row.tier,
        "storage": row.storage,
        "score": score,
        "last_used_at": row.last_used_at,
        "last_accessed_at": row.last_accessed_at,
        "now": NOW,
        "thresholds": t,
        "rule": config.cold,
    }
    decisions = {
        CORE: should_promote_to_core(
            status=row.status,
            tier=row.tier,
            session_ids=row.session_ids,
            access_count=row.access_count,
            stability=row.stability,
            rule=config.core,
        ),
        PROMOTE: should_promote(
            status=row.status,
            tier=row.tier,
            score=score,
            use_count=row.use_count,
            last_used_at=row.last_used_at,
            uses_in_window=uses,
            now=NOW,
            thresholds=t,
        ),
        FORGET: should_forget(status=row.status, tier=row.tier, score=score, thresholds=t),
        ARCHIVE: should_archive(**floor_inputs),
        COLD: should_move_to_cold(**floor_inputs),
    }
    return next((rule for rule in RULES if decisions[rule]), None)


# What each rule writes: (status, tier, storage), None keeping the row's own.
WRITES = {
    CORE: ("promoted", "core", "hot"),
    PROMOTE: ("promoted", "long_term", None),
    FORGET: ("forgotten", None, None),
    ARCHIVE: ("archived", None, "cold"),
    COLD: (None, None, "cold"),
    None: (None, None, None),
}


# --- Running it on the database ----------------------------------------------------------


@pytest.fixture
def namespaces(user) -> list[Namespace]:
    """The settings' decay model, and two namespaces with models of their own."""
    return [
        memory_services.namespace_create(owner=user, name="Defaults"),
        memory_services.namespace_create(
            owner=user,
            name="Power",
            decay_model="power_law",
            decay_half_life_days=1.0,
            decay_beta=0.5,
        ),
        memory_services.namespace_create(
            owner=user, name="Two", decay_model="two_component", decay_fast_weight=0.4
        ),
    ]


def store(rows: list[Row], namespaces: list[Namespace]) -> list[int]:
    memories = Memory.objects.bulk_create(
        Memory(
            namespace=namespaces[row.namespace],
            content=f"generated memory {i}",
            status=row.status,
            tier=row.tier,
            storage=row.storage,
            use_count=row.use_count,
            last_used_at=row.last_used_at,
            created_at=row.created_at,
            strength=row.strength,
            access_count=row.access_count,
            stability=row.stability,
            session_ids=row.session_ids,
            last_accessed_at=row.last_accessed_at,
            recall_timestamps=row.recall_timestamps,
        )
        for i, row in enumerate(rows)
    )
    MemoryEvent.objects.bulk_create(
        MemoryEvent(
            namespace=memory.namespace,
            memory=memory,
            memory_ref=memory.pk,
            kind=kind,
            created_at=moment,
        )
        for memory, row in zip(memories, rows, strict=True)
        for kind, moments_ in (
            (MemoryEvent.Kind.TOUCHED, row.touched_at),
            (MemoryEvent.Kind.UPDATED, row.other_events_at),  # never a use
        )
        for moment in moments_
    )
    return [memory.pk for memory in memories]


def sql_scores(config: SweepConfig, namespaces: list[Namespace]) -> dict[int, float]:
    """Every memory's score as the sweep computes it (scored_memories_sql), at NOW."""
    p_sql, p_params = params_cte(config, NOW)
    ids = ", ".join(str(ns.pk) for ns in namespaces)
    scored = scored_memories_sql(where=f"m.namespace_id IN ({ids})")
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {p_sql}, {scored} SELECT id, score FROM scored", p_params)
        return dict(cursor.fetchall())


def check_agreement(config: SweepConfig, rows: list[Row], namespaces: list[Namespace]) -> None:
    ids = store(rows, namespaces)
    dry = sweep_run(now=NOW, config=config, dry_run=True, purge=False)  # also loads SQLite math
    scores = sql_scores(config, namespaces)
    sweep_run(now=NOW, config=config, purge=False)

    events = {event.memory_ref: event for event in sweep_events()}
    states = {
        pk: (status, tier, storage)
        for pk, status, tier, storage in Memory.objects.filter(pk__in=ids).values_list(
            "pk", "status", "tier", "storage"
        )
    }
    expected_counts: Counter[tuple[int, str]] = Counter()
    for pk, row in zip(ids, rows, strict=True):
        score = scores[pk]
        params = namespaces[row.namespace].decay_params()
        python_score = decay_score(
            use_count=row.use_count,
            last_used_at=row.last_used_at,
            strength=row.strength,
            now=NOW,
            params=params,
        )
        # SQLite measures dt through julianday(), good to ~40 microseconds.
        assert score == pytest.approx(python_score, rel=1e-7, abs=1e-12), (row, params)

        expected = expected_rule(row, score, config)
        event = events.get(pk)
        got = event.after["rule"] if event else None
        assert got == expected, f"sweep said {got}, the twins {expected}: {row}, score {score!r}"
        writes = WRITES[expected]
        own = (row.status, row.tier, row.storage)
        assert states[pk] == tuple(w or o for w, o in zip(writes, own, strict=True)), row
        if expected:
            expected_counts[(namespaces[row.namespace].pk, expected)] += 1
    dry_counts = Counter(
        {(ns, rule): n for ns, per_rule in dry.by_namespace.items() for rule, n in per_rule.items()}
    )
    assert dry_counts == expected_counts


@settings(
    max_examples=40,
    deadline=None,
    # No explain phase: it traces every line of Django under sys.settrace (many minutes).
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(world=worlds())
def test_the_sweep_decides_as_the_pure_rules_for_generated_rows(namespaces, world):
    config, rows = world
    with transaction.atomic():
        check_agreement(config, rows, namespaces)
        transaction.set_rollback(True)


# --- The edge cases, always run (Hypothesis may or may not draw them) ---------------------


def edge(**columns) -> Row:
    values = {
        "namespace": 0,
        "status": "active",
        "tier": "short_term",
        "storage": "hot",
        "use_count": 0,
        "last_used_at": NOW,
        "created_at": NOW,
        "strength": 1.0,
        "access_count": 0,
        "stability": 0.0,
        "session_ids": [],
        "last_accessed_at": None,
        "recall_timestamps": [],
        "touched_at": [],
        **columns,
    }
    return Row(**values)


EDGES = {
    # Never used, scoring 1.0: promoted only where PROMOTE_SCORE_MIN_USES is 0.
    "fresh": edge(),
    "used once, score exactly at the promote threshold": edge(use_count=1, strength=0.65 / 2**0.6),
    "exactly at the promote threshold": edge(strength=0.65),
    "a hair below the promote threshold": edge(strength=math.nextafter(0.65, 0)),
    "exactly at the forget threshold": edge(strength=0.05),
    "a hair below the forget threshold": edge(strength=math.nextafter(0.05, 0)),
    "five touches from the window's first microsecond": edge(
        use_count=5,
        strength=0.0,
        last_used_at=NOW - timedelta(days=1),
        touched_at=[NOW - timedelta(days=14)] * 5,
    ),
    "four touches and one a microsecond too early": edge(
        use_count=5,
        strength=0.0,
        last_used_at=NOW - timedelta(days=1),
        touched_at=[NOW - timedelta(days=14)] * 4 + [NOW - timedelta(days=14) - MICROSECOND],
    ),
    "five recalls in the window, but only four uses in all": edge(
        use_count=4,
        strength=0.0,
        last_used_at=NOW - timedelta(days=1),
        recall_timestamps=[(NOW - timedelta(days=2)).isoformat()] * 5,
    ),
    "core by three sessions": edge(
        session_ids=["a", "b", "c"], access_count=5, stability=0.5, strength=0.0
    ),
    "at the floor, hot": edge(
        status="promoted", tier="long_term", strength=0.05, last_used_at=NOW - timedelta(days=15)
    ),
    "at the floor but recalled inside the grace": edge(
        status="promoted",
        tier="long_term",
        strength=0.0,
        last_used_at=NOW - timedelta(days=15),
        last_accessed_at=NOW - timedelta(days=7),
    ),
    "cold, unused for exactly 180 days": edge(
        status="promoted", tier="long_term", storage="cold", last_used_at=NOW - timedelta(days=180)
    ),
    "cold, unused for a microsecond more": edge(
        status="promoted",
        tier="long_term",
        storage="cold",
        last_used_at=NOW - timedelta(days=180) - MICROSECOND,
    ),
}


@pytest.mark.parametrize("min_uses", [1, 0])
def test_the_sweep_decides_as_the_pure_rules_on_the_edges(namespaces, min_uses):
    config = SweepConfig.from_settings(
        thresholds=replace(thresholds_from_settings(), promote_score_min_uses=min_uses)
    )
    check_agreement(config, list(EDGES.values()), namespaces)


def test_the_edges_decide_what_they_are_named_for(namespaces):
    """The edge rows do reach both sides of each threshold (so the agreement means
    something): the rules the settings' sweep gives them."""
    config = SweepConfig.from_settings()
    ids = store(list(EDGES.values()), namespaces)
    sweep_run(now=NOW, config=config, purge=False)
    rules = {event.memory_ref: event.after["rule"] for event in sweep_events()}
    got = {name: rules.get(pk) for name, pk in zip(EDGES, ids, strict=True)}

    # Within an ulp of 0.65 (2^0.6 is inexact): either side is right if the twin agrees.
    del got["used once, score exactly at the promote threshold"]
    assert got == {
        "fresh": None,
        "exactly at the promote threshold": None,  # never used
        "a hair below the promote threshold": None,
        "exactly at the forget threshold": None,
        "a hair below the forget threshold": FORGET,
        "five touches from the window's first microsecond": PROMOTE,
        "four touches and one a microsecond too early": FORGET,
        "five recalls in the window, but only four uses in all": FORGET,
        "core by three sessions": CORE,
        "at the floor, hot": COLD,
        "at the floor but recalled inside the grace": None,
        "cold, unused for exactly 180 days": None,
        "cold, unused for a microsecond more": ARCHIVE,
    }


def test_a_vanishing_score_does_not_stop_the_sweep(remember):
    memory = remember(days_ago=300, strength=1e-300)  # 1e-300 * 2^-100: below 5e-324

    sweep_run(now=NOW)

    assert sweep_events(memory).get().after["rule"] == FORGET


@pytest.mark.parametrize(
    "model",
    [
        {"decay_model": "exponential", "decay_half_life_days": 0.001},
        {"decay_model": "power_law", "decay_power_alpha": POWER_ALPHA_MAX, "decay_beta": 2.0},
        {"decay_model": "power_law", "decay_power_alpha": 0.01},
        *(
            {"decay_model": "two_component", "decay_fast_weight": w}
            for w in (0.0, 1.0, 5e-324, math.nextafter(1.0, 0), 1e-200)
        ),
    ],
    ids=str,
)
def test_extreme_decay_parameters_and_vanishing_strengths_agree(user, model):
    """Where float8 arithmetic underflows (PostgreSQL raises where SQLite and Python give
    0): the namespace's decay at its bounds, strengths down to the smallest denormal."""
    namespace = memory_services.namespace_create(owner=user, name="Extreme", **model)
    rows = [
        edge(strength=strength, last_used_at=NOW - age, use_count=uses, tier=tier, status=status)
        for strength in (5e-324, 1e-310, 1e-300, 1e-150, 1e-12, 0.05, 2.0)
        for age in (timedelta(0), timedelta(seconds=1), timedelta(days=3), timedelta(days=30000))
        for uses in (0, 10**6)
        for status, tier in (("active", "short_term"), ("promoted", "long_term"))
    ]
    check_agreement(SweepConfig.from_settings(), rows, [namespace])
