"""Consolidation digests (seed 002, stage S6): extractive, per namespace, period and topic."""

from __future__ import annotations

import hashlib
from datetime import date, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from memories import services as memory_services
from memories.consolidation import (
    consolidation_build,
    consolidations_export,
    consolidations_import,
    digest_markdown,
    digests_run,
    ended_periods,
    excerpt,
    parse_digest_markdown,
    period_end,
    period_label,
    period_start,
)
from memories.models import BackgroundRun, Consolidation, Memory
from memories.tasks import consolidation_digests
from tests.support.background import NOW

DAY = date(2025, 3, 9)  # the Sunday before NOW


# --- Periods and text (no database) ------------------------------------------------------


@pytest.mark.parametrize(
    ("period", "day", "start", "end"),
    [
        ("daily", date(2025, 3, 9), date(2025, 3, 9), date(2025, 3, 10)),
        ("weekly", date(2025, 3, 9), date(2025, 3, 3), date(2025, 3, 10)),
        ("weekly", date(2025, 3, 10), date(2025, 3, 10), date(2025, 3, 17)),
        ("quarterly", date(2025, 3, 31), date(2025, 1, 1), date(2025, 4, 1)),
        ("quarterly", date(2025, 12, 5), date(2025, 10, 1), date(2026, 1, 1)),
    ],
)
def test_period_bounds(period, day, start, end):
    assert period_start(period, day) == start
    assert period_end(period, start) == end


def test_ended_periods_are_the_latest_ones_that_are_over():
    today = date(2025, 3, 10)
    assert ended_periods("daily", today, 2) == [date(2025, 3, 9), date(2025, 3, 8)]
    assert ended_periods("weekly", today, 2) == [date(2025, 3, 3), date(2025, 2, 24)]
    assert ended_periods("quarterly", today, 2) == [date(2024, 10, 1), date(2024, 7, 1)]


def test_period_labels():
    assert period_label("daily", DAY) == "2025-03-09"
    assert period_label("weekly", date(2025, 3, 3)) == "the week of 2025-03-03 (2025-W10)"
    assert period_label("quarterly", date(2025, 4, 1)) == "2025-Q2"


def test_excerpt_is_the_first_sentence_or_a_cut_at_a_word():
    assert excerpt("Paris is the capital.  It is big.", 100) == "Paris is the capital."
    assert excerpt("one two three four five six", 14) == "one two three…"
    assert excerpt("  spaced\n  out  ", 50) == "spaced out"
    assert len(excerpt("x" * 500, 40)) == 40


@pytest.mark.parametrize(
    ("content", "first"),
    [
        (
            "The dentist is Dr. Alvarez on Main St. near the park. Call first.",
            "The dentist is Dr. Alvarez on Main St. near the park.",
        ),
        ("Drink tea, e.g. green tea, etc. Then rest.", "Drink tea, e.g. green tea, etc."),
        ("J. R. R. Tolkien wrote it. Then Lewis.", "J. R. R. Tolkien wrote it."),
        ("Version 3.5 is out. Upgrade.", "Version 3.5 is out."),
        ('He said "stop." Then he left.', 'He said "stop."'),
        ("Really? yes, really. No more.", "Really? yes, really."),
        ("Is it? Maybe.", "Is it?"),
        ("Ends with Dr.", "Ends with Dr."),
    ],
)
def test_the_first_sentence_does_not_end_at_an_abbreviation_or_initial(content, first):
    assert excerpt(content, 240) == first


# --- Building digests --------------------------------------------------------------------


@pytest.fixture
def on_day(namespace):
    """on_day(content, topic, day, days_ago_used=..., **columns): a memory created that day."""

    def make(content, topic="travel", day=DAY, hour=10, used_days_ago=None, **columns):
        created = NOW.replace(year=day.year, month=day.month, day=day.day, hour=hour)
        memory = memory_services.memory_create(
            namespace=namespace, content=content, topic=topic, created_at=created
        )
        if used_days_ago is not None:
            columns["last_used_at"] = NOW - timedelta(days=used_days_ago)
        if columns:
            Memory.objects.filter(pk=memory.pk).update(**columns)
        return memory

    return make


@pytest.mark.django_db
def test_a_daily_digest_quotes_the_days_best_memories_per_topic(on_day, namespace, settings):
    settings.DIGEST_MAX_ITEMS = 2
    strong = on_day("Flights to Lisbon are booked. Seat 4A.", use_count=6)
    middle = on_day("The hotel is near the river.", use_count=2)
    on_day("Bring an umbrella.")  # the weakest of three
    food = on_day("Try the custard tarts.", topic="food")
    on_day("Next week's memory.", day=DAY + timedelta(days=1))
    on_day("A forgotten memory.", status=Memory.Status.FORGOTTEN)

    report = digests_run(namespace=namespace, now=NOW, lookback=1, periods=("daily",))

    assert report.created == 2 and report.periods == 1
    digest = Consolidation.objects.get(namespace=namespace, period="daily", topic="travel")
    assert digest.period_start == DAY
    assert digest.memory_ids == [strong.pk, middle.pk]
    lines = digest.text.splitlines()
    assert lines[0] == (
        'Daily digest for 2025-03-09 on "travel": 3 memories, the 2 with the highest scores.'
    )
    assert lines[2].startswith(f"- Flights to Lisbon are booked. (#{strong.pk}, score ")
    assert lines[3].startswith(f"- The hotel is near the river. (#{middle.pk}, score ")
    assert digest.content_hash == hashlib.sha256(digest.text.encode()).hexdigest()
    assert Consolidation.objects.get(topic="food").memory_ids == [food.pk]


@pytest.mark.django_db
def test_memories_are_ranked_by_their_score_at_the_end_of_the_period(on_day, namespace):
    # Used long after the period: the score at the period's end still ranks them.
    early = on_day("Used early in the day.", hour=1, last_used_at=NOW.replace(day=9, hour=1))
    late = on_day("Used late in the day.", hour=1, last_used_at=NOW.replace(day=9, hour=23))

    digests_run(namespace=namespace, now=NOW, lookback=1, periods=("daily",))

    assert Consolidation.objects.get().memory_ids == [late.pk, early.pk]


@pytest.mark.django_db
def test_weekly_and_quarterly_digests(on_day, namespace):
    in_week = on_day("Mid-week fact.", day=date(2025, 3, 5))
    in_quarter = on_day("Winter fact.", day=date(2024, 11, 20))

    digests_run(namespace=namespace, now=NOW, lookback=2)

    weekly = Consolidation.objects.get(period="weekly")
    assert (weekly.period_start, weekly.memory_ids) == (date(2025, 3, 3), [in_week.pk])
    quarterly = Consolidation.objects.get(period="quarterly")
    assert (quarterly.period_start, quarterly.memory_ids) == (date(2024, 10, 1), [in_quarter.pk])
    assert quarterly.text.startswith('Quarterly digest for 2024-Q4 on "travel": 1 memory.\n')


@pytest.mark.django_db
def test_running_again_writes_nothing_new_and_follows_changes(on_day, namespace):
    first = on_day("First fact.")
    second = on_day("Second fact.")
    digests_run(namespace=namespace, now=NOW, lookback=1)
    rows = list(Consolidation.objects.values())

    again = digests_run(namespace=namespace, now=NOW, lookback=1)
    assert again.written == 0 and again.unchanged == 2  # the day's and the week's
    assert list(Consolidation.objects.values()) == rows

    memory_services.memory_forget(memory=second, reason="wrong")
    changed = digests_run(namespace=namespace, now=NOW, lookback=1)
    assert changed.updated == 2
    assert {tuple(d.memory_ids) for d in Consolidation.objects.all()} == {(first.pk,)}

    memory_services.memory_forget(memory=first, reason="wrong too")
    emptied = digests_run(namespace=namespace, now=NOW, lookback=1)
    assert emptied.deleted == 2
    assert not Consolidation.objects.exists()


@pytest.mark.django_db
def test_superseded_and_merged_memories_are_not_quoted(on_day, namespace):
    # A digest line is a recall result (S6): quoting a fact no longer true brought it back
    # into recall, which leaves superseded memories out everywhere else.
    old = on_day("Ada lives in Paris.", hour=9)
    new = on_day("Ada moved to Berlin.", hour=10)
    duplicate = on_day("Ada moved to Berlin!", hour=11)
    memory_services.memories_supersede(new=new, old=[old])
    Memory.objects.filter(pk=duplicate.pk).update(valid_until=NOW - timedelta(hours=1))
    later = on_day("Ada's sister visits in May.", hour=12, valid_until=NOW + timedelta(days=5))

    digests_run(namespace=namespace, now=NOW, lookback=1, periods=("daily",))

    digest = Consolidation.objects.get()
    assert set(digest.memory_ids) == {new.pk, later.pk}
    assert "Paris" not in digest.text and "2 memories" in digest.text

    # Superseding the last current memory of a topic deletes its digest on the next run.
    gone = on_day("Ada left.", topic="other", hour=13)
    memory_services.memories_supersede(new=gone, old=[new, later])
    digests_run(namespace=namespace, now=NOW + timedelta(minutes=1), lookback=1, periods=("daily",))
    assert not Consolidation.objects.filter(topic="travel").exists()


@pytest.mark.django_db
def test_building_one_period_directly(on_day, namespace):
    memory = on_day("Direct.", topic="")

    digests = consolidation_build(namespace=namespace, period="weekly", start=DAY)

    assert [d.period_start for d in digests] == [date(2025, 3, 3)]
    assert digests[0].topic == "" and digests[0].memory_ids == [memory.pk]
    assert " without a topic: 1 memory" in digests[0].text


@pytest.mark.django_db
def test_the_task_records_digests_written(on_day):
    yesterday = timezone.localdate() - timedelta(days=1)
    on_day("Recorded.", day=yesterday)

    counts = consolidation_digests()

    run = BackgroundRun.objects.get(kind=BackgroundRun.Kind.DIGESTS)
    assert run.status == "ok" and run.counts["digests_written"] == counts["digests_written"]
    assert counts["digests_written"] >= 1


# --- Markdown export and import ----------------------------------------------------------


@pytest.mark.django_db
def test_export_writes_markdown_folders_and_import_reads_them_back(on_day, namespace, tmp_path):
    on_day("Café crème, naïve résumé.", topic="Notes & Ideas")
    on_day("Weekday fact.", day=date(2025, 3, 4), topic="")
    digests_run(namespace=namespace, now=NOW, lookback=1)
    before = sorted(
        Consolidation.objects.values_list("period", "period_start", "topic", "text", "memory_ids")
    )

    written = consolidations_export(directory=tmp_path)
    again = consolidations_export(directory=tmp_path)

    assert written == again == len(before) == 3
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.md"))
    assert files[0].startswith("daily/2025-03-09__ada__work__notes-ideas-")
    assert "weekly/2025-03-03__ada__work__no-topic.md" in files
    assert sorted(p.name for p in tmp_path.iterdir()) == ["daily", "quarterly", "weekly"]

    Consolidation.objects.all().delete()
    report = consolidations_import(directory=tmp_path)

    assert (report.created, report.errors) == (3, [])
    after = sorted(
        Consolidation.objects.values_list("period", "period_start", "topic", "text", "memory_ids")
    )
    assert after == before
    assert consolidations_import(directory=tmp_path).unchanged == 3


@pytest.mark.django_db
def test_a_digest_file_round_trips(on_day, namespace):
    on_day("Round trip.")
    digest = consolidation_build(namespace=namespace, period="daily", start=DAY)[0]

    meta, body = parse_digest_markdown(digest_markdown(digest))

    assert meta["namespace"] == "ada/work" and meta["period_start"] == "2025-03-09"
    assert meta["memory_ids"] == digest.memory_ids and body == digest.text


@pytest.mark.django_db
def test_import_reports_bad_files_and_imports_the_rest(on_day, namespace, tmp_path):
    on_day("Good one.")
    digests_run(namespace=namespace, now=NOW, lookback=1, periods=("daily",))
    consolidations_export(directory=tmp_path)
    Consolidation.objects.all().delete()
    (tmp_path / "daily" / "broken.md").write_text("no front matter\n")
    (tmp_path / "daily" / "elsewhere.md").write_text(
        '---\nnamespace: "nobody/nothing"\nperiod: "daily"\nperiod_start: "2025-03-09"\n'
        'topic: "x"\nmemory_ids: []\n---\n\ntext\n'
    )
    (tmp_path / "weekly" / "midweek.md").write_text(
        '---\nnamespace: "ada/work"\nperiod: "weekly"\nperiod_start: "2025-03-05"\n---\n\nt\n'
    )

    report = consolidations_import(directory=tmp_path)

    assert report.created == 1
    assert len(report.errors) == 3
    assert any("unknown namespace" in e for e in report.errors)
    assert any("not the first day" in e for e in report.errors)


@pytest.mark.django_db
def test_import_into_another_namespace_drops_foreign_memory_ids(on_day, namespace, user, tmp_path):
    on_day("Mine.")
    digests_run(namespace=namespace, now=NOW, lookback=1, periods=("daily",))
    consolidations_export(directory=tmp_path)
    other = memory_services.namespace_create(owner=user, name="Copy")

    consolidations_import(directory=tmp_path, namespace=other)

    copy = Consolidation.objects.get(namespace=other)
    assert copy.memory_ids == [] and "Mine." in copy.text


@pytest.mark.django_db
def test_the_commands(on_day, namespace, tmp_path, capsys):
    on_day("Via commands.")
    digests_run(namespace=namespace, now=NOW, lookback=1, periods=("daily",))

    call_command("export_consolidations", str(tmp_path), "--namespace", "ada/work")
    Consolidation.objects.all().delete()
    call_command("import_consolidations", str(tmp_path))

    out = capsys.readouterr().out
    assert "Wrote 1 digests" in out and "Imported 1 new" in out
    assert Consolidation.objects.count() == 1
    with pytest.raises(CommandError, match="No namespace"):
        call_command("export_consolidations", str(tmp_path), "--namespace", "nobody/none")
