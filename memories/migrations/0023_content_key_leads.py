"""The duplicate check's index is led by the content key, not the namespace.

Led by the namespace, it competed with every other index that leads with the namespace,
and when the statistics said a namespace was small (a new one, filling faster than
ANALYZE runs) PostgreSQL took memory_ns_tier_status and read every memory of the namespace
on each create: the check grew with the namespace (docs/benchmarks.md, "Per request: the
namespace, and the duplicate check of a growing namespace"). The check now keeps its
namespace condition off every index (memories.services.duplicates), so this index is the
only way in.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0022_foreign_key_indexes_shared"),
    ]

    operations = [
        # The new index first: no moment without one.
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["content_key", "namespace"], name="memory_content_key_ns"),
        ),
        migrations.RemoveIndex(model_name="memory", name="memory_ns_content_key"),
    ]
