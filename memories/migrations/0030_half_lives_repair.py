"""Half-lives stored the wrong way round (a fast half-life longer than the slow one, which
every writer but the fitting step accepted) are swapped, with the weight, so that 0031's
checks hold and each namespace decays on the same curve as before: w*e^(-ln2 t/fast) +
(1-w)*e^(-ln2 t/slow) is the same curve with fast and slow and w and 1-w exchanged. An
empty field stands for the global setting, so a pair out of order only against the
setting gets both values written. A migration of its own: on PostgreSQL, rows updated in
the transaction that alters their table would block the ALTER."""

from django.conf import settings
from django.db import migrations
from django.db.models import F, Q


def swap(apps, schema_editor):
    Namespace = apps.get_model("memories", "Namespace")
    DecayFit = apps.get_model("memories", "DecayFit")
    for namespace in Namespace.objects.exclude(
        decay_fast_half_life_days__isnull=True, decay_slow_half_life_days__isnull=True
    ).only("decay_fast_half_life_days", "decay_slow_half_life_days", "decay_fast_weight"):
        fast = namespace.decay_fast_half_life_days
        slow = namespace.decay_slow_half_life_days
        fast = settings.DECAY_FAST_HALF_LIFE_DAYS if fast is None else fast
        slow = settings.DECAY_SLOW_HALF_LIFE_DAYS if slow is None else slow
        if fast <= slow:
            continue
        weight = namespace.decay_fast_weight
        weight = settings.DECAY_FAST_WEIGHT if weight is None else weight
        Namespace.objects.filter(pk=namespace.pk).update(
            decay_fast_half_life_days=slow,
            decay_slow_half_life_days=fast,
            decay_fast_weight=1 - weight,
        )
    # A fit's three are never empty: one statement (the right side reads the old values).
    DecayFit.objects.filter(Q(fast_half_life_days__gt=F("slow_half_life_days"))).update(
        fast_half_life_days=F("slow_half_life_days"),
        slow_half_life_days=F("fast_half_life_days"),
        fast_weight=1 - F("fast_weight"),
    )


class Migration(migrations.Migration):
    dependencies = [("memories", "0029_cjk_pairs")]

    operations = [migrations.RunPython(swap, migrations.RunPython.noop)]
