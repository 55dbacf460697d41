"""Stored values can never break a read: every float, date and datetime column of the three
apps has a range check (config.bounds), the database refuses NaN, the infinities and values
outside the range on SQLite and PostgreSQL alike, full_clean refuses the same values naming
the field, and the migration that added the checks repaired the rows outside them.

The columns are read from the models, so a new column without a check fails here.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import IntegrityError, connection, models, transaction
from django.db.migrations.executor import MigrationExecutor

from config.bounds import (
    DATE_MAX,
    DATE_MIN,
    DATETIME_MAX,
    DATETIME_MIN,
    FLOAT_LIMIT,
    validate_date,
    validate_datetime,
    validate_finite,
)
from config.range_constraints import range_of
from memories import bulk
from memories.models import (
    RELEVANCE_LIMIT,
    ApiToken,
    Association,
    BackgroundRun,
    Consolidation,
    DecayFit,
    Entity,
    Memory,
    MemoryEvent,
    MemoryUse,
    Namespace,
    Relation,
    WebhookDelivery,
    WebhookSubscription,
)
from recall.models import RecallEvent, TermStat
from review.models import Card, ReviewLog, StudySession, StudySessionItem
from tests.support.decay_fits import make_decay_fit

APPS = ("memories", "review", "recall")
MICROSECOND = timedelta(microseconds=1)


def _columns() -> list[tuple[type[models.Model], models.Field]]:
    return [
        (model, field)
        for app in APPS
        for model in apps.get_app_config(app).get_models()
        for field in model._meta.concrete_fields
        if isinstance(field, models.FloatField | models.DateField)  # DateTimeField too
    ]


COLUMNS = _columns()
FLOATS = [(m, f) for m, f in COLUMNS if isinstance(f, models.FloatField)]
DATES = [(m, f) for m, f in COLUMNS if isinstance(f, models.DateField)]


def _id(column: tuple[type[models.Model], models.Field]) -> str:
    model, field = column
    return f"{model._meta.label_lower}.{field.name}"


def _check(model: type[models.Model], field: models.Field) -> tuple[str, Any, Any]:
    """(name, low, high) of the range check on `field`."""
    found = []
    for constraint in model._meta.constraints:
        if not isinstance(constraint, models.CheckConstraint):
            continue
        try:
            name, low, high = range_of(constraint)
        except ValueError:
            continue
        if name == field.name:
            found.append((constraint.name, low, high))
    assert len(found) == 1, f"{_id((model, field))} needs one range check (config.bounds)"
    return found[0]


# --- One row of every model ---------------------------------------------------------------


@pytest.fixture
def row(namespace, make_memory, user):
    """row(Model) -> a saved instance, with what it needs around it."""
    made: dict[type[models.Model], models.Model] = {Namespace: namespace}

    def memory() -> Memory:
        if Memory not in made:
            made[Memory] = make_memory("A memory to break.")
        return made[Memory]

    def entity() -> Entity:
        if Entity not in made:
            made[Entity] = Entity.objects.create(namespace=namespace, name="alice")
        return made[Entity]

    def card() -> Card:
        if Card not in made:
            made[Card] = Card.objects.get_or_create(
                memory=memory(), defaults={"namespace": namespace}
            )[0]
        return made[Card]

    def session() -> StudySession:
        if StudySession not in made:
            made[StudySession] = StudySession.objects.create(namespace=namespace, user=user)
        return made[StudySession]

    def subscription() -> WebhookSubscription:
        if WebhookSubscription not in made:
            made[WebhookSubscription] = WebhookSubscription.objects.create(
                namespace=namespace, url="https://example.com/hook", secret="whsec_eA=="
            )
        return made[WebhookSubscription]

    factories = {
        Memory: memory,
        Entity: entity,
        Card: card,
        StudySession: session,
        MemoryEvent: lambda: MemoryEvent.objects.create(
            namespace=namespace, memory=memory(), memory_ref=memory().pk, kind="touched"
        ),
        Association: lambda: Association.objects.create(
            namespace=namespace, source=memory(), target=make_memory("Another one.")
        ),
        Relation: lambda: Relation.objects.create(
            namespace=namespace,
            subject=entity(),
            predicate="knows",
            object=Entity.objects.create(namespace=namespace, name="bob"),
        ),
        Consolidation: lambda: Consolidation.objects.create(
            namespace=namespace, period="daily", period_start=date(2026, 11, 20), text="digest"
        ),
        ApiToken: lambda: ApiToken.objects.create(
            owner=user, name="t", prefix="abcdef", secret_hash="0" * 64
        ),
        BackgroundRun: lambda: BackgroundRun.objects.create(kind="sweep"),
        WebhookSubscription: subscription,
        WebhookDelivery: lambda: WebhookDelivery.objects.create(
            subscription=subscription(),
            namespace=namespace,
            event_type="memory.created",
            webhook_id="msg_constraints",
            payload={},
        ),
        ReviewLog: lambda: ReviewLog.objects.create(card=card(), namespace=namespace, grade=4),
        StudySessionItem: lambda: StudySessionItem.objects.create(
            session=session(), card=card(), position=0
        ),
        RecallEvent: lambda: RecallEvent.objects.create(namespace=namespace, query="q"),
        TermStat: lambda: TermStat.objects.create(namespace=namespace, lexeme="x", documents=1),
        MemoryUse: lambda: MemoryUse.objects.create(
            namespace=namespace,
            memory_ref=memory().pk,
            used_at=datetime.now(UTC),
            use_count=1,
        ),
        DecayFit: lambda: make_decay_fit(namespace),
    }

    def make(model: type[models.Model]) -> models.Model:
        if model not in made:
            made[model] = factories[model]()
        return made[model]

    return make


# Columns in a pair with an order (the fast half-life never longer than the slow one,
# memories.decay.half_life_order_error): a bound of one is written to both.
PAIRED = {
    "fast_half_life_days": "slow_half_life_days",
    "slow_half_life_days": "fast_half_life_days",
    "decay_fast_half_life_days": "decay_slow_half_life_days",
    "decay_slow_half_life_days": "decay_fast_half_life_days",
}


def _store(instance: models.Model, field: models.Field, value: Any, *, pair: bool = False) -> None:
    """QuerySet.update, atomic so that a refusal leaves the test's transaction usable."""
    values = {field.name: value}
    if pair and field.name in PAIRED:
        values[PAIRED[field.name]] = value
    with transaction.atomic():
        type(instance)._base_manager.filter(pk=instance.pk).update(**values)


def _store_raw(instance: models.Model, field: models.Field, literal: str) -> None:
    """An UPDATE writing an SQL literal (values Python cannot even hold)."""
    qn = connection.ops.quote_name
    sql = (
        f"UPDATE {qn(instance._meta.db_table)} SET {qn(field.column)} = {literal} "
        f"WHERE {qn(instance._meta.pk.column)} = %s"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, [instance.pk])


def _stored(instance: models.Model, field: models.Field) -> Any:
    return type(instance)._base_manager.values_list(field.name, flat=True).get(pk=instance.pk)


# --- Every column has a check, and validators that agree with it --------------------------


@pytest.mark.parametrize("column", COLUMNS, ids=_id)
def test_every_float_and_date_column_has_a_range_check_and_matching_validators(column):
    model, field = column
    name, low, high = _check(model, field)
    assert name.startswith(f"{model._meta.model_name}_{field.name}_")
    validators = field.validators
    if isinstance(field, models.FloatField):
        assert validate_finite in validators
        assert -FLOAT_LIMIT <= low < high <= FLOAT_LIMIT
        minimum = [v.limit_value for v in validators if isinstance(v, MinValueValidator)]
        maximum = [v.limit_value for v in validators if isinstance(v, MaxValueValidator)]
        # full_clean refuses exactly what the database refuses.
        assert max(minimum, default=-FLOAT_LIMIT) == low
        assert min(maximum, default=FLOAT_LIMIT) == high
    elif isinstance(field, models.DateTimeField):
        assert validate_datetime in validators
        assert (low, high) == (DATETIME_MIN, DATETIME_MAX)
    else:
        assert validate_date in validators
        assert (low, high) == (DATE_MIN, DATE_MAX)


def test_the_columns_are_found():
    names = {_id(column) for column in COLUMNS}
    assert {"memories.memory.strength", "review.card.easiness", "memories.memory.created_at"} <= (
        names
    )
    assert "memories.consolidation.period_start" in names


# --- The database refuses what is outside, and keeps what is inside ------------------------


def _float_cases() -> list:
    cases = []
    for model, field in FLOATS:
        _name, low, high = _check(model, field)
        for label, value in (
            ("nan", math.nan),
            ("+inf", math.inf),
            ("-inf", -math.inf),
            ("below", math.nextafter(low, -math.inf)),
            ("above", math.nextafter(high, math.inf)),
        ):
            cases.append(pytest.param(model, field, value, id=f"{_id((model, field))}-{label}"))
    return cases


@pytest.mark.parametrize(("model", "field", "value"), _float_cases())
def test_the_database_refuses_a_float_outside_the_range(row, model, field, value):
    instance = row(model)
    before = _stored(instance, field)
    if math.isnan(value) and connection.vendor == "sqlite" and field.null:
        # SQLite stores NaN as NULL: a nullable column reads it back as "no value".
        _store(instance, field, value)
        assert _stored(instance, field) is None
        return
    with pytest.raises(IntegrityError):
        _store(instance, field, value)
    assert _stored(instance, field) == before


@pytest.mark.parametrize(("model", "field"), FLOATS, ids=list(map(_id, FLOATS)))
def test_the_database_keeps_the_bounds_of_a_float_range(row, model, field):
    instance = row(model)
    _name, low, high = _check(model, field)
    for value in (low, high):
        _store(instance, field, value, pair=True)
        assert _stored(instance, field) == value


def _bad_datetime_literals() -> dict[str, str]:
    if connection.vendor == "postgresql":
        return {
            "year-10000": "'10000-01-01 00:00:00+00'::timestamptz",
            "year-9999-minus-5h": "'9999-12-31 20:00:00-05'::timestamptz",
            "year-1-plus-5h": "'0001-01-01 01:00:00+05'::timestamptz",
            "infinity": "'infinity'::timestamptz",
            "-infinity": "'-infinity'::timestamptz",
        }
    return {
        "year-10000": "'10000-01-01 00:00:00'",
        "year-10000-micro": "'10000-01-01 00:00:00.5'",
        "year-0": "'0000-12-31 20:00:00'",
        "text": "'not a date'",
        "number": "2460000.5",
    }


def _bad_date_literals() -> dict[str, str]:
    if connection.vendor == "postgresql":
        return {
            "year-10000": "'10000-01-01'::date",
            "infinity": "'infinity'::date",
            "bc": "'0001-01-01 BC'::date",
        }
    return {"year-10000": "'10000-01-01'", "year-0": "'0000-12-31'", "text": "'soon'"}


@pytest.mark.parametrize(("model", "field"), DATES, ids=list(map(_id, DATES)))
def test_the_database_refuses_a_date_outside_the_range(row, model, field):
    instance = row(model)
    before = _stored(instance, field)
    if isinstance(field, models.DateTimeField):
        low, high = DATETIME_MIN, DATETIME_MAX
        literals = _bad_datetime_literals()
        step = MICROSECOND
    else:
        low, high = DATE_MIN, DATE_MAX
        literals = _bad_date_literals()
        step = timedelta(days=1)
    for value in (low - step, high + step):
        with pytest.raises(IntegrityError):
            _store(instance, field, value)
    for label, literal in literals.items():
        with pytest.raises(IntegrityError):
            _store_raw(instance, field, literal)
        assert _stored(instance, field) == before, label


@pytest.mark.parametrize(("model", "field"), DATES, ids=list(map(_id, DATES)))
def test_the_database_keeps_the_bounds_of_a_date_range(row, model, field):
    instance = row(model)
    if isinstance(field, models.DateTimeField):
        # With and without microseconds: SQLite compares the stored text.
        values = (DATETIME_MIN, DATETIME_MIN + MICROSECOND, DATETIME_MAX - MICROSECOND)
        values += (DATETIME_MAX, datetime(9999, 12, 29, 19, tzinfo=timezone(-timedelta(hours=5))))
    else:
        values = (DATE_MIN, DATE_MAX)
    if field.name == "valid_until":  # never before valid_from (memory_valid_until_after_from)
        _store(instance, Memory._meta.get_field("valid_from"), DATETIME_MIN)
    for value in values:
        _store(instance, field, value)
        assert _stored(instance, field) == value


def test_a_time_python_cannot_turn_into_utc_never_reaches_the_table(row):
    memory = row(Memory)
    field = Memory._meta.get_field("created_at")
    # 9999-12-31 20:00 at UTC-5 is year 10000 in UTC: PostgreSQL receives it with its offset
    # and refuses it; on SQLite Django cannot even convert it to the UTC text it stores.
    late = datetime(9999, 12, 31, 20, tzinfo=timezone(-timedelta(hours=5)))
    refused = IntegrityError if connection.vendor == "postgresql" else OverflowError
    with pytest.raises(refused):
        _store(memory, field, late)
    # Half a day before it, Python holds it but it is past the bound all the same.
    with pytest.raises(IntegrityError):
        _store(memory, field, late - timedelta(hours=12))


# --- Every insert path ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [
        {"strength": math.nan},
        {"utility": math.inf},
        {"emotion_score": -math.inf},
        {"trust": 3.5},
        {"created_at": DATETIME_MAX + MICROSECOND},
        {"expires_at": DATETIME_MIN - MICROSECOND},
    ],
    ids=lambda values: next(iter(values)),
)
def test_inserting_a_bad_memory_is_refused_by_the_orm_raw_sql_and_the_bulk_path(namespace, values):
    def create():
        Memory.objects.create(namespace=namespace, content="bad", **values)

    def raw():
        # Every column but the id copied from a good row, the bad value put in its place.
        good = Memory.objects.create(namespace=namespace, content="good")
        fields = [f for f in Memory._meta.concrete_fields if not f.primary_key]
        qn = connection.ops.quote_name
        select = ", ".join("%s" if f.name in values else qn(f.column) for f in fields)
        params = [
            Memory._meta.get_field(name).get_db_prep_save(value, connection)
            for name, value in values.items()
        ]
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {qn(Memory._meta.db_table)} "
                f"({', '.join(qn(f.column) for f in fields)}) "
                f"SELECT {select} FROM {qn(Memory._meta.db_table)} WHERE id = %s",
                [*params, good.pk],
            )

    def bulk_rows():
        # Enough rows for COPY on PostgreSQL and a multi-row INSERT on SQLite.
        names = ["namespace", "content", *values]
        good = [[namespace.pk, f"row {i}", *[None] * len(values)] for i in range(bulk.SMALL)]
        for row_values in good:
            for position, name in enumerate(values, start=2):
                row_values[position] = Memory._meta.get_field(name).get_default()
        bad = [namespace.pk, "bad", *values.values()]
        bulk.insert_rows(Memory, names, [*good, bad])

    count = Memory.objects.count()
    for write in (create, raw, bulk_rows):
        with pytest.raises(IntegrityError), transaction.atomic():
            write()
        assert Memory.objects.count() == count, write.__name__


# --- full_clean, hence the admin and forms ---------------------------------------------------


def _clean_cases() -> list:
    cases = []
    for model, field in COLUMNS:
        if isinstance(field, models.FloatField):
            _name, low, high = _check(model, field)
            bad = (math.nan, math.inf, -math.inf)
            bad += (math.nextafter(low, -math.inf), math.nextafter(high, math.inf))
        elif isinstance(field, models.DateTimeField):
            bad = (
                DATETIME_MAX + MICROSECOND,
                DATETIME_MIN - MICROSECOND,
                datetime(9999, 12, 31, 20, tzinfo=timezone(-timedelta(hours=5))),
                datetime(1, 1, 1, 1, tzinfo=timezone(timedelta(hours=5))),
            )
        else:
            bad = (date(9999, 12, 31), date(1, 1, 1))
        cases += [
            pytest.param(model, field, value, id=f"{_id((model, field))}-{value}") for value in bad
        ]
    return cases


@pytest.mark.parametrize(("model", "field", "value"), _clean_cases())
def test_full_clean_refuses_it_naming_the_field(row, model, field, value):
    instance = row(model)
    setattr(instance, field.attname, value)
    with pytest.raises(ValidationError) as refused:
        instance.full_clean()
    assert field.name in refused.value.message_dict


@pytest.mark.parametrize(("model", "field"), COLUMNS, ids=list(map(_id, COLUMNS)))
def test_full_clean_accepts_the_bounds(row, model, field):
    instance = row(model)
    _name, low, high = _check(model, field)
    for value in (low, high):
        setattr(instance, field.attname, value)
        if field.name in PAIRED:
            setattr(instance, PAIRED[field.name], value)
        try:
            instance.full_clean()
        except ValidationError as error:
            assert field.name not in error.message_dict


# --- The migration repaired the rows outside the ranges ---------------------------------------

BEFORE = [
    ("memories", "0008_derived_classification"),
    ("review", "0002_sessions_undo_first_review"),
]
BEFORE += [("recall", "0003_embedding_codes")]


def _migrate(targets: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)


def _latest() -> list[tuple[str, str]]:
    graph = MigrationExecutor(connection).loader.graph
    return [node for node in graph.leaf_nodes() if node[0] in APPS]


@pytest.mark.django_db(transaction=True)
def test_the_migration_repairs_the_rows_outside_the_ranges(namespace, make_memory):
    good = make_memory("Nothing wrong here.", utility=0.25, emotion_score=-2.0)
    bad = make_memory("Everything wrong here.")
    card = Card.objects.get_or_create(memory=bad, defaults={"namespace": namespace})[0]
    postgres = connection.vendor == "postgresql"
    # NaN needs PostgreSQL: SQLite turns it into NULL, which NOT NULL refuses.
    nan, inf = ("'NaN'::float8", "'Infinity'::float8") if postgres else ("9e999", "9e999")
    late = "'10000-01-01 00:00:00+00'::timestamptz" if postgres else "'10000-01-01 00:00:00'"
    early = "'-infinity'::timestamptz" if postgres else "'0000-06-01 00:00:00'"
    unreadable = "'infinity'::timestamptz" if postgres else "'yesterday'"
    good_before = {f.name: getattr(good, f.name) for f in Memory._meta.concrete_fields}
    _migrate(BEFORE)
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memories_memory SET "
                f"utility = {nan}, confidence = -{inf}, emotion_score = 7.5, trust = -1, "
                f"forgotten_score = {inf}, relevance_score = 1e300, created_at = {late}, "
                f"expires_at = {early}, last_accessed_at = {unreadable} WHERE id = %s",
                [bad.pk],
            )
            cursor.execute(
                "UPDATE memories_namespace SET desired_retention = 5, decay_beta = -1 "
                "WHERE id = %s",
                [namespace.pk],
            )
            cursor.execute(f"UPDATE review_card SET easiness = {nan} WHERE id = %s", [card.pk])
    finally:
        _migrate(_latest())

    bad.refresh_from_db()
    assert bad.utility == 0.5  # NaN: the default (infinity on SQLite)
    assert bad.confidence == 0.8  # -infinity: the default
    assert bad.emotion_score == 5.0  # finite: clamped
    assert bad.trust == 0.0
    assert bad.forgotten_score is None  # nullable: NULL
    assert bad.relevance_score == RELEVANCE_LIMIT  # 0027: within the API's bound since
    assert bad.created_at == DATETIME_MAX
    assert bad.expires_at == DATETIME_MIN
    assert bad.last_accessed_at == DATETIME_MAX
    namespace.refresh_from_db()
    assert (namespace.desired_retention, namespace.decay_beta) == (0.99, 0.0)
    card.refresh_from_db()
    assert card.easiness == 2.5
    good.refresh_from_db()
    assert {f.name: getattr(good, f.name) for f in Memory._meta.concrete_fields} == good_before
    # Still searchable on SQLite: the table rebuild's lost triggers came back.
    assert Memory.objects.containing("everything wrong").get() == bad
