"""A review log keeps the level its memory had when the grade was given (ReviewLog.classification).

Existing logs take the higher of their memory's level now and the level of the 'graded'
history event written with them (which kept the memory's level at the time): a log written
while its memory was restricted stays restricted after a declassification, as its event does.
"""

from django.db import migrations, models

_MEMORY_LEVEL = (
    "(SELECT m.classification FROM review_card c JOIN memories_memory m ON m.id = c.memory_id "
    "WHERE c.id = review_reviewlog.card_id)"
)
_EVENT_LEVEL = (
    "(SELECT max(e.classification) FROM memories_memoryevent e WHERE e.kind = 'graded' "
    "AND e.memory_ref = (SELECT c.memory_id FROM review_card c "
    "WHERE c.id = review_reviewlog.card_id) "
    "AND {log_id} = review_reviewlog.id)"
)
_SET = "UPDATE review_reviewlog SET classification = {larger}({memory}, COALESCE({event}, 0))"
BACKFILL = {
    "postgresql": _SET.format(
        larger="GREATEST",
        memory=_MEMORY_LEVEL,
        event=_EVENT_LEVEL.format(log_id="(e.after->>'review_log')::bigint"),
    ),
    "sqlite": _SET.format(
        larger="max",
        memory=_MEMORY_LEVEL,
        event=_EVENT_LEVEL.format(log_id="json_extract(e.after, '$.review_log')"),
    ),
}


def backfill(apps, schema_editor):
    schema_editor.execute(BACKFILL[schema_editor.connection.vendor], params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0007_analyze_every_few_thousand_rows"),
        ("memories", "0028_field_rules_every_path"),
    ]

    operations = [
        migrations.AddField(
            model_name="reviewlog",
            name="classification",
            field=models.PositiveSmallIntegerField(
                choices=[(0, "public"), (1, "internal"), (2, "confidential"), (3, "restricted")],
                default=3,
            ),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
