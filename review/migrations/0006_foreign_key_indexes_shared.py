"""Foreign keys of cards, review logs and study sessions that a composite index already
leads with lose their own index (as memories 0022 does)."""

import django.db.models.deletion
from django.db import migrations, models

from config.db import foreign_key_indexes

FIELDS = [
    ("review.card", "namespace"),
    ("review.reviewlog", "card"),
    ("review.reviewlog", "namespace"),
    ("review.studysession", "namespace"),
    ("review.studysessionitem", "session"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0022_foreign_key_indexes_shared"),
        ("review", "0005_learning_steps"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="card",
                    name="namespace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="cards",
                        to="memories.namespace",
                    ),
                ),
                migrations.AlterField(
                    model_name="reviewlog",
                    name="card",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="logs",
                        to="review.card",
                    ),
                ),
                migrations.AlterField(
                    model_name="reviewlog",
                    name="namespace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="review_logs",
                        to="memories.namespace",
                    ),
                ),
                migrations.AlterField(
                    model_name="studysession",
                    name="namespace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="study_sessions",
                        to="memories.namespace",
                    ),
                ),
                migrations.AlterField(
                    model_name="studysessionitem",
                    name="session",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="items",
                        to="review.studysession",
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
