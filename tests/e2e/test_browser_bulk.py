"""Adding and acting on memories in a real browser, keyboard only, at 1280 and 375 px (issue
17, item 6): add a memory from the nav, tick two memories on the list and forget them with a
reason after the confirmation, open the card browser and sort it by lapses; and the same
bulk action without JavaScript. The fixtures and helpers are test_browser.py's."""

from __future__ import annotations

import re

import pytest

from memories import services
from memories.models import Memory, MemoryEvent, Namespace
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

SIZES = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {
        "viewport": {"width": 375, "height": 740},
        "is_mobile": True,
        "has_touch": True,
    },
}


@pytest.fixture(params=list(SIZES))
def sized(request, browser, console, live_server):  # noqa: F811
    context, page = _new_page(browser, console, base_url=live_server.url, **SIZES[request.param])
    yield request.param, page
    context.close()
    assert console.unexpected() == [], console.unexpected()


@pytest.fixture
def library(user) -> Namespace:
    """A personal namespace with three memories, their cards lapsed 0, 5 and 2 times."""
    namespace = services.namespace_create(owner=user, name="Library", mode="personal")
    for lapses, content in enumerate(
        ["Borges wrote Ficciones.", "Calvino wrote Invisible Cities.", "Eco wrote Baudolino."]
    ):
        memory = services.memory_create(namespace=namespace, content=content, topic="books")
        Card.objects.filter(memory=memory).update(lapses=(0, 5, 2)[lapses])
    return namespace


def fits(page, width: int) -> None:
    sizes = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert sizes[0] <= sizes[1] <= width, (page.url, sizes)


def press_on(page, selector: str, key: str) -> None:
    """Focus an element (as Tab would) and press a key on it."""
    page.locator(selector).focus()
    page.keyboard.press(key)


def test_it_adds_forgets_in_bulk_and_browses_cards_by_keyboard(sized, library, user):
    size, page = sized
    width = SIZES[size]["viewport"]["width"]
    log_in(page)

    # Add a memory from the nav: the text has the focus, Tab moves on, Enter submits.
    page.get_by_role("link", name="Add memory").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/memories/add/$"))
    fits(page, width)
    assert page.evaluate("document.activeElement.name") == "content"
    page.keyboard.type("Pessoa wrote The Book of Disquiet.")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.name") == "cue"
    page.keyboard.type("Who wrote The Book of Disquiet?")
    page.keyboard.press("Tab")
    page.keyboard.type("books")
    shot(page, f"bulk-{size}-add")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/memories/\d+/$"))
    added = Memory.objects.get(content="Pessoa wrote The Book of Disquiet.")
    assert (added.cue, added.topic, added.namespace) == (
        "Who wrote The Book of Disquiet?",
        "books",
        library,
    )
    assert f"Memory #{added.pk} added to Library." in page.locator(".messages").inner_text()

    # Tick two memories on the list and forget them with a reason, after the question.
    page.get_by_role("link", name="Memories", exact=True).focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/memories/$"))
    borges = Memory.objects.get(content__startswith="Borges")
    eco = Memory.objects.get(content__startswith="Eco")
    for memory in (borges, eco):
        press_on(page, f"#select-{memory.pk}", "Space")
        assert page.locator(f"#select-{memory.pk}").is_checked()
    assert page.locator("#bulk_all_shown").evaluate("el => el.indeterminate")
    press_on(page, "#bulk_action", "ArrowDown")  # "Choose an action" -> "Forget"
    assert page.locator("#bulk_action").input_value() == "forget"
    assert page.locator("#bulk_topic").is_hidden()  # only the reason goes with forgetting
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "bulk_reason"
    # Without a reason the panel under the list says so, with fields of its own ids (the
    # same ids twice left them without labels) and the keyboard on the missing reason.
    page.keyboard.press("Enter")
    page.locator("#bulk-confirm .errorlist").wait_for()
    repeated = page.evaluate(
        "() => { const ids = [...document.querySelectorAll('[id]')].map(e => e.id);"
        " return ids.filter((id, i) => ids.indexOf(id) !== i); }"
    )
    assert repeated == []
    # The focus moves once htmx has settled the swap (20 ms after the panel appears).
    page.wait_for_function("() => document.activeElement.id === 'confirm_reason'", timeout=5000)
    focused = page.evaluate("[document.activeElement.id, document.activeElement.labels.length]")
    assert focused == ["confirm_reason", 1]
    page.keyboard.type("Read long ago")
    page.keyboard.press("Enter")
    question = page.locator("#bulk-question")
    playwright_api.expect(question).to_have_text("Forget 2 memories?")
    assert not Memory.objects.filter(status="forgotten").exists()
    # The question's answer has the focus (htmx honours autofocus in what it swaps in).
    playwright_api.expect(page.get_by_role("button", name="Forget 2 memories")).to_be_focused()
    fits(page, width)
    shot(page, f"bulk-{size}-confirm")
    with page.expect_navigation(url=re.compile(r"/memories/$")):  # a POST, then back
        page.keyboard.press("Enter")
    assert "Forgot 2 memories." in page.locator(".messages").inner_text()
    forgotten = Memory.objects.filter(status="forgotten").order_by("pk")
    assert list(forgotten) == [borges, eco]
    assert {m.forgotten_reason for m in forgotten} == {"Read long ago"}
    assert MemoryEvent.objects.filter(kind="forgotten", source="dashboard", actor=user).count() == 2
    assert page.locator(f"#select-{borges.pk}").count() == 0  # forgotten: off the list

    # The card browser, sorted by lapses.
    page.get_by_role("link", name="Cards", exact=True).focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/review/cards/$"))
    press_on(page, "#id_sort", "ArrowDown")  # due -> ease
    page.keyboard.press("ArrowDown")  # -> lapses
    page.wait_for_selector('#card-results[data-sort="lapses"]')
    page.wait_for_url(re.compile(r"sort=lapses"))
    first = page.locator("#card-results tbody tr").first
    assert "Calvino" in first.inner_text()
    assert first.locator("[data-lapses]").inner_text() == "5"
    fits(page, width)
    shot(page, f"bulk-{size}-cards-by-lapses")


def test_a_bulk_action_works_without_javascript(browser, console, live_server, library):  # noqa: F811
    context, page = _new_page(browser, console, java_script_enabled=False, base_url=live_server.url)
    try:
        log_in(page)
        page.goto("/memories/")
        calvino = Memory.objects.get(content__startswith="Calvino")
        press_on(page, f"#select-{calvino.pk}", "Space")
        press_on(page, "#bulk_action", "ArrowDown")
        page.keyboard.press("ArrowDown")  # -> Restore
        page.keyboard.press("ArrowDown")  # -> Move to topic
        assert page.locator("#bulk_action").input_value() == "move"
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.id") == "bulk_topic"
        page.keyboard.type("novels")
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"/memories/bulk$"))
        assert page.locator("#bulk-question").inner_text() == (
            "Move 1 memory to the topic “novels”?"
        )
        page.get_by_role("button", name="Move 1 memory to the topic “novels”").focus()
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"/memories/$"))
        calvino.refresh_from_db()
        assert calvino.topic == "novels"
        assert "Moved 1 memory" in page.locator(".messages").inner_text()
    finally:
        context.close()
    assert console.unexpected() == []
