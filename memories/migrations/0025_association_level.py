"""An association carries a level: the higher of its two memories' when it was written,
raised with either of them and never lowered (docs/security.md, promise 2).

A link's kind and weight are written by whoever links, while the memories are at their
levels then; once a memory is declassified, a caller within the new level must still not
see a link made while that memory was above it. Database triggers set the level, so
every write path (the API, imports, the write path's session links, the worker's
near-duplicate links, supersession, the admin, raw SQL) gets it alike: the value an
INSERT gives is replaced by the ends' level. Existing links take their ends' levels now,
the best that is known of them.
"""

from django.db import migrations, models

_LEVEL = (
    "COALESCE((SELECT max(m.classification) FROM memories_memory m "
    "WHERE m.id IN ({source}, {target})), 3)"
)

POSTGRES_FORWARD = [
    f"""
    CREATE FUNCTION memories_association_level() RETURNS trigger AS $$
    BEGIN
        NEW.classification := {_LEVEL.format(source="NEW.source_id", target="NEW.target_id")};
        IF TG_OP = 'UPDATE' THEN
            -- Never lowered: what the link held was written at its old level.
            NEW.classification := GREATEST(NEW.classification, OLD.classification);
        END IF;
        RETURN NEW;
    END $$ LANGUAGE plpgsql
    """,
    "CREATE TRIGGER memories_association_level BEFORE INSERT OR UPDATE OF source_id, target_id "
    "ON memories_association FOR EACH ROW EXECUTE FUNCTION memories_association_level()",
    """
    CREATE FUNCTION memories_association_raise() RETURNS trigger AS $$
    BEGIN
        UPDATE memories_association SET classification = NEW.classification
        WHERE source_id = NEW.id AND classification < NEW.classification;
        UPDATE memories_association SET classification = NEW.classification
        WHERE target_id = NEW.id AND classification < NEW.classification;
        RETURN NULL;
    END $$ LANGUAGE plpgsql
    """,
    "CREATE TRIGGER memories_association_raise AFTER UPDATE OF classification "
    "ON memories_memory FOR EACH ROW WHEN (NEW.classification > OLD.classification) "
    "EXECUTE FUNCTION memories_association_raise()",
]
POSTGRES_BACKWARD = [
    "DROP TRIGGER IF EXISTS memories_association_raise ON memories_memory",
    "DROP FUNCTION IF EXISTS memories_association_raise()",
    "DROP TRIGGER IF EXISTS memories_association_level ON memories_association",
    "DROP FUNCTION IF EXISTS memories_association_level()",
]

# SQLite's triggers cannot assign NEW: the row is corrected right after it is written.
_SQLITE_SET = (
    "UPDATE memories_association SET classification = "
    f"{_LEVEL.format(source='NEW.source_id', target='NEW.target_id')} WHERE id = NEW.id;"
)
# An update (the admin's, say) never lowers it: what the link held was written at its level.
_SQLITE_RAISE_TO_ENDS = (
    "UPDATE memories_association SET classification = max(OLD.classification, "
    f"{_LEVEL.format(source='NEW.source_id', target='NEW.target_id')}) WHERE id = NEW.id;"
)
SQLITE_FORWARD = [
    f"CREATE TRIGGER memories_association_level AFTER INSERT ON memories_association "
    f"BEGIN {_SQLITE_SET} END",
    f"CREATE TRIGGER memories_association_level_ends AFTER UPDATE OF source_id, target_id "
    f"ON memories_association BEGIN {_SQLITE_RAISE_TO_ENDS} END",
    "CREATE TRIGGER memories_association_raise AFTER UPDATE OF classification "
    "ON memories_memory WHEN NEW.classification > OLD.classification BEGIN "
    "UPDATE memories_association SET classification = NEW.classification "
    "WHERE source_id = NEW.id AND classification < NEW.classification; "
    "UPDATE memories_association SET classification = NEW.classification "
    "WHERE target_id = NEW.id AND classification < NEW.classification; END",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS memories_association_raise",
    "DROP TRIGGER IF EXISTS memories_association_level_ends",
    "DROP TRIGGER IF EXISTS memories_association_level",
]

BACKFILL = "UPDATE memories_association SET classification = " + _LEVEL.format(
    source="memories_association.source_id", target="memories_association.target_id"
)


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor[schema_editor.connection.vendor]:
            schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("memories", "0024_analyze_every_few_thousand_rows")]

    operations = [
        migrations.AddField(
            model_name="association",
            name="classification",
            field=models.PositiveSmallIntegerField(
                choices=[(0, "public"), (1, "internal"), (2, "confidential"), (3, "restricted")],
                db_default=3,
                default=3,
            ),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.RunPython(
            _run({"postgresql": POSTGRES_FORWARD, "sqlite": SQLITE_FORWARD}),
            _run({"postgresql": POSTGRES_BACKWARD, "sqlite": SQLITE_BACKWARD}),
        ),
    ]
