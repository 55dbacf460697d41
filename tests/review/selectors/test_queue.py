from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from benchmarks.review import build_namespace, drop_namespace
from memories import services as memory_services
from memories.models import Classification, Memory
from review.models import Card
from review.selectors import (
    QUEUE_WINDOW_FACTOR,
    card_state,
    deck_statistics,
    due_cards,
    review_queue,
    scheduler_for,
)
from review.services import card_grade
from tests.review.conftest import NOW, TZ

# NOW is 11:00 on 10 March in New York; tomorrow starts at 04:00 UTC on 11 March.
END_OF_TODAY = datetime(2025, 3, 11, 3, 59, tzinfo=UTC)
START_OF_TOMORROW = datetime(2025, 3, 11, 4, 0, tzinfo=UTC)


def ids(items) -> list[int]:
    return [item.card_id for item in items]


def test_it_queues_cards_due_before_the_start_of_tomorrow_in_the_users_time_zone(make_card):
    overdue = make_card("Overdue", next_review=NOW - timedelta(days=3))
    later_today = make_card("Later today", next_review=END_OF_TODAY)
    tomorrow = make_card("Tomorrow", next_review=START_OF_TOMORROW)
    make_card("New")

    queue = review_queue(namespace=overdue.namespace, tz=TZ, now=NOW, include_new=False)

    assert set(ids(queue.due)) == {overdue.pk, later_today.pk}
    assert tomorrow.pk not in ids(queue.items)
    # In UTC "today" already ended at midnight UTC, before the 03:59 card.
    utc = review_queue(namespace=overdue.namespace, tz=ZoneInfo("UTC"), now=NOW, include_new=False)
    assert ids(utc.due) == [overdue.pk]


def test_it_orders_due_cards_by_priority_score(make_card, study_ns):
    cards = [
        make_card("Late, easy, mature", next_review=NOW - timedelta(days=40), repetitions=5),
        make_card(
            "A bit late, hard, fragile",
            next_review=NOW - timedelta(days=1),
            easiness=1.3,
            repetitions=0,
            interval_days=1,
        ),
        make_card("Due later today", next_review=NOW + timedelta(hours=2), repetitions=2),
        make_card(
            "Week late, medium",
            next_review=NOW - timedelta(days=7),
            easiness=2.0,
            repetitions=1,
            interval_days=6,
        ),
    ]
    for card in cards[:2]:
        # Give FSRS a memory model too, so its retrievability differs between cards.
        scheduler = scheduler_for(study_ns)
        state = scheduler.grade(
            card_state(card), 4, now=card.next_review - timedelta(days=card.interval_days or 1)
        )
        Card.objects.filter(pk=card.pk).update(fsrs_state=state.fsrs)
        card.refresh_from_db()
    scheduler = scheduler_for(study_ns)
    expected = sorted(
        cards,
        key=lambda c: (-scheduler.priority(card_state(c), NOW), c.next_review, c.pk),
    )

    queue = review_queue(namespace=study_ns, tz=TZ, now=NOW)

    assert ids(queue.due) == [c.pk for c in expected]
    priorities = [item.priority for item in queue.due]
    assert priorities == sorted(priorities, reverse=True)


@pytest.mark.parametrize("scheduler_name", ["sm2"])
def test_it_ranks_by_sm2_priority_by_hand(make_card, study_ns):
    # 0.5 * overdue/30 + 0.3 * (2.5 - EF)/1.2 + 0.2 / (1 + repetitions)
    late = make_card("late", next_review=NOW - timedelta(days=30), repetitions=3)  # 0.55
    hard = make_card(
        "hard", next_review=NOW - timedelta(days=1), easiness=1.3, repetitions=0
    )  # 0.5167
    fresh = make_card("fresh", next_review=NOW, repetitions=1)  # 0.1

    queue = review_queue(namespace=study_ns, tz=TZ, now=NOW)

    assert ids(queue.due) == [late.pk, hard.pk, fresh.pk]
    assert [round(item.priority, 4) for item in queue.due] == [0.55, 0.5167, 0.1]


def test_it_groups_the_queue_by_deck_and_studies_one_deck(make_card, study_ns):
    geo = make_card("geo", topic="geo", next_review=NOW - timedelta(days=2))
    math = make_card("math", topic="math", next_review=NOW - timedelta(days=1))
    untitled = make_card("no topic", topic="", next_review=NOW - timedelta(days=3))

    queue = review_queue(namespace=study_ns, tz=TZ, now=NOW)
    only_math = review_queue(namespace=study_ns, tz=TZ, now=NOW, deck="math")

    grouped = queue.by_deck()
    assert set(grouped) == {"geo", "math", ""}
    assert ids(grouped["geo"]) == [geo.pk]
    assert ids(grouped[""]) == [untitled.pk]
    assert ids(only_math.items) == [math.pk]
    assert all(item.deck == "math" for item in only_math.items)


def test_it_leaves_out_forgotten_memories_and_other_namespaces(make_card, study_ns, other_user):
    kept = make_card("kept", next_review=NOW - timedelta(days=1))
    gone = make_card("gone", next_review=NOW - timedelta(days=1))
    memory_services.memory_forget(memory=gone.memory, reason="wrong")
    other = memory_services.namespace_create(owner=other_user, name="Other")
    make_card("theirs", namespace=other, next_review=NOW - timedelta(days=1))

    queue = review_queue(namespace=study_ns, tz=TZ, now=NOW)

    assert ids(queue.items) == [kept.pk]


def test_it_introduces_new_cards_after_due_ones_at_most_n_per_deck_per_day(make_card, study_ns):
    due = make_card("due", topic="geo", next_review=NOW - timedelta(days=1))
    geo_new = [
        make_card(f"geo {i}", topic="geo", created_at=NOW - timedelta(hours=10 - i))
        for i in range(7)
    ]
    math_new = [make_card(f"math {i}", topic="math") for i in range(3)]

    queue = review_queue(namespace=study_ns, tz=TZ, now=NOW)

    assert ids(queue.due) == [due.pk]
    assert ids(queue.items)[0] == due.pk
    assert all(item.is_new for item in queue.new)
    assert set(ids(queue.new)) == {c.pk for c in geo_new[:5]} | {c.pk for c in math_new}
    # Oldest first, as they were added.
    assert [i for i in ids(queue.new) if i in {c.pk for c in geo_new}] == [
        c.pk for c in geo_new[:5]
    ]


def test_it_counts_new_cards_already_introduced_today(make_card, study_ns):
    geo_new = [make_card(f"geo {i}", topic="geo") for i in range(7)]
    for card in geo_new[:2]:
        card_grade(card=card, grade=4, source="human", now=NOW - timedelta(hours=1))

    today = review_queue(namespace=study_ns, tz=TZ, now=NOW)
    tomorrow = review_queue(namespace=study_ns, tz=TZ, now=NOW + timedelta(days=1))

    assert ids(today.new) == [c.pk for c in geo_new[2:5]]
    assert ids(tomorrow.new) == [c.pk for c in geo_new[2:7]]
    stats = {s.deck: s for s in deck_statistics(namespace=study_ns, tz=TZ, now=NOW)}
    assert stats["geo"].new == 5
    assert stats["geo"].new_available_today == 3


def test_it_leaves_hidden_cards_out_of_a_lower_callers_new_card_budget(make_card, study_ns):
    geo_new = [make_card(f"geo {i}", topic="geo") for i in range(7)]
    Memory.objects.filter(pk__in=[c.memory_id for c in geo_new[:2]]).update(
        classification=Classification.RESTRICTED
    )
    for card in geo_new[:2]:
        card_grade(card=card, grade=4, source="human", now=NOW - timedelta(hours=1))

    low = review_queue(namespace=study_ns, tz=TZ, now=NOW, ceiling=Classification.INTERNAL)
    full = review_queue(namespace=study_ns, tz=TZ, now=NOW)

    # The lower caller cannot tell that two hidden geo cards were studied today.
    assert ids(low.new) == [c.pk for c in geo_new[2:7]]
    assert ids(full.new) == [c.pk for c in geo_new[2:5]]
    stats = deck_statistics(namespace=study_ns, tz=TZ, now=NOW, ceiling=Classification.INTERNAL)
    assert [(s.deck, s.new, s.new_available_today) for s in stats] == [("geo", 5, 5)]


def test_it_counts_new_cards_introduced_yesterday_in_the_users_day(make_card, study_ns):
    cards = [make_card(f"geo {i}", topic="geo") for i in range(6)]
    # 03:30 UTC on 10 March is still 9 March in New York: yesterday's budget.
    card_grade(card=cards[0], grade=4, source="human", now=datetime(2025, 3, 10, 3, 30, tzinfo=UTC))

    queue = review_queue(namespace=study_ns, tz=TZ, now=NOW)

    assert ids(queue.new) == [c.pk for c in cards[1:6]]


def test_it_honours_the_namespaces_new_card_setting(make_card, study_ns):
    study_ns.new_cards_per_day = 2
    study_ns.save()
    for i in range(4):
        make_card(f"geo {i}", topic="geo")
        make_card(f"math {i}", topic="math")

    queue = review_queue(namespace=study_ns, tz=TZ, now=NOW)
    study_ns.new_cards_per_day = 0
    none = review_queue(namespace=study_ns, tz=TZ, now=NOW)

    assert sorted(item.deck for item in queue.new) == ["geo", "geo", "math", "math"]
    assert none.new == []


def test_it_stops_at_the_limit_and_only_adds_new_cards_to_fill_it(make_card, study_ns):
    for i in range(5):
        make_card(f"due {i}", next_review=NOW - timedelta(days=i + 1))
    make_card("new")

    queue = review_queue(namespace=study_ns, tz=TZ, now=NOW, limit=3)

    assert len(queue.due) == 3
    assert queue.new == []


def test_it_reads_the_queue_in_a_fixed_number_of_queries(
    make_card, study_ns, django_assert_max_num_queries
):
    for i in range(30):
        make_card(f"due {i}", topic=f"deck {i % 3}", next_review=NOW - timedelta(hours=i))
        make_card(f"new {i}", topic=f"deck {i % 3}")

    # Due cards, the deck options, today's introduced counts, the new cards.
    with django_assert_max_num_queries(4):
        queue = review_queue(namespace=study_ns, tz=TZ, now=NOW, limit=100)

    assert len(queue.due) == 30
    assert len(queue.new) == 15


def test_it_orders_within_a_window_of_the_oldest_due_cards(make_card, study_ns):
    limit = 2
    # The window holds the limit x factor oldest due cards; the newest due card falls out.
    oldest = [
        make_card(f"old {i}", next_review=NOW - timedelta(days=10 + i), repetitions=4)
        for i in range(limit * QUEUE_WINDOW_FACTOR)
    ]
    outside = make_card("recent but fragile", next_review=NOW, easiness=1.3, repetitions=0)

    queue = review_queue(namespace=study_ns, tz=TZ, now=NOW, limit=limit, include_new=False)

    assert outside.pk not in ids(queue.due)
    assert set(ids(queue.due)) <= {c.pk for c in oldest}


# --- Index and speed -------------------------------------------------------------------


@pytest.mark.parametrize("scheduler_name", ["sm2"])
def test_it_reads_due_cards_through_the_namespace_next_review_index(user, scheduler_name):
    namespace = build_namespace(owner=user, size=20_000, now=NOW, decks=10)
    try:
        plan = (
            due_cards(namespace=namespace, tz=TZ, now=NOW)
            .order_by("next_review", "id")
            .values("id", "memory__topic")[:200]
            .explain()
        )
        queue = review_queue(namespace=namespace, tz=TZ, now=NOW, limit=50)
    finally:
        count = Card.objects.filter(namespace=namespace).count()
        drop_namespace(namespace)

    assert count == 20_000
    assert "card_ns_next_review" in plan
    assert len(queue.due) == 50
