"""Answer times and the year's heatmap where people and clients read them: the home page's
statistics panel and GET /api/v1/review/stats (issue 17, item 4)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from config.web import user_tz
from memories import services
from review.models import Card, ReviewLog

pytestmark = pytest.mark.django_db


@pytest.fixture
def card(personal):
    memory = services.memory_create(namespace=personal, content="Lisbon's 28 tram.", topic="t")
    return Card.objects.get(memory=memory)


def log(card, when, ms, **fields) -> ReviewLog:
    return ReviewLog.objects.create(
        card=card,
        namespace=card.namespace,
        grade=4,
        source=fields.pop("source", ReviewLog.Source.HUMAN),
        reviewed_at=when,
        duration_ms=ms,
        classification=card.memory.classification,  # graded at its memory's level
        **fields,
    )


def stat(body: str, name: str) -> str:
    return re.search(rf'data-stat="{name}">(.*?)</span>', body).group(1)


def local_noon(days_ago: int):
    """Noon of a local day, `days_ago` days before today: no test straddles midnight (a
    grade later today still counts today)."""
    today = timezone.localtime(timezone.now(), user_tz()).date()
    day = today - timedelta(days=days_ago)
    return timezone.make_aware(timezone.datetime(day.year, day.month, day.day, 12), user_tz())


def test_home_shows_the_average_answer_time_and_todays_time(ada_client, card):
    for ms in (4000, 8000, None):
        log(card, local_noon(0), ms)
    log(card, local_noon(0), 600_000, source=ReviewLog.Source.SIMULATED)
    log(card, local_noon(0), 600_000, undone_at=timezone.now())
    log(card, local_noon(3), 30_000)
    body = ada_client.get(reverse("home")).content.decode()
    assert stat(body, "answer-time") == "14 s"  # (4 + 8 + 30) / 3 seconds
    assert stat(body, "time-today") == "12 s"
    assert "per card, on average" in body and "reviewing today" in body


def test_home_says_dash_when_no_answer_was_timed(ada_client, card):
    log(card, local_noon(0), None)  # an answer without a time
    log(card, local_noon(0), 5000, source=ReviewLog.Source.IMPLICIT)
    body = ada_client.get(reverse("home")).content.decode()
    assert stat(body, "reviews-today") == "1"
    assert stat(body, "answer-time") == "—" and stat(body, "time-today") == "—"


def test_home_shows_the_years_heatmap_with_its_summary(ada_client, card):
    for days_ago, count in ((0, 3), (1, 2), (2, 1), (40, 4), (364, 1), (365, 7)):
        for _ in range(count):
            log(card, local_noon(days_ago), 1000)
    log(card, local_noon(5), 1000, source=ReviewLog.Source.SIMULATED)  # not the person's
    body = ada_client.get(reverse("home")).content.decode()
    figure = re.search(
        r"<figure class=\"card figure heatmap\" data-heatmap>(.*?)</figure>", body, re.S
    )
    assert figure, "the heatmap is on the home page"
    html = figure.group(1)
    summary = "11 reviews on 5 days in the last year, longest streak 3 days"
    assert f"<figcaption data-heatmap-summary>{summary}." in html
    assert 'class="plot-scroll heatmap-scroll" tabindex="0" role="region"' in html
    assert f"<desc>{summary}.</desc>" in html and 'role="img"' in html
    cells = re.findall(r'data-date="([\d-]+)" data-count="(\d+)"><title>([^<]*)</title>', html)
    assert len(cells) == 365
    assert sum(int(n) for _, n, _ in cells) == 11
    today = local_noon(0).date()
    assert cells[-1][:2] == (today.isoformat(), "3")
    assert cells[-1][2].endswith(": 3 reviews")


def test_the_api_gives_answer_times_and_each_days_time(user, card, make_token, api):
    log(card, local_noon(0), 3000)
    log(card, local_noon(0), None)
    log(card, local_noon(0), 9000, source=ReviewLog.Source.SIMULATED)
    log(card, local_noon(2), 5000)
    _, secret = make_token(user)
    tz = user_tz().key
    body = api(secret).get("/api/v1/review/stats", {"namespace": "personal", "tz": tz}).json()
    assert body["average_answer_ms"] == 4000
    assert body["timed_reviews"] == 2
    assert body["time_today_ms"] == 3000
    days = body["reviews_per_day"]
    assert days[-1] == {"date": local_noon(0).date().isoformat(), "reviews": 2, "time_ms": 3000}
    assert days[-3]["time_ms"] == 5000 and days[-2]["time_ms"] is None


def test_the_api_says_null_without_a_timed_answer(user, personal, make_token, api):
    _, secret = make_token(user)
    body = api(secret).get("/api/v1/review/stats", {"namespace": "personal"}).json()
    assert (body["average_answer_ms"], body["timed_reviews"], body["time_today_ms"]) == (
        None,
        0,
        None,
    )
    assert all(day["time_ms"] is None for day in body["reviews_per_day"])
