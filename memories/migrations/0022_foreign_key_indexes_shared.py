"""Foreign keys that a composite index already leads with lose their own index (one
fewer index to write per memory, event, use and link; docs/benchmarks.md, "Writing
conversations"). Plain SQL on the database (config.db.foreign_key_indexes), so SQLite
does not copy the memory table and lose its search triggers. A test keeps it so
(tests/config/test_no_redundant_indexes.py)."""

import django.db.models.deletion
from django.db import migrations, models

from config.db import foreign_key_indexes

FIELDS = [
    ("memories.association", "target"),
    ("memories.decayfit", "namespace"),
    ("memories.memory", "namespace"),
    ("memories.memoryevent", "namespace"),
    ("memories.memoryuse", "namespace"),
    ("memories.relation", "object"),
    ("memories.webhookdelivery", "subscription"),
    ("memories.webhooksubscription", "namespace"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0021_forget_digest_index"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="association",
                    name="target",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="links_in",
                        to="memories.memory",
                    ),
                ),
                migrations.AlterField(
                    model_name="decayfit",
                    name="namespace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="decay_fits",
                        to="memories.namespace",
                    ),
                ),
                migrations.AlterField(
                    model_name="memory",
                    name="namespace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memories",
                        to="memories.namespace",
                    ),
                ),
                migrations.AlterField(
                    model_name="memoryevent",
                    name="namespace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="memories.namespace",
                    ),
                ),
                migrations.AlterField(
                    model_name="memoryuse",
                    name="namespace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="memories.namespace",
                    ),
                ),
                migrations.AlterField(
                    model_name="relation",
                    name="object",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="relations_in",
                        to="memories.entity",
                    ),
                ),
                migrations.AlterField(
                    model_name="webhookdelivery",
                    name="subscription",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="deliveries",
                        to="memories.webhooksubscription",
                    ),
                ),
                migrations.AlterField(
                    model_name="webhooksubscription",
                    name="namespace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="webhooks",
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
