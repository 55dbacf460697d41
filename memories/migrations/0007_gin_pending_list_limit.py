"""PostgreSQL: a 256 kB pending list for the three full-text and trigram GIN indexes.

New rows enter a GIN index through its pending list, which every search reads in full
until a vacuum or the list's limit (4 MB by default) merges it into the index. Measured
on 100,000 memories after 3,000 creates with no vacuum: 4 MB let 204 pages of pending
entries build up and stage Sf took 10.8 ms at the median; with 256 kB, 11 pages and 7.8
ms (6.3 ms with nothing pending), for the same create rate (134 and 145 per second) and
a smaller longest create (88 against 71 ms): the merges are more frequent but smaller.
docs/benchmarks.md, notes on PostgreSQL.
"""

from django.db import migrations

INDEXES = (
    "memory_ns_search_vector_gin",
    "memory_ns_search_text_trgm",
    "memory_ns_search_original_trgm",
)
PENDING_LIST_KB = 256


def _run(template):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for index in INDEXES:
            schema_editor.execute(template.format(index=index), params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("memories", "0006_namespace_search_indexes")]

    operations = [
        migrations.RunPython(
            _run(f"ALTER INDEX {{index}} SET (gin_pending_list_limit = {PENDING_LIST_KB})"),
            _run("ALTER INDEX {index} RESET (gin_pending_list_limit)"),
        )
    ]
