"""The search page explains itself in a real browser (issue 17, item 10), keyboard only, at
1280 and 375 px: a typo hit marks the word it matched and says how, an associative result
names the result it is linked to (a link one can follow), and what relevance means opens
from the keyboard. The fixtures and helpers are test_browser.py's."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from memories import services
from tests.e2e.test_browser import (  # noqa: F401 (fixtures)
    PASSWORD,
    _new_page,
    browser,
    console,
    shot,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

SCREENS = {
    "1280": {"viewport": {"width": 1280, "height": 900}},
    "375": {"viewport": {"width": 375, "height": 740}, "is_mobile": True, "has_touch": True},
}
MAX_TABS = 80  # more than the page has focusable elements before the ones sought


@pytest.fixture(params=sorted(SCREENS))
def screen(request, browser, console, live_server):  # noqa: F811
    context, page = _new_page(browser, console, base_url=live_server.url, **SCREENS[request.param])
    page.screen_name = request.param
    yield page
    context.close()
    assert console.unexpected() == [], console.unexpected()


@pytest.fixture
def trip(user):
    travel = services.namespace_create(owner=user, name="Travel", mode="personal")
    kyoto = services.memory_create(
        namespace=travel,
        content="Kyoto: Fushimi Inari is quiet before 7am; bring water for the climb.",
        topic="travel",
    )
    ryokan = services.memory_create(
        namespace=travel, content="Book the ryokan two months ahead.", topic="papers"
    )
    services.association_create(source=kyoto, target=ryokan, weight=1.0, kind="next_turn")
    return {"kyoto": kyoto, "ryokan": ryokan}


def focused(page, selector: str) -> None:
    """Wait until the element `selector` has the focus (the page's autofocus applied)."""
    page.wait_for_function(
        "selector => document.activeElement === document.querySelector(selector)", arg=selector
    )


def type_query(page, query: str) -> None:
    """Type a search into the search field (focused on load) and wait for its results."""
    focused(page, "input[name=q]")
    page.keyboard.type(query, delay=30)
    words = r"(\+|%20)".join(re.escape(word) for word in query.split())
    page.wait_for_url(re.compile(rf"[?&]q={words}&"))  # htmx pushes the search's URL
    page.locator("#results-heading").filter(has_text=query).wait_for()


def log_in_by_keyboard(page) -> None:
    page.goto("/accounts/login/")
    focused(page, "#id_username")
    page.keyboard.type("ada")
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def tab_to(page, locator) -> None:
    """Press Tab until `locator` has the focus (it must be reachable by keyboard)."""
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        if locator.evaluate("node => node === document.activeElement"):
            return
    raise AssertionError(f"{locator} never got the focus by Tab")


def fits(page) -> None:
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], (page.url, width)


def test_a_typo_hit_shows_what_it_matched(screen, trip):
    page = screen
    log_in_by_keyboard(page)
    page.goto("/search/")
    type_query(page, "fushini")
    kyoto = page.locator(f'[data-result="{trip["kyoto"].pk}"]')
    mark = kyoto.locator("mark.fuzzy")
    mark.wait_for()
    assert mark.inner_text() == "Fushimi" and mark.is_visible()
    assert mark.get_attribute("title") == "fushini ≈ Fushimi, 1 letter apart"
    why = kyoto.locator("[data-why]")
    assert why.is_visible()
    assert why.inner_text() == "Matched: fushini ≈ Fushimi, 1 letter apart (0.69)."
    assert kyoto.locator(".relevance").inner_text() == "relevance 0.69"
    fits(page)
    shot(page, f"search-typo-{page.screen_name}")

    help_toggle = page.locator(".relevance-help summary")
    tab_to(page, help_toggle)
    page.keyboard.press("Enter")
    assert page.locator("#relevance-help").is_visible()
    assert "1 exact, 0.9 another form of the word" in page.locator("#relevance-help").inner_text()
    fits(page)


def test_an_associative_result_says_why_and_links_to_its_origin(screen, trip):
    page = screen
    log_in_by_keyboard(page)
    page.goto("/search/")
    type_query(page, "fushimi inari")
    kyoto, ryokan = trip["kyoto"].pk, trip["ryokan"].pk
    linked = page.locator(f'[data-result="{ryokan}"]')
    linked.wait_for()
    assert page.locator(f'[data-result="{kyoto}"] mark').count() == 2  # exact: not fuzzy
    assert page.locator(f'[data-result="{kyoto}"] mark.fuzzy').count() == 0
    why = linked.locator("[data-why]")
    assert why.is_visible()
    assert why.inner_text().startswith(f"Linked to #{kyoto} “Kyoto: Fushimi Inari")
    assert why.inner_text().endswith("(next turn of the same session, link weight 1.00).")
    fits(page)
    shot(page, f"search-associative-{page.screen_name}")

    origin = why.get_by_role("link")
    tab_to(page, origin)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"#result-{kyoto}$"))
    assert page.locator(f"#result-{kyoto}").is_visible()


def test_back_and_forward_show_the_search_their_address_names(screen, trip):
    # htmx restored its snapshot of a search it had pushed: the results of "kyoto" under an
    # empty search box, and inline-style errors from the Content-Security-Policy. Now the
    # page is loaded again from its address.
    page = screen
    log_in_by_keyboard(page)
    page.goto("/search/")
    type_query(page, "kyoto")
    page.keyboard.type(" ryokan", delay=30)  # a second search, pushed after the first
    page.wait_for_url(re.compile(r"[?&]q=kyoto(\+|%20)ryokan&"))
    page.go_back()
    page.wait_for_url(re.compile(r"[?&]q=kyoto&"))
    expect(page.locator("input[name=q]")).to_have_value("kyoto")
    page.locator("#results-heading").filter(has_text="kyoto").wait_for()
    page.go_forward()
    page.wait_for_url(re.compile(r"[?&]q=kyoto(\+|%20)ryokan&"))
    expect(page.locator("input[name=q]")).to_have_value("kyoto ryokan")
