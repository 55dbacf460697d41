from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memories", "0030_half_lives_repair")]

    operations = [
        migrations.AddConstraint(
            model_name="decayfit",
            constraint=models.CheckConstraint(
                condition=models.Q(("fast_half_life_days__lte", models.F("slow_half_life_days"))),
                name="decayfit_half_lives_in_order",
            ),
        ),
        migrations.AddConstraint(
            model_name="namespace",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("decay_fast_half_life_days__isnull", True),
                    ("decay_slow_half_life_days__isnull", True),
                    ("decay_fast_half_life_days__lte", models.F("decay_slow_half_life_days")),
                    _connector="OR",
                ),
                name="namespace_half_lives_in_order",
            ),
        ),
    ]
