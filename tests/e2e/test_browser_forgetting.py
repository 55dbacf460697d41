"""The about-to-forget digest in a real browser, keyboard only, with and without JavaScript
(issue 19, item 3): from the home page's "N memories will be forgotten by ..." to the
digest, then Keep, Review now and Let go on one memory each, and Keep, Review now and Let
go (after its question) for all the rest. The fixtures and helpers are test_browser.py's."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from memories import services
from memories.models import Memory, Namespace
from review.models import Card
from tests.e2e.test_browser import (  # noqa: F401 (fixtures)
    _new_page,
    browser,
    console,
    log_in,
    shot,
)

playwright_api = pytest.importorskip("playwright.sync_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

DIGEST = re.compile(r"/memories/forgetting/$")


@pytest.fixture(params=["javascript", "no-javascript"])
def keyboard_page(request, browser, console, live_server):  # noqa: F811
    context, page = _new_page(
        browser,
        console,
        base_url=live_server.url,
        viewport={"width": 1280, "height": 900},
        java_script_enabled=request.param == "javascript",
    )
    yield request.param, page
    context.close()
    assert console.unexpected() == [], console.unexpected()


@pytest.fixture
def fading(user) -> list[Memory]:
    """Six memories of a personal namespace last used 10 to 11.5 days ago: decay forgets
    them in 1.5 to 3 days (the digest's window is 3), the oldest first."""
    namespace = services.namespace_create(owner=user, name="Garden", mode=Namespace.Mode.PERSONAL)
    memories = []
    for i in range(6):
        memory = services.memory_create(
            namespace=namespace, content=f"The rose bed number {i} needs water.", topic="garden"
        )
        Memory.objects.filter(pk=memory.pk).update(
            last_used_at=timezone.now() - timedelta(days=11.5 - i * 0.3)
        )
        memories.append(memory)
    Card.objects.filter(memory__in=memories).update(next_review=timezone.now() + timedelta(days=20))
    return memories


def press(page, name: str) -> None:
    """Focus the button (as Tab would), press Enter on it and wait for the page it posts
    to (every action is a plain form: the answer is a redirect or a page)."""
    page.get_by_role("button", name=name, exact=True).focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")


def message(page) -> str:
    return page.locator(".messages").inner_text()


def test_keep_review_now_and_let_go_by_keyboard(keyboard_page, fading, user):
    mode, page = keyboard_page
    log_in(page)
    heading = page.get_by_role("heading", name=re.compile("6 memories will be forgotten by"))
    assert heading.is_visible()
    page.get_by_role("link", name="Keep or let go").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(DIGEST)
    assert "6 memories will be forgotten by" in page.locator("h2#digest-heading").inner_text()
    shot(page, f"forgetting-{mode}-digest")
    first, second, third, *rest = fading

    press(page, f"Keep memory #{first.pk}")
    page.wait_for_url(DIGEST)
    assert "Boosted: one more use" in message(page)
    first.refresh_from_db()
    assert first.use_count == 1
    assert "5 memories will be forgotten by" in page.content()

    press(page, f"Review memory #{second.pk} now")
    page.wait_for_url(DIGEST)
    assert "1 card due now." in message(page)
    assert Card.objects.get(memory=second).next_review <= timezone.now()

    press(page, f"Let go of memory #{third.pk}")
    page.wait_for_url(DIGEST)
    assert "Memory forgotten." in message(page)
    third.refresh_from_db()
    assert (third.status, third.forgotten_reason) == ("forgotten", "let go: about to be forgotten")
    # `second` is still listed: a card due now does not keep it, a good review will.
    assert "4 memories will be forgotten by" in page.content()

    press(page, "Review these 4 now")
    page.wait_for_url(DIGEST)
    assert "4 cards due now." in message(page)
    assert Card.objects.filter(memory__in=rest, next_review__lte=timezone.now()).count() == 3

    # Let go of all asks first; Cancel goes back, and nothing was forgotten.
    press(page, "Let go of these 4…")
    page.get_by_role("heading", name="Forget 4 memories?").wait_for()
    shot(page, f"forgetting-{mode}-let-go-question")
    assert Memory.objects.filter(status="forgotten").count() == 1
    page.get_by_role("link", name="Cancel").focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.wait_for_url(DIGEST)

    press(page, "Keep these 4")
    page.wait_for_url(DIGEST)
    assert "Kept 4 memories" in message(page)
    assert "Nothing will be forgotten by" in page.content()
    assert all(
        m.use_count == 1 for m in Memory.objects.filter(pk__in=[second.pk, *[r.pk for r in rest]])
    )
    shot(page, f"forgetting-{mode}-kept")

    # Let go of all, confirmed: bring two back into the window first.
    Memory.objects.filter(pk__in=[r.pk for r in rest[:2]]).update(
        last_used_at=timezone.now() - timedelta(days=20), use_count=0
    )
    page.goto("/memories/forgetting/")
    press(page, "Let go of these 2…")
    page.get_by_role("button", name="Forget 2 memories").wait_for()
    press(page, "Forget 2 memories")
    page.wait_for_url(DIGEST)
    assert "Forgot 2 memories." in message(page)
    assert Memory.objects.filter(status="forgotten").count() == 3
