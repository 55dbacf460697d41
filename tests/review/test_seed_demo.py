from __future__ import annotations

import io

from django.core.management import call_command
from django.utils import timezone

from memories.models import Association, Memory, Namespace, Relation
from review.models import Card


def test_demo_data_is_varied_and_idempotent(db):
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    assert "username 'demo'" in out.getvalue()
    counts = (Memory.objects.count(), Card.objects.count(), Association.objects.count())
    assert counts[0] >= 24

    call_command("seed_demo", stdout=io.StringIO())
    assert (Memory.objects.count(), Card.objects.count(), Association.objects.count()) == counts

    assert Namespace.objects.filter(owner__username="demo").count() == 2
    assert set(Memory.objects.values_list("tier", flat=True)) == {"short_term", "long_term", "core"}
    assert set(Memory.objects.values_list("classification", flat=True)) == {0, 1, 2, 3}
    assert Memory.objects.values("topic").distinct().count() >= 8
    assert Card.objects.due(timezone.now()).count() >= 5
    assert Card.objects.new().exists()
    assert Relation.objects.filter(subject__name="alice", predicate="works_with").exists()
    now = timezone.now()
    scores = [m.decay_score(now) for m in Memory.objects.select_related("namespace")]
    assert min(scores) < 0.15 and max(scores) > 0.65  # the plots have something to show
