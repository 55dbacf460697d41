"""Studying in a real browser, keyboard only, at 1280 and 375 px (issue 17): a cloze front
and its answer, a cue written in two keystrokes, bury and suspend from the card, a learning
step that waits and comes back, the leeches list, deck options, and bury/suspend from the
memory page. No page scrolls sideways on the phone. The fixtures and helpers are
test_browser.py's."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.models import Memory, Namespace
from review.models import Card, DeckOptions, StudySession, StudySessionItem
from review.selectors import card_front
from tests.e2e.test_browser import (  # noqa: F401 (fixtures)
    PASSWORD,
    _new_page,
    browser,
    console,
    shot,
)
from tests.e2e.test_browser_phone import PHONE, fits

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

SIZES = {"desktop": {"viewport": {"width": 1280, "height": 800}}, "phone": PHONE}
TABS = 200  # the most Tab presses to reach a control (the memory page has many)


@pytest.fixture(params=list(SIZES))
def sized(request, browser, console, live_server):  # noqa: F811
    context, page = _new_page(browser, console, base_url=live_server.url, **SIZES[request.param])
    yield request.param, page
    context.close()
    assert console.unexpected() == [], console.unexpected()


def log_in(page) -> None:
    """Log in with the keyboard: the username field has the focus (autofocus)."""
    page.goto("/accounts/login/")
    expect(page.locator("#id_username")).to_be_focused()
    page.keyboard.type("ada")
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"^https?://[^/]+/$"))  # home, not the login page again


def tab_to(page, locator, backwards: bool = False) -> None:
    """Press Tab (Shift+Tab) until the locator has the focus, as a person would."""
    locator.wait_for()
    for _ in range(TABS):
        if locator.evaluate("el => el === document.activeElement"):
            return
        page.keyboard.press("Shift+Tab" if backwards else "Tab")
    raise AssertionError(f"{TABS} Tab presses never reached {locator} on {page.url}")


def check_fits(size: str, page) -> None:
    if size == "phone":
        fits(page)


def start_studying(page, namespace: Namespace) -> None:
    """From /review/, Enter on "Study all of <namespace>"."""
    page.goto("/review/")
    tab_to(page, page.get_by_role("button", name=f"Study all of {namespace.name}"))
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/review/\d+/$"))


def counts(page) -> tuple[str, str, str]:
    progress = page.locator("[data-progress]")
    return tuple(
        progress.locator(f'[data-count="{kind}"]').inner_text().strip()
        for kind in ("new", "learning", "review")
    )


def shown_card(page) -> Card:
    return Card.objects.select_related("memory").get(
        pk=page.locator("article[data-card]").get_attribute("data-card")
    )


def make_due(*cards: Card) -> None:
    past = timezone.now() - timedelta(days=2)
    Card.objects.filter(pk__in=[card.pk for card in cards]).update(
        next_review=past, interval_days=1, repetitions=1, first_reviewed_at=past
    )


@pytest.fixture
def curie(user) -> Memory:
    """A personal namespace with a cloze front (the default) and one new card."""
    namespace = services.namespace_create(owner=user, name="Physics", mode="personal")
    assert namespace.card_front == Namespace.CardFront.CLOZE
    return services.memory_create(
        namespace=namespace, content="Marie Curie won the Nobel Prize in 1903.", topic="nobel"
    )


def test_a_cloze_front_hides_its_words_and_the_back_marks_them(sized, curie):
    size, page = sized
    namespace = curie.namespace
    hidden = card_front(curie, namespace).answers
    assert "1903" in hidden and all(hidden)
    log_in(page)
    start_studying(page, namespace)

    cue = page.locator("#cue")
    expect(cue.locator(".gap").first).to_be_visible()
    front = cue.inner_text()
    for word in hidden:
        assert word not in front, (word, front)
    assert page.locator(".gap").count() == len(hidden)
    badge = page.locator("[data-front]")
    assert badge.get_attribute("data-front") == "cloze"
    expect(badge).to_have_text("Cloze")
    check_fits(size, page)

    answer = page.locator("details.answer")
    expect(answer).to_have_js_property("open", False)
    page.keyboard.press("Space")
    expect(answer).to_have_js_property("open", True)
    marks = answer.locator(".content mark")
    expect(marks).to_have_text(hidden)
    expect(answer.locator(".content")).to_contain_text("Marie Curie won the Nobel Prize")
    check_fits(size, page)
    shot(page, f"study-{size}-cloze-back")


def test_c_writes_a_cue_in_two_keystrokes(sized, curie):
    size, page = sized
    log_in(page)
    start_studying(page, curie.namespace)
    editor = page.locator("details.cue-edit")
    expect(editor).to_have_js_property("open", False)

    page.keyboard.press("c")
    expect(editor).to_have_js_property("open", True)
    field = page.locator(f"#cue-{shown_card(page).pk}")
    expect(field).to_be_focused()
    check_fits(size, page)
    page.keyboard.type("Who won the Nobel Prize in 1903?")
    page.keyboard.press("Enter")

    cue = page.locator("#cue")
    expect(cue).to_have_text("Who won the Nobel Prize in 1903?")
    expect(page.locator("[data-front]")).to_have_attribute("data-front", "cue")
    expect(page.locator("details.cue-edit")).to_have_js_property("open", False)
    curie.refresh_from_db()
    assert curie.cue == "Who won the Nobel Prize in 1903?"
    # The card is still the one to answer: Space shows the whole memory.
    page.keyboard.press("Space")
    expect(page.locator("details.answer")).to_have_js_property("open", True)
    expect(page.locator("details.answer .content")).to_have_text(
        "Marie Curie won the Nobel Prize in 1903."
    )
    check_fits(size, page)
    shot(page, f"study-{size}-cue")


@pytest.fixture
def three(user) -> Namespace:
    """Two cards due for review and one new card."""
    namespace = services.namespace_create(owner=user, name="Rivers", mode="personal")
    memories = [
        services.memory_create(namespace=namespace, content=content, topic="rivers")
        for content in (
            "The Nile flows into the Mediterranean.",
            "The Danube flows into the Black Sea.",
            "The Amazon flows into the Atlantic.",
        )
    ]
    make_due(*(Card.objects.get(memory=memory) for memory in memories[:2]))
    return namespace


def test_minus_buries_and_at_suspends_the_shown_card(sized, three):
    size, page = sized
    log_in(page)
    start_studying(page, three)
    assert counts(page) == ("1", "0", "2")

    first = shown_card(page)
    assert first.next_review is not None  # a review card comes first
    page.keyboard.press("-")
    messages = page.locator("#messages")
    expect(messages).to_contain_text("Card buried: it comes back tomorrow.")
    expect(page.locator("article[data-card]")).not_to_have_attribute("data-card", str(first.pk))
    first.refresh_from_db()
    assert first.buried_until is not None and first.buried_until > timezone.now()
    assert first.suspended_at is None
    assert counts(page) == ("1", "0", "1")
    check_fits(size, page)

    second = shown_card(page)
    page.keyboard.press("@")
    expect(messages).to_contain_text("Card suspended: it stays out of review until unsuspended.")
    expect(page.locator("article[data-card]")).not_to_have_attribute("data-card", str(second.pk))
    second.refresh_from_db()
    assert second.suspended_at is not None and second.buried_until is None
    assert counts(page) == ("1", "0", "0")
    expect(page.locator(".badge-new")).to_be_visible()  # the new card is left
    assert "0 of 1 done" in page.locator("[data-progress]").inner_text()
    check_fits(size, page)
    shot(page, f"study-{size}-set-aside")

    # Neither is graded, and the session no longer holds them.
    session = StudySession.objects.get()
    assert set(session.items.values_list("card_id", flat=True)) == {
        Card.objects.get(memory__content__startswith="The Amazon").pk
    }
    assert not session.review_logs.exists()


def test_a_learning_step_waits_then_comes_back(sized, user):
    size, page = sized
    namespace = services.namespace_create(
        owner=user, name="Chemistry", mode="personal", scheduler="fsrs"
    )
    memory = services.memory_create(
        namespace=namespace, content="The symbol of tungsten is W.", topic="elements"
    )
    card = Card.objects.get(memory=memory)
    assert card.scheduler == "fsrs" and card.next_review is None
    log_in(page)
    start_studying(page, namespace)
    expect(page.locator(".badge-new")).to_be_visible()

    page.keyboard.press("Space")
    expect(page.locator("details.answer")).to_have_js_property("open", True)
    page.keyboard.press("3")  # Good: a learning step, minutes away
    waiting = page.locator("[data-waiting]")
    expect(waiting).to_contain_text("Next card in")
    countdown = waiting.locator("[data-countdown]")
    expect(countdown).to_be_visible()
    assert int(countdown.get_attribute("data-countdown")) > 60
    expect(countdown).to_have_text(re.compile(r"\d+ min \d+ s"))  # engram.js counts down
    assert page.locator("[data-summary]").count() == 0
    assert counts(page) == ("0", "1", "0")
    session = StudySession.objects.get()
    assert session.status == StudySession.Status.ACTIVE
    item = StudySessionItem.objects.get(session=session)
    assert item.due_at is not None and item.due_at > timezone.now()
    assert not item.done
    check_fits(size, page)
    shot(page, f"study-{size}-waiting")

    # The step falls due (the session item's due_at decides); "Check again" shows it.
    past = timezone.now() - timedelta(seconds=5)
    StudySessionItem.objects.filter(pk=item.pk).update(due_at=past)
    Card.objects.filter(pk=card.pk).update(next_review=past)
    tab_to(page, page.get_by_role("link", name="Check again"))
    page.keyboard.press("Enter")
    answer = page.locator("details.answer")
    answer.wait_for(state="attached")
    expect(page.locator(".badge-repeat")).to_have_text("Learning")
    assert shown_card(page) == card
    check_fits(size, page)

    # Good or Easy graduates it (FSRS's last step); the session finishes.
    for _ in range(3):
        if page.locator("[data-summary]").count():
            break
        if page.locator("[data-waiting]").count():
            StudySessionItem.objects.filter(session=session).update(due_at=past)
            tab_to(page, page.get_by_role("link", name="Check again"))
            page.keyboard.press("Enter")
            page.locator("details.answer").wait_for(state="attached")
        page.keyboard.press("Space")
        expect(page.locator("details.answer")).to_have_js_property("open", True)
        page.keyboard.press("3")
        expect(page.locator("[data-summary], [data-waiting]")).to_be_visible()
    summary = page.locator("[data-summary]")
    expect(summary).to_contain_text("Session complete")
    session.refresh_from_db()
    assert session.status == StudySession.Status.FINISHED
    card.refresh_from_db()
    assert card.next_review - timezone.now() >= timedelta(days=1)
    check_fits(size, page)
    shot(page, f"study-{size}-learning-done")


def test_a_leech_goes_back_to_review(sized, three):
    size, page = sized
    leech = Card.objects.get(memory__content__startswith="The Danube")
    Card.objects.filter(pk=leech.pk).update(leech=True, lapses=8, suspended_at=timezone.now())
    log_in(page)
    page.goto("/review/")
    link = page.get_by_role("link", name="Leeches (1)")
    expect(link).to_be_visible()
    check_fits(size, page)
    tab_to(page, link)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/review/leeches/$"))
    row = page.locator(f'[data-leech="{leech.pk}"]')
    expect(row).to_contain_text("The Danube flows into the Black Sea.")
    expect(row).to_contain_text("lapsed 8 times")
    check_fits(size, page)
    shot(page, f"study-{size}-leeches")

    tab_to(page, row.get_by_role("button", name=re.compile(r"^Back to review")))
    page.keyboard.press("Enter")
    expect(page.locator("#messages")).to_contain_text("Back in review")
    expect(page.locator(".empty")).to_contain_text("No leeches")
    assert page.url.endswith("/review/leeches/")
    leech.refresh_from_db()
    assert (leech.leech, leech.suspended_at, leech.lapses) == (False, None, 0)
    check_fits(size, page)
    page.goto("/review/")
    expect(page.get_by_role("link", name="Leeches", exact=True)).to_be_visible()


def test_deck_options_set_and_clear_a_decks_new_cards_a_day(sized, three):
    size, page = sized
    log_in(page)
    page.goto(reverse("namespace-detail", args=[three.slug]))
    check_fits(size, page)
    tab_to(page, page.get_by_role("link", name="deck options"))
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/review/decks/{three.slug}/$"))
    row = page.locator('tr[data-deck="rivers"]')
    expect(row.locator("[data-new-today]")).to_have_text("1")
    check_fits(size, page)

    field = row.get_by_label("New cards per day for rivers")
    tab_to(page, field)
    page.keyboard.type("1")
    page.keyboard.press("Enter")
    messages = page.locator("#messages")
    expect(messages).to_contain_text("rivers: 1 new card a day.")
    options = DeckOptions.objects.get(namespace=three, topic="rivers")
    assert options.new_cards_per_day == 1
    expect(field).to_have_value("1")
    check_fits(size, page)
    shot(page, f"study-{size}-deck-options")

    # Empty again: the deck inherits the namespace's limit (the row goes).
    tab_to(page, field)
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.press("Backspace")
    page.keyboard.press("Enter")
    expect(messages).to_contain_text(
        f"rivers: the namespace's {three.new_cards_per_day} new card"
        f"{'' if three.new_cards_per_day == 1 else 's'} a day."
    )
    assert not DeckOptions.objects.filter(namespace=three).exists()
    expect(field).to_have_value("")
    expect(row).to_contain_text(f"inherits {three.new_cards_per_day}")


def test_the_memory_page_suspends_and_unsuspends_its_card(sized, three):
    size, page = sized
    memory = Memory.objects.get(content__startswith="The Nile")
    card = Card.objects.get(memory=memory)
    log_in(page)
    url = reverse("memory-detail", args=[memory.pk])
    page.goto(url)
    schedule = page.locator("section[aria-labelledby=schedule-heading]")
    state = schedule.locator("[data-card-state]")
    expect(state).to_have_text("in review")
    expect(
        schedule.get_by_role("button", name="Bury until tomorrow: this memory's card")
    ).to_be_visible()
    check_fits(size, page)

    tab_to(page, schedule.get_by_role("button", name="Suspend: this memory's card"))
    page.keyboard.press("Enter")
    expect(page.locator("#messages")).to_contain_text("Card suspended")
    assert page.url.endswith(url)
    expect(state).to_contain_text("suspended")
    unsuspend = schedule.get_by_role("button", name="Unsuspend: this memory's card")
    expect(unsuspend).to_be_visible()
    expect(schedule.get_by_role("button", name=re.compile(r"^(Bury|Suspend)"))).to_have_count(0)
    card.refresh_from_db()
    assert card.suspended_at is not None
    check_fits(size, page)
    shot(page, f"study-{size}-memory-suspended")

    tab_to(page, unsuspend)
    page.keyboard.press("Enter")
    expect(page.locator("#messages")).to_contain_text("Card unsuspended")
    assert page.url.endswith(url)
    expect(state).to_have_text("in review")
    card.refresh_from_db()
    assert card.suspended_at is None
    check_fits(size, page)


def test_focus_moved_before_a_swap_settles_stays_where_it_was_put(sized, three):
    """htmx settles a swap 20 ms after it (longer on a busy phone), and the settle puts the
    focus on the new card. A key pressed in between (here: focus on the next card's "Forget…")
    keeps its place; CI once caught the settle pulling it back. The settle is slowed to 1.5 s
    to make the gap wide enough to act in."""
    _, page = sized
    log_in(page)
    start_studying(page, three)
    page.evaluate("() => { htmx.config.defaultSettleDelay = 1500; }")
    first = shown_card(page)
    page.keyboard.press("Space")
    page.keyboard.press("3")
    expect(page.locator("article[data-card]")).not_to_have_attribute("data-card", str(first.pk))
    summary = page.locator(".card-tools details summary")
    summary.focus()
    page.wait_for_timeout(2000)  # the settle has run
    expect(summary).to_be_focused()
    # With nothing done in between, the settle still gives the new card the focus.
    second = shown_card(page)
    page.locator("article[data-card]").focus()
    page.keyboard.press("Space")
    page.keyboard.press("3")
    expect(page.locator("article[data-card]")).not_to_have_attribute("data-card", str(second.pk))
    expect(page.locator("article[data-card]")).to_be_focused(timeout=5000)


def test_the_keyboard_help_and_the_cue_editor_give_the_card_its_keys_back(sized, three):
    """ "?" opens the help and "?" or Escape closes it; Escape closes the cue editor, even
    from its field. Either way the focus goes back to the card, so Space shows the answer
    and 1-4 grade: left on the help's summary, Space only reopened the help."""
    size, page = sized
    log_in(page)
    start_studying(page, three)
    help_ = page.locator("#keyboard-help")
    answer = page.locator("details.answer")
    for close in ("?", "Escape"):
        page.keyboard.press("?")
        expect(help_).to_have_js_property("open", True)
        page.keyboard.press(close)
        expect(help_).to_have_js_property("open", False)
        page.keyboard.press("Space")
        expect(answer).to_have_js_property("open", True)
        first = shown_card(page)
        page.keyboard.press("3")
        expect(page.locator("article[data-card]")).not_to_have_attribute("data-card", str(first.pk))
        answer = page.locator("details.answer")

    editor = page.locator("details.cue-edit")
    page.keyboard.press("c")
    expect(editor).to_have_js_property("open", True)
    page.keyboard.type("half a cue")
    page.keyboard.press("Escape")
    expect(editor).to_have_js_property("open", False)
    page.keyboard.press("Space")
    expect(page.locator("details.answer")).to_have_js_property("open", True)

    # Any other disclosure ("Forget…") closes on Escape from inside it, the focus back on
    # its summary (it stayed open: only the help and the cue editor answered to Escape).
    forget = page.locator(".card-tools details")
    forget.locator("summary").click()
    page.locator(".card-tools input[name=reason]").focus()
    page.keyboard.press("Escape")
    expect(forget).to_have_js_property("open", False)
    expect(forget.locator("summary")).to_be_focused()
    check_fits(size, page)
