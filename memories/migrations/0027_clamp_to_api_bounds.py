"""Values another path (the admin) stored beyond the bounds the API always had are brought
within them, so that 0028's checks hold (a migration of its own: on PostgreSQL, rows updated
in the transaction that alters their table would block the ALTER)."""

from django.db import migrations

_CLAMPS = (
    ("memory", "relevance_score", -1e6, 1e6),
    ("namespace", "decay_half_life_days", None, 36500),
    ("namespace", "decay_fast_half_life_days", None, 36500),
    ("namespace", "decay_slow_half_life_days", None, 36500),
    ("namespace", "decay_power_alpha", None, 100),
)


def clamp(apps, schema_editor):
    for model, field, low, high in _CLAMPS:
        rows = apps.get_model("memories", model).objects
        rows.filter(**{f"{field}__gt": high}).update(**{field: high})
        if low is not None:
            rows.filter(**{f"{field}__lt": low}).update(**{field: low})


class Migration(migrations.Migration):
    dependencies = [("memories", "0026_namespace_labels")]

    operations = [migrations.RunPython(clamp, migrations.RunPython.noop)]
