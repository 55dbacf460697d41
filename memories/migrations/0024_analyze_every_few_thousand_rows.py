"""PostgreSQL: autovacuum analyses the tables a namespace grows every 5,000 changed rows
(config.db.AUTOANALYZE_ROWS), not every tenth of the table.

Every per-namespace statement leans on the statistics' idea of how many rows a namespace
holds. At its default, autovacuum analyses a table once a tenth of it has changed: in a
table of 10,000,000 memories, after 1,000,000 writes. A namespace that fills faster than
that (an import, an agent's first day; any new namespace where the statistics know all
the others) is estimated at one row meanwhile, and every index led by the namespace then
looks as good as any other: the newest-first listing and stage Ss's scan read and sort the
whole namespace instead of walking (namespace, created_at) backwards (5,000 rows: 3-6 ms),
as the duplicate check did until migration 0023 (docs/benchmarks.md, notes on PostgreSQL).
A fixed threshold bounds the staleness by rows whatever the table's size, at no more than
one ANALYZE (a sample of 30,000 rows) a minute per table: autovacuum wakes once a minute.
"""

from django.db import migrations

from config.db import autoanalyze_every

TABLES = ("memories_memory", "memories_memorysketch", "memories_association")


class Migration(migrations.Migration):
    dependencies = [("memories", "0023_content_key_leads")]

    operations = [
        migrations.RunPython(
            autoanalyze_every(TABLES), autoanalyze_every(TABLES, reset=True), elidable=False
        )
    ]
