"""The recall event's namespace key loses its own index: recall_ns_created leads with it
(as memories 0022 does; one index fewer to write per recall)."""

import django.db.models.deletion
from django.db import migrations, models

from config.db import foreign_key_indexes

FIELDS = [("recall.recallevent", "namespace")]


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0022_foreign_key_indexes_shared"),
        ("recall", "0004_value_constraints"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="recallevent",
                    name="namespace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="recalls",
                        to="memories.namespace",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunPython(
                    foreign_key_indexes(FIELDS, drop=True),
                    foreign_key_indexes(FIELDS, drop=False),
                    elidable=False,
                )
            ],
        )
    ]
