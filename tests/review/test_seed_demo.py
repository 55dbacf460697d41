from __future__ import annotations

import io

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from memories.models import Association, Memory, Namespace, Relation
from memories.sweep import sweep_run
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


def test_the_first_sweep_leaves_the_demo_as_a_newcomer_finds_it(db):
    """Its short-term memories sit between forgetting and promotion: some in the review
    danger zone, some close to promotion; a few were forgotten by a person, with reasons."""
    call_command("seed_demo", stdout=io.StringIO())
    report = sweep_run(dry_run=True)
    assert (report.forgotten, report.promoted) == (0, 0)
    now = timezone.now()
    short = Memory.objects.select_related("namespace").filter(tier="short_term", status="active")
    scores = [m.decay_score(now) for m in short]
    assert sum(0.15 <= score <= 0.35 for score in scores) >= 4  # worth reviewing
    assert any(0.55 <= score < 0.65 for score in scores)  # about to be promoted
    forgotten = Memory.objects.filter(status="forgotten")
    assert forgotten.count() == 2 and all(m.forgotten_reason for m in forgotten)
    assert all(m.last_used_at >= m.created_at for m in Memory.objects.all())


def test_the_demos_buttons_each_give_their_own_interval(db):
    """A newcomer's first card must not show "1 d" on every button: the demo's personal
    namespace uses Anki's SM-2 modifiers, so Hard, Good and Easy differ on a learned card
    and Easy differs from Good on a new one."""
    from review.selectors import card_state, scheduler_for

    call_command("seed_demo", stdout=io.StringIO())
    personal = Namespace.objects.get(name="Personal")
    now = timezone.now()
    learned = Card.objects.filter(namespace=personal, repetitions__gte=2).first()
    new = Card.objects.filter(namespace=personal, next_review__isnull=True).first()
    for card, distinct in ((learned, 3), (new, 2)):
        assert card is not None
        preview = scheduler_for(personal).preview(card_state(card), now=now)
        shown = {preview[button] for button in preview if button.name != "AGAIN"}
        assert len(shown) >= distinct, preview


def test_the_demo_account_is_an_ordinary_user_the_admin_refuses(db, client):
    """Its password is published (make run prints it): it must not open the admin, and an
    account seeded as a superuser before is demoted on the next run."""
    User = get_user_model()
    User.objects.create_user("demo", password="engram-demo-2026", is_staff=True, is_superuser=True)
    call_command("seed_demo", stdout=io.StringIO())
    demo = User.objects.get(username="demo")
    assert (demo.is_staff, demo.is_superuser) == (False, False)
    assert demo.check_password("engram-demo-2026")
    client.force_login(demo)
    response = client.get("/admin/")
    assert response.status_code == 302 and response.url.startswith("/admin/login/")
    assert client.get("/").status_code == 200
