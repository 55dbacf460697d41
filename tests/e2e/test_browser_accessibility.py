"""Every dashboard page passes axe-core's WCAG 2.1 A and AA rules (the engine browsers'
accessibility audits use), on a desktop and on a phone, logged in, and the login page
logged out. The page list is the URL configuration's (test_browser_phone.dashboard_pages),
so a new page is audited or the test fails for want of an object to show."""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from django.contrib.auth import get_user_model
from django.urls import reverse

from tests.e2e.test_browser import (  # noqa: F401 (fixtures)
    PASSWORD,
    _new_page,
    browser,
    console,
    log_in,
    study,
)
from tests.e2e.test_browser_phone import PHONE, dashboard_pages, everything, url_for  # noqa: F401

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

RULES = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}}
AXE = Axe()


def violations(page) -> list[str]:
    results = AXE.run(page, options=RULES)
    found = []
    for rule in results.response["violations"]:
        for node in rule["nodes"]:
            found.append(f"{rule['id']} ({rule['impact']}): {node['target']} {node['html'][:120]}")
    return found


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_every_page_passes_axe(browser, console, live_server, everything, device):  # noqa: F811
    options = PHONE if device == "phone" else {}
    context, page = _new_page(browser, console, base_url=live_server.url, **options)
    try:
        page.goto("/accounts/login/")
        found = {"login": violations(page)}
        log_in(page)
        for name, _, params in dashboard_pages():
            response = page.goto(url_for(name, params, everything))
            assert response.status == 200, name
            found[name] = violations(page)
    finally:
        context.close()
    failing = {name: items for name, items in found.items() if items}
    assert failing == {}, "\n".join(
        f"{name}: {item}" for name, items in failing.items() for item in items
    )


def test_a_table_wider_than_a_phone_scrolls_by_keyboard(browser, console, live_server, everything):  # noqa: F811
    """The regions axe asks to be focusable are in the tab order only while they scroll, and
    the arrow keys scroll them."""
    context, page = _new_page(browser, console, base_url=live_server.url, **PHONE)
    try:
        log_in(page)
        page.goto(url_for("memory-detail", ["pk"], everything))
        region = page.locator(".table-wrap[role=region]").first
        assert region.get_attribute("tabindex") == "0"
        assert "scrolls sideways" in region.get_attribute("aria-label")
        region.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function("() => document.activeElement.scrollLeft > 0")
        page.set_viewport_size({"width": 1280, "height": 900})
        page.wait_for_function(
            "() => document.querySelectorAll('.table-wrap[data-scroll-region]').length === 0"
        )
        assert page.locator(".table-wrap[tabindex]").count() == 0
    finally:
        context.close()


def test_states_beyond_first_load_pass_axe(browser, console, live_server, everything):  # noqa: F811
    """A new user's empty pages, a form answered with errors, every disclosure of a memory
    open, search results and a revealed review card: the states a first load never shows."""
    get_user_model().objects.create_user("newbie", "newbie@example.com", PASSWORD)
    found: dict[str, list[str]] = {}
    context, page = _new_page(browser, console, base_url=live_server.url)
    try:
        log_in(page, "newbie")
        for name, _, params in dashboard_pages():
            if not params:
                page.goto(url_for(name, params, everything))
                found[f"empty {name}"] = violations(page)
        context.clear_cookies()
        log_in(page)
        page.goto(reverse("memory-add"))
        page.evaluate(
            "() => { document.querySelector('form[aria-label=\"New memory\"]').noValidate = true; }"
        )
        page.get_by_role("button", name="Add memory").click()
        page.locator(".errorlist, [aria-invalid=true]").first.wait_for()
        found["memory-add with errors"] = violations(page)
        page.goto(url_for("memory-detail", ["pk"], everything))
        page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
        found["memory-detail, all open"] = violations(page)
        page.goto(reverse("search") + "?q=capital")
        found["search results"] = violations(page)
        page.goto(reverse("review-session", args=[everything["review"].pk]))
        page.keyboard.press("Space")
        found["review answer"] = violations(page)
    finally:
        context.close()
    failing = {name: items for name, items in found.items() if items}
    assert failing == {}, "\n".join(
        f"{name}: {item}" for name, items in failing.items() for item in items
    )
