"""A covering partial index for the about-to-forget digest, on PostgreSQL only.

The digest's statement (memories.selectors, about_to_forget and about_to_forget_ids) scores
a namespace's active short-term memories; at 1,000,000 memories their rows lie scattered
over the whole table and reading them was most of its time (docs/benchmarks.md, "The
about-to-forget digest": 346-487 ms without, 156-175 ms with). With every column the score
needs in the index, PostgreSQL answers from the index alone. SQLite has no INCLUDE (Django
warns, models.W040), so it is created here and not in Memory.Meta.
"""

from django.db import migrations

INDEX = "memory_forget_digest"


def create(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"CREATE INDEX IF NOT EXISTS {INDEX} ON memories_memory (namespace_id) "
        "INCLUDE (id, use_count, last_used_at, strength, classification, valid_until, "
        "expires_at) WHERE status = 'active' AND tier = 'short_term'"
    )


def drop(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("memories", "0020_decay_fits")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
