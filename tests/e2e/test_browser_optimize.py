"""Optimize in a real browser, keyboard only, at 1280 px and on a 375 px phone: from the
namespace page's Optimize button to the figures (focus on them), Reset to defaults, and the
refusal below the minimum number of reviews. The fixtures and helpers are test_browser.py's
and test_browser_webhooks.py's; the fit runs in the request (a few hundred reviews)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from memories import services
from memories.models import Namespace
from tests.e2e.test_browser import (  # noqa: F401 (fixtures)
    _new_page,
    browser,
    console,
    log_in,
    shot,
)
from tests.e2e.test_browser_webhooks import focused
from tests.review.test_optimizer import WRONG_PARAMETERS, add_review_history, synthetic_reviews

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

SCREENS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {"viewport": {"width": 375, "height": 740}, "is_mobile": True, "has_touch": True},
}


@pytest.fixture(params=sorted(SCREENS))
def screen(request, browser, console, live_server):  # noqa: F811
    context, page = _new_page(browser, console, base_url=live_server.url, **SCREENS[request.param])
    page.screen_name = request.param
    yield page
    context.close()
    assert console.unexpected() == [], console.unexpected()


def fits(page) -> None:
    """No sideways scroll of the page itself (tables scroll inside their card)."""
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    limit = SCREENS[page.screen_name]["viewport"]["width"]
    assert width[0] <= width[1] <= limit, (page.url, width)


def tab_to(page, name: str, *, back: bool = False, limit: int = 150) -> dict:
    """Press Tab (Shift+Tab with `back`) until a control whose text is `name` has the focus,
    its focus ring showing."""
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        now = focused(page)
        if now["text"] == name and now["ring"]:
            return now
    raise AssertionError(f"Tab never reached {name!r}; last {focused(page)}")


def namespace_with(user, name: str, reviews) -> Namespace:
    namespace = services.namespace_create(owner=user, name=name, scheduler="fsrs")
    # Parameters from an earlier, poor fit: the new one beats them.
    Namespace.objects.filter(pk=namespace.pk).update(fsrs_parameters=list(WRONG_PARAMETERS))
    add_review_history(namespace, reviews)
    return namespace


def test_it_optimizes_a_namespace_and_resets_it_by_keyboard(screen, user):
    reviews = synthetic_reviews()
    namespace = namespace_with(user, "Japanese", reviews)
    page = screen
    log_in(page)
    page.goto(f"/namespaces/{namespace.slug}/")
    fits(page)

    tab_to(page, "Optimize")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/review/optimize/{namespace.slug}/\?ran=1$"))

    # Focus lands on the result, which reads out the figures before and after.
    assert focused(page)["id"] == "last-fit"
    result = page.locator("#last-fit")
    assert "and were put in use" in result.inner_text()
    figures = page.locator("[data-fit-figures]")
    assert figures.is_visible()
    rows = figures.locator("tbody tr").all_inner_texts()
    assert [row.split("\t")[0] for row in rows] == ["Log loss", "RMSE (bins)"]
    before, after = (float(cell) for cell in rows[0].split("\t")[1:])
    assert after < before
    assert page.locator("[data-fit-reviews]").inner_text() == f"{len(reviews)} on 70 cards"
    assert "fsrs-rs-python" in page.locator("[data-fit-engine]").inner_text()
    assert page.locator("[data-parameters]").get_attribute("data-parameters") == "fitted"
    namespace.refresh_from_db()
    assert namespace.fsrs_parameters == namespace.fsrs_fit["parameters"]
    fits(page)
    shot(page, f"optimize-result-{page.screen_name}")

    tab_to(page, "Reset to defaults", back=True)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/review/optimize/{namespace.slug}/$"))
    assert page.locator("[data-parameters]").get_attribute("data-parameters") == "defaults"
    assert "default parameters again" in page.locator("#messages").inner_text()
    assert page.locator("#optimize-reset").count() == 0
    namespace.refresh_from_db()
    assert namespace.fsrs_parameters is None
    fits(page)
    shot(page, f"optimize-reset-{page.screen_name}")


def test_below_the_minimum_it_says_how_many_reviews_there_are_and_are_needed(screen, user):
    few = [review for review in synthetic_reviews() if review.card_id <= 12]
    namespace = namespace_with(user, "Fresh", few)
    page = screen
    log_in(page)
    page.goto(f"/review/optimize/{namespace.slug}/")
    assert f"You have {len(few)} reviews here" in page.locator("[data-reviews]").inner_text()

    tab_to(page, "Optimize")
    page.keyboard.press("Enter")
    refusal = page.locator("#optimize-refusal")
    refusal.wait_for()
    # Focused when htmx settles the swap, a moment after the element appears.
    expect(refusal).to_be_focused()
    assert focused(page)["id"] == "optimize-refusal"
    assert refusal.get_attribute("role") == "alert"
    assert refusal.inner_text() == (
        f"This namespace has {len(few)} reviews of yours; fitting FSRS to them needs at "
        "least 400. Keep reviewing and optimize again later."
    )
    namespace.refresh_from_db()
    assert namespace.fsrs_fit is None and namespace.fsrs_parameters == list(WRONG_PARAMETERS)
    fits(page)
    shot(page, f"optimize-refused-{page.screen_name}")
