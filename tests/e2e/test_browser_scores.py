"""Scores people can read and the year's heatmap, in Chromium, by keyboard only, at 1280 px
and on a 375 px phone (issue 17, items 4 and 9): the memory list and page show a decay
score as its vitality with the raw score in the tooltip, the home page shows the heatmap of
the person's reviews with its summary, inside a scroller that never widens the page. The
fixtures and helpers are test_browser.py's."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlparse

import pytest
from django.utils import timezone

from config.web import user_tz
from memories import services
from memories.models import Memory
from review.models import Card, ReviewLog
from tests.e2e.test_browser import (  # noqa: F401 (fixtures)
    _new_page,
    browser,
    console,
    shot,
    study,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

PASSWORD = "pw-ada-12345"  # tests/conftest.py's user
SCREENS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {"viewport": {"width": 375, "height": 740}, "is_mobile": True, "has_touch": True},
}
SUMMARY = "6 reviews on 4 days in the last year, longest streak 2 days"


@pytest.fixture(params=sorted(SCREENS))
def screen(request, browser, console, live_server):  # noqa: F811
    context, page = _new_page(browser, console, base_url=live_server.url, **SCREENS[request.param])
    yield request.param, page
    context.close()
    assert console.unexpected() == [], console.unexpected()


@pytest.fixture
def scored(study, user):  # noqa: F811
    """A well-used memory (decay score 4.74, as in the complaint) and the person's reviews on
    four local days (two of them in a row), timed but for one, plus a worker's grade."""
    strong = services.memory_create(namespace=study, content="Lisbon's 28 tram is crowded.")
    Memory.objects.filter(pk=strong.pk).update(
        use_count=9, strength=1.19, last_used_at=timezone.now()
    )
    card = Card.objects.filter(namespace=study).first()
    today = timezone.localtime(timezone.now(), user_tz()).date()
    for days_ago, count in ((0, 2), (1, 1), (20, 2), (200, 1)):
        day = today - timedelta(days=days_ago)
        noon = timezone.make_aware(timezone.datetime(day.year, day.month, day.day, 12), user_tz())
        for n in range(count):
            ReviewLog.objects.create(
                card=card,
                namespace=study,
                grade=4,
                source=ReviewLog.Source.HUMAN,
                reviewed_at=noon,
                duration_ms=None if (days_ago, n) == (0, 1) else 5000,
            )
    ReviewLog.objects.create(
        card=card, namespace=study, grade=4, source=ReviewLog.Source.SIMULATED, duration_ms=9
    )
    return strong


def log_in_by_keyboard(page) -> None:
    page.goto("/accounts/login/")
    page.locator("#id_username").focus()
    page.keyboard.type("ada")
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: urlparse(url).path == "/")


def tab_to(page, selector: str, limit: int = 80) -> None:
    """Press Tab until the element matching `selector` has the focus."""
    for _ in range(limit):
        if page.evaluate(f"document.activeElement?.matches({selector!r}) ?? false"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {selector}")


def fits(page) -> None:
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], (page.url, width)


def test_the_heatmap_and_answer_times_on_the_home_page(screen, scored):
    name, page = screen
    log_in_by_keyboard(page)
    heatmap = page.locator("[data-heatmap]")
    assert heatmap.locator("h3").inner_text() == "Reviews in the last year"
    assert page.locator("[data-heatmap-summary]").inner_text().startswith(SUMMARY)
    assert page.locator('#stats [data-stat="answer-time"]').inner_text() == "5.0 s"
    assert page.locator('#stats [data-stat="time-today"]').inner_text() == "5.0 s"
    cells = heatmap.locator("rect[data-date]")
    assert cells.count() == 365
    today = heatmap.locator("rect[data-date]").last
    assert today.get_attribute("data-count") == "2"
    assert today.locator("title").text_content().endswith(": 2 reviews")

    # The heatmap's scroller takes the focus, so a keyboard can scroll it.
    tab_to(page, ".heatmap-scroll")
    region = page.locator(".heatmap-scroll")
    region.scroll_into_view_if_needed()
    assert region.is_visible()
    box, cell = region.bounding_box(), today.bounding_box()
    # The newest weeks are in view from the start, at 1280 px and on the phone alike.
    assert box["x"] <= cell["x"] and cell["x"] + cell["width"] <= box["x"] + box["width"]
    if name == "phone":
        assert region.evaluate("el => el.scrollWidth > el.clientWidth")
        for _ in range(5):  # older weeks are to the left
            page.keyboard.press("ArrowLeft")
        page.wait_for_function(
            "() => Math.abs(document.querySelector('.heatmap-scroll').scrollLeft) > 100"
        )
    fits(page)
    shot(page, f"scores-home-{name}")


def test_the_memory_list_and_page_show_vitality(screen, scored):
    name, page = screen
    log_in_by_keyboard(page)
    tab_to(page, 'nav a[href="/memories/"]')
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: urlparse(url).path == "/memories/")
    row = page.locator(f'tr[data-memory="{scored.pk}"]')
    shown = row.locator(".vitality")
    shown.scroll_into_view_if_needed()
    assert shown.is_visible()
    assert shown.locator(".vitality-text").inner_text() == "100 % · strong"
    assert shown.get_attribute("title").startswith("Decay score 4.74. At or above the promote")
    # Every row says how strong its memory is, on the same scale.
    assert page.locator("tr[data-memory] .vitality").count() == 4
    fits(page)
    shot(page, f"scores-memories-{name}")

    tab_to(page, f'a[href="/memories/{scored.pk}/"]')
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: urlparse(url).path == f"/memories/{scored.pk}/")
    why = page.locator("[data-vitality-why]")
    why.scroll_into_view_if_needed()
    assert why.is_visible()
    assert why.inner_text().startswith("Decay score 4.74. At or above the promote threshold")
    assert "4.74 now, above the scale" in page.locator("svg.plot-curve").text_content()
    fits(page)
    shot(page, f"scores-memory-{name}")
