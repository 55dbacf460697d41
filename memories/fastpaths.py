"""Fast paths: code that does what DRF or Django would do, faster. Each is kept because it
buys at least 10 % of the time of a request it serves, and each answers exactly as the
library does (tests/memories/test_fastpaths.py compares them on generated inputs).

Measured 2026-11-24 (Django 5.2, DRF 3.18): the Django test client against a new test
database, each request timed with the fast path and with the library's code swapped in,
alternately, in 31 pairs (124 for the list, over 1,000 memories; 62 for a create, each the
mean of 10); SQLite as process CPU time (the database runs in the process), PostgreSQL 15
on 127.0.0.1 as wall time. Each figure is what the fast path saves, as a share of the
request by the library's path (median against median). The machine (2 cores) was shared
with other work: a figure moves by up to 7 points between runs; earlier runs in brackets.

    fast path (where it serves)                    request         SQLite     PostgreSQL
    PlannedRepresentation (MemoryOutput)           list 100        25.4 (26.0)  19.0 (19.8)
                                                   bulk 1,000       8.3 (13.0)  17.4 (8.3)
    per_thread(MemoryOutput): memory_representation  create        15.7 (15.0)  10.2 (12.1, 14.7)
    per_thread(MemoryCreateInput):                 create          13.6 (4.6)   13.9 (-6.0)
      validate_memory_input (the bulk view validates every item with it: a new serializer
      per item would cost 53 % of a bulk create of 1,000)
    column_preparer (memories.bulk)                bulk 1,000       6.0 (12.8, 13.2)
                                                                                16.7 (12.4, 13.0)

    (%; list 100: GET /memories?limit=100, bulk 1,000: POST /memories/bulk of 1,000
    memories, create: POST /memories)

Removed the same day, as buying less than 10 % (the library's code runs instead), figures
for POST /memories/bulk of 1,000 and POST /memories, SQLite then PostgreSQL:
StrictSerializer's loop over only the keys present (bulk 5.5 % (1.5, 12.8) and 13.4 % (3.6);
by CPU time of the validation alone, 63 and 77 ms of about 1 s; create -1.6 % and 1.8 %),
the regex pre-check of DRF's surrogate validator (bulk -2.6 % and 2.3 %, create 3.7 % and
-1.4 %), services._MemoryTemplate, Memory(*row) for Memory(**fields) (bulk 5.6 % and
1.3 %, create 3.5 % and -0.7 %), bulk._insert_sqlite's statements run on the sqlite3
cursor past Django's (bulk 3.7 %, SQLite only), and services._validate's copy of
Model.clean_fields (the same loop; memory_validate calls clean_fields itself now).
"""

from __future__ import annotations

import enum
import json
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone
from rest_framework import ISO_8601, serializers
from rest_framework.fields import SkipField
from rest_framework.relations import PKOnlyObject
from rest_framework.settings import api_settings

from config.db import is_postgres, is_sqlite

# --- Output: Serializer.to_representation with the per-field work decided once ----------


# A serializer of `plan_model` instances whose to_representation is DRF's, planned.
#
# DRF looks each attribute up through get_attribute (source paths, callables, mappings) and
# dispatches to_representation per value, for every instance; a bulk response of 1,000
# memories spent more time there than in storing them. Here a model field read straight
# off the instance is converted the way its serializer field's to_representation does
# (int, float, str, list of str, ISO 8601 datetimes: the exact DRF classes with their
# defaults only); every other field takes DRF's own path.
#
# No docstring: drf-spectacular would make it the description of every subclass without
# one of its own (MemoryOutput) in the OpenAPI schema.
class PlannedRepresentation(serializers.Serializer):
    plan_model: type[models.Model]

    def to_representation(self, instance: models.Model) -> dict[str, Any]:
        plan = self.__dict__.get("_plan")
        if plan is None:
            plan = self.__dict__["_plan"] = self._representation_plan()
        ret: dict[str, Any] = {}
        zone = None
        for name, attname, convert, field in plan:
            if attname is not None:
                value = getattr(instance, attname)
                if value is None:
                    ret[name] = None
                elif convert is _ISO_DATETIME:
                    if zone is None:
                        zone = timezone.get_current_timezone()
                    ret[name] = _iso_datetime(field, value, zone)
                else:
                    ret[name] = convert(value)
                continue
            try:
                attribute = field.get_attribute(instance)
            except SkipField:
                continue
            check_for_none = attribute.pk if isinstance(attribute, PKOnlyObject) else attribute
            ret[name] = None if check_for_none is None else field.to_representation(attribute)
        return ret

    def _representation_plan(self) -> list[tuple[str, str | None, Any, serializers.Field]]:
        plain_attributes = {field.attname for field in self.plan_model._meta.concrete_fields}
        plan = []
        for field in self._readable_fields:
            attrs = field.source_attrs
            if len(attrs) != 1 or attrs[0] not in plain_attributes:
                plan.append((field.field_name, None, None, field))
                continue
            kind = type(field)
            if kind is serializers.IntegerField:
                convert = int
            elif kind is serializers.FloatField:
                convert = float
            elif kind is serializers.CharField:
                convert = str
            elif kind is serializers.ListField and type(field.child) is serializers.CharField:
                convert = _strings_representation
            elif _is_plain_iso_datetime(field):
                convert = _ISO_DATETIME
            else:
                convert = field.to_representation
            plan.append((field.field_name, attrs[0], convert, field))
        return plan


def _strings_representation(data: Any) -> list[str | None]:
    """ListField(child=CharField()).to_representation."""
    return [str(item) if item is not None else None for item in data]


def _is_plain_iso_datetime(field: serializers.Field) -> bool:
    """A DateTimeField rendered in ISO 8601 in the current time zone (DRF's default)."""
    return (
        type(field) is serializers.DateTimeField
        and settings.USE_TZ
        and not hasattr(field, "timezone")
        and str(getattr(field, "format", api_settings.DATETIME_FORMAT)).lower() == ISO_8601
    )


_ISO_DATETIME = object()  # marks the fields _iso_datetime renders


def _iso_datetime(field: serializers.DateTimeField, value: Any, zone) -> Any:
    """DateTimeField.to_representation for an aware datetime (what the models hold), the
    time zone looked up once per instance rather than per value; anything else goes to DRF."""
    if type(value) is datetime and value.utcoffset() is not None:
        try:
            text = value.astimezone(zone).isoformat()
        except OverflowError:
            return field.to_representation(value)  # DRF's own error
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    return field.to_representation(value)


# --- One serializer instance per thread ----------------------------------------------
#
# A serializer builds its fields by deep copy on every new instance: for MemoryOutput that
# is more work than rendering a memory, for MemoryCreateInput more than validating one.

_per_thread = threading.local()


def per_thread(serializer_class: type[serializers.Serializer], **kwargs: Any) -> Any:
    """This thread's instance of `serializer_class`, made with `kwargs` the first time.

    Only for calls through public methods that keep no state of the call on the
    serializer (run_validation, to_representation); a context given here is the
    instance's for good, and a caller may change what the dict holds.
    """
    instances = _per_thread.__dict__.setdefault("instances", {})
    instance = instances.get(serializer_class)
    if instance is None:
        instance = instances[serializer_class] = serializer_class(**kwargs)
    return instance


# --- Bulk inserts: bulk_create's preparation of values, by the column -------------------
#
# memories.bulk writes rows by COPY (PostgreSQL) or multi-row INSERTs (SQLite). bulk_create
# would send every value through its field's get_db_prep_save (a Python call per value, and
# on PostgreSQL a Jsonb wrapper per JSON value for psycopg to dump); these give the same
# values, a column at a time, with no call for a column that needs no change.

# Field types whose Python value is written as it is when it has the expected type;
# a value of any other type goes through the field's get_db_prep_save.
_AS_IS: dict[str, type] = {
    "CharField": str,
    "TextField": str,
    "SlugField": str,
    "EmailField": str,
    "FloatField": float,
    "BooleanField": bool,
    "IntegerField": int,
    "BigIntegerField": int,
    "SmallIntegerField": int,
    "PositiveIntegerField": int,
    "PositiveSmallIntegerField": int,
    "PositiveBigIntegerField": int,
    "AutoField": int,
    "BigAutoField": int,
    "SmallAutoField": int,
    "BinaryField": bytes,
}


def column_preparer(field: models.Field, connection) -> Callable[[list], list]:
    """A function from a column of a field's Python values to what the driver is given:
    what `field.get_db_prep_save` gives each value (bulk_create's preparation), or for
    JSON the text the driver would make of that.

    Columns rather than single values: a column whose values all have the expected type
    (checked with C-level map and set) passes through without a Python call per value.
    """
    target = field.target_field if field.is_relation else field
    internal = target.get_internal_type()
    as_is = _AS_IS.get(internal)
    prep_save = field.get_db_prep_save

    if as_is is not None:
        plain = {as_is, type(None)}

        def prepare(value: Any) -> Any:
            if value is None or type(value) is as_is:
                return value
            if isinstance(value, enum.Enum) and type(value.value) is as_is:
                return value.value  # a choices member: the driver writes its value anyway
            return prep_save(value, connection)

        def prepare_column(column: list) -> list:
            if set(map(type, column)) <= plain:
                return column
            return [prepare(value) for value in column]

        return prepare_column

    if internal == "JSONField":
        encoder = field.encoder
        prep_value = field.get_prep_value

        def prepare_json(value: Any) -> Any:
            if value is None:
                return None  # SQL NULL, as get_db_prep_save gives for None
            if type(value) is list and not value:
                return "[]"
            # The JSON text, as Django's adapters send it (psycopg's Jsonb dumps it too).
            return json.dumps(prep_value(value), cls=encoder)

        return lambda column: [prepare_json(value) for value in column]

    if internal == "DateTimeField" and is_postgres(connection) and settings.USE_TZ:

        def prepare_datetimes(column: list) -> list:
            # Aware datetimes are what get_db_prep_save returns them as, unchanged.
            if set(map(type, column)) == {datetime} and None not in set(
                map(datetime.utcoffset, column)
            ):
                return column
            return [prep_save(value, connection) for value in column]

        return prepare_datetimes

    if internal == "DateTimeField" and is_sqlite(connection) and settings.USE_TZ:
        zone = connection.timezone

        def prepare_sqlite_datetimes(column: list) -> list:
            # Aware datetimes: what the SQLite backend's adapt_datetimefield_value makes
            # of them (naive in the connection's time zone, as text).
            if set(map(type, column)) <= {datetime, type(None)} and None not in set(
                map(datetime.utcoffset, filter(None, column))
            ):
                return [
                    None if value is None else str(value.astimezone(zone).replace(tzinfo=None))
                    for value in column
                ]
            return [prep_save(value, connection) for value in column]

        return prepare_sqlite_datetimes

    return lambda column: [prep_save(value, connection) for value in column]
