"""PostgreSQL: autovacuum analyses the cards every 5,000 changed rows, as memories 0024
does for the memories: the due queue reads a namespace's cards, and a namespace filling
faster than a tenth of the table would be estimated at one row meanwhile."""

from django.db import migrations

from config.db import autoanalyze_every

TABLES = ("review_card",)


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0006_foreign_key_indexes_shared"),
        ("memories", "0024_analyze_every_few_thousand_rows"),
    ]

    operations = [
        migrations.RunPython(
            autoanalyze_every(TABLES), autoanalyze_every(TABLES, reset=True), elidable=False
        )
    ]
