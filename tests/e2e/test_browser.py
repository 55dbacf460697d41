"""The dashboard in a real browser: Debian's Chromium driven by Playwright against the live
test server. Each test fails on any console error; screenshots of every page land in
test-artifacts/screenshots/ (git-ignored) for people to look at."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from memories import services
from memories.models import ApiToken, Namespace
from review.models import Card, ReviewLog, StudySession
from review.services import card_ensure

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = Path(settings.BASE_DIR) / "test-artifacts" / "screenshots"
PASSWORD = "pw-ada-12345"  # tests/conftest.py's user
TIMEOUT_MS = 15_000


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    # Playwright's sync API runs an event loop in this thread; the ORM calls of the tests
    # are still synchronous, so Django's async-safety check must stand aside.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = playwright_api.sync_playwright().start()
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM,
        headless=True,
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
        ],
    )
    yield browser
    browser.close()
    playwright.stop()
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


class Console:
    """Console errors and uncaught exceptions of a page; `allow` lists expected ones."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.allow: list[re.Pattern[str]] = []

    def unexpected(self) -> list[str]:
        return [e for e in self.errors if not any(p.search(e) for p in self.allow)]


@pytest.fixture
def console() -> Console:
    return Console()


def _new_page(browser, console: Console, **context_options):
    context = browser.new_context(**context_options)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.on("console", lambda msg: msg.type == "error" and console.errors.append(msg.text))
    page.on("pageerror", lambda error: console.errors.append(f"uncaught: {error}"))
    return context, page


@pytest.fixture
def page(browser, console, live_server):
    context, page = _new_page(
        browser, console, viewport={"width": 1280, "height": 900}, base_url=live_server.url
    )
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    yield page
    context.close()
    assert console.unexpected() == [], console.unexpected()


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def log_in(page, username: str = "ada", password: str = PASSWORD) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/$"))


def stat(page, name: str) -> str:
    return page.locator(f'#stats [data-stat="{name}"]').inner_text().strip()


@pytest.fixture
def study(user) -> Namespace:
    """A personal namespace with three cards due and two decks."""
    namespace = services.namespace_create(owner=user, name="Study", mode="personal")
    past = timezone.now() - timedelta(days=2)
    facts = [
        ("geo", "Paris is the capital of France."),
        ("geo", "Canberra is the capital of Australia."),
        ("art", "The Night Watch was painted by Rembrandt."),
    ]
    for topic, content in facts:
        memory = services.memory_create(namespace=namespace, content=content, topic=topic)
        card = card_ensure(memory=memory)
        Card.objects.filter(pk=card.pk).update(
            next_review=past, interval_days=1, repetitions=1, first_reviewed_at=past
        )
    return namespace


def test_it_logs_in_and_reviews_three_due_cards_with_the_keyboard(page, study, user):
    page.goto("/")
    page.wait_for_url(re.compile(r"/accounts/login/"))
    shot(page, "login")
    log_in(page)
    assert stat(page, "due-today") == "3"
    assert stat(page, "reviews-today") == "0"
    shot(page, "home")
    # "?" opens the keyboard help from anywhere, and closes it again.
    help_ = page.locator("#keyboard-help")
    page.keyboard.press("?")
    assert help_.evaluate("el => el.open")
    assert "Again, Hard, Good, Easy" in help_.inner_text()
    page.keyboard.press("?")
    assert not help_.evaluate("el => el.open")

    page.get_by_role("button", name="Study all of Study").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/review/\d+/$"))
    progress = page.locator("[data-progress]")
    for number in (1, 2, 3):
        assert f"{number - 1} of 3 done" in progress.inner_text()
        answer = page.locator("details.answer")
        assert not answer.evaluate("el => el.open")
        if number == 1:
            shot(page, "review-question")
        page.keyboard.press("Space")
        assert answer.evaluate("el => el.open")
        if number == 1:
            shot(page, "review-answer")
        page.keyboard.press("3")  # Good
        if number < 3:
            playwright_api.expect(progress).to_contain_text(f"{number} of 3 done")
    summary = page.locator("[data-summary]")
    summary.wait_for()
    assert summary.locator('[data-stat="reviews-today"]').inner_text() == "3"
    assert summary.locator('[data-stat="due-today"]').inner_text() == "0"
    shot(page, "review-summary")
    assert ReviewLog.objects.filter(undone_at__isnull=True, user=user).count() == 3

    # Undo the last grade: the card comes back, and its schedule is restored.
    page.keyboard.press("u")
    page.locator("details.answer").wait_for()
    assert "2 of 3 done" in progress.inner_text()
    undone = ReviewLog.objects.get(undone_at__isnull=False)
    assert Card.objects.get(pk=undone.card_id).next_review < timezone.now()
    page.keyboard.press("Enter")
    page.keyboard.press("4")  # Easy this time
    summary.wait_for()

    page.goto("/")
    assert stat(page, "reviews-today") == "3"
    assert stat(page, "due-today") == "0"
    assert stat(page, "streak") == "1"
    shot(page, "home-after-review")


def test_it_crams_a_deck_without_touching_the_schedule(page, study, user):
    before = list(Card.objects.order_by("pk").values())
    logs = ReviewLog.objects.count()
    log_in(page)
    page.goto("/cram/")
    shot(page, "cram-index")
    page.get_by_role("button", name="Cram geo").click()
    page.wait_for_url(re.compile(r"/cram/\d+/$"))
    progress = page.locator("[data-progress]")
    assert progress.inner_text() == "Card 1 of 2"
    shot(page, "cram-question")
    page.keyboard.press("Space")
    shot(page, "cram-answer")
    page.keyboard.press("2")  # correct
    page.wait_for_function(
        "() => document.querySelector('[data-progress]').innerText === 'Card 2 of 2'"
    )
    page.keyboard.press("Space")
    page.keyboard.press("1")  # incorrect
    score = page.locator("[data-score]")
    score.wait_for()
    assert score.inner_text() == "1/2"
    assert page.locator('[data-deck-score="geo"]').inner_text().split() == ["geo", "1", "2", "2"]
    shot(page, "cram-score")

    assert list(Card.objects.order_by("pk").values()) == before
    assert ReviewLog.objects.count() == logs
    session = StudySession.objects.get(mode=StudySession.Mode.CRAM)
    assert session.status == StudySession.Status.FINISHED


def test_it_searches_as_you_type_and_opens_a_result(page, user):
    namespace = services.namespace_create(owner=user, name="Work", mode="agent_memory")
    services.memory_create(
        namespace=namespace,
        content="The project uses PostgreSQL 15 in production.",
        topic="project",
        keywords=["database"],
    )
    services.memory_create(namespace=namespace, content="Deploys happen on Tuesdays.", topic="ops")
    log_in(page)
    page.goto("/search/")
    page.locator("input[name=q]").press_sequentially("postgresql production", delay=30)
    result = page.locator("[data-result]").first
    result.wait_for()
    page.wait_for_url(re.compile(r"q=postgresql(\+|%20)production"))
    assert page.locator("[data-result] mark").count() >= 2
    assert page.locator('[data-stage="Sf"]').is_visible()
    shot(page, "search")

    shared = page.url
    page.goto(shared)  # the URL alone reproduces the search
    page.locator("[data-result]").first.wait_for()

    page.locator("[data-result] h3 a").first.click()
    page.wait_for_url(re.compile(r"/memories/\d+/$"))
    assert "PostgreSQL 15" in page.locator("[data-content]").inner_text()
    assert page.locator("svg.plot-curve").count() == 1
    shot(page, "memory-detail")


def test_it_supersedes_the_older_of_two_conflicting_results(page, user):
    namespace = services.namespace_create(owner=user, name="Work", mode="agent_memory")
    old = services.memory_create(
        namespace=namespace,
        content="The release deadline is May 5",
        topic="release",
        created_at=timezone.now() - timedelta(days=2),
    )
    new = services.memory_create(
        namespace=namespace, content="Release deadline moved: May 12 now", topic="release"
    )
    log_in(page)
    page.set_viewport_size({"width": 375, "height": 740})  # a phone first
    page.goto("/search/?q=release+deadline")
    older = page.locator(f'[data-result="{old.pk}"]')
    assert f"(memory {new.pk}, newer): different numbers" in older.inner_text()
    button = older.get_by_role("button", name=f"Supersede memory {old.pk} with {new.pk}")
    assert button.is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    shot(page, "phone-search-conflict")

    page.set_viewport_size({"width": 1280, "height": 900})
    button.focus()
    page.keyboard.press("Enter")
    page.locator(".message-success").wait_for()
    assert page.locator(".message-success").inner_text() == (
        f"Memory #{old.pk} superseded by memory #{new.pk}."
    )
    assert "q=release" in page.url
    assert page.locator(f'[data-result="{old.pk}"]').count() == 0
    assert page.locator(f'[data-result="{new.pk}"]').count() == 1
    shot(page, "search-superseded")

    page.goto(f"/memories/{old.pk}/")
    superseded = page.locator("[data-superseded]")
    assert f"by memory #{new.pk}" in superseded.inner_text()
    shot(page, "memory-superseded")
    superseded.get_by_role("link", name=f"memory #{new.pk}").click()
    page.wait_for_url(re.compile(rf"/memories/{new.pk}/$"))


def test_it_merges_a_memorys_near_duplicates_by_keyboard_and_on_a_phone(page, user):
    namespace = services.namespace_create(owner=user, name="Work", mode="agent_memory")
    kept = services.memory_create(
        namespace=namespace,
        content="User lives in Paris.",
        created_at=timezone.now() - timedelta(days=2),
    )
    again = services.memory_create(namespace=namespace, content="The user lives in Paris.")
    services.memory_create(namespace=namespace, content="User lives in Berlin.")
    log_in(page)
    page.set_viewport_size({"width": 390, "height": 844})  # a phone first
    page.goto(f"/memories/{kept.pk}/")
    card = page.locator("[data-near-duplicates]")
    assert card.locator("[data-near-duplicate]").count() == 1
    assert (
        "The user lives in Paris."
        in card.locator(f'[data-near-duplicate="{again.pk}"]').inner_text()
    )
    button = card.get_by_role("button", name="Merge 1 into this memory")
    button.scroll_into_view_if_needed()
    assert button.is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "phone-memory-near-duplicates")

    page.set_viewport_size({"width": 1280, "height": 900})
    button.focus()
    page.keyboard.press("Enter")
    page.locator(".message-success").wait_for()
    assert page.locator(".message-success").inner_text() == (
        f"Merged 1 memory into memory #{kept.pk}."
    )
    page.wait_for_url(re.compile(rf"/memories/{kept.pk}/$"))
    assert page.locator("[data-near-duplicates]").count() == 0
    shot(page, "memory-merged")
    again.refresh_from_db()
    assert again.valid_until is not None

    page.goto(f"/memories/{again.pk}/")  # its page and history stay
    assert page.locator("[data-superseded]").count() == 1
    assert "Merged" in page.locator("table.data").inner_text()


def _api_status(url: str, secret: str) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {secret}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            json.load(response)
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_it_creates_a_token_uses_it_and_revokes_it(page, live_server, user, console):
    services.namespace_create(owner=user, name="Agent", mode="agent_memory")
    log_in(page)
    page.goto("/tokens/")
    page.fill("#id_name", "agent-42")
    page.get_by_label("Agent").check()
    page.select_option("#id_access", "write")
    page.get_by_role("button", name="Create token").click()
    secret_box = page.locator("[data-secret]")
    secret_box.wait_for()
    secret = secret_box.inner_text().strip()
    assert secret.startswith("eng_")
    page.get_by_role("button", name="Copy").click()
    page.get_by_role("button", name="Copied ✓").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    shot(page, "token-created")

    memories_url = f"{live_server.url}/api/v1/memories"
    assert _api_status(memories_url, secret) == 200
    page.goto("/tokens/")
    assert page.locator("[data-secret]").count() == 0  # shown once only
    assert re.search(r"ago|just now", page.locator("[data-token]").first.inner_text())  # used

    # Revoking asks first: the first click only opens the question, by keyboard too.
    page.locator("[data-token] summary").first.focus()
    page.keyboard.press("Enter")
    assert _api_status(memories_url, secret) == 200  # nothing revoked yet
    page.get_by_role("button", name=re.compile(r"^Revoke agent-42 \(eng_[0-9a-f]+\)$")).click()
    page.locator("[data-token] .badge-bad").wait_for()
    shot(page, "tokens")
    assert _api_status(memories_url, secret) == 401


def test_a_second_user_cannot_open_the_first_users_memory(page, user, other_user, console):
    namespace = services.namespace_create(owner=user, name="Private", mode="personal")
    memory = services.memory_create(namespace=namespace, content="Ada's secret plan.")
    log_in(page, "bob", "pw-bob-12345")
    console.allow.append(re.compile(r"status of 404"))
    response = page.goto(f"/memories/{memory.pk}/")
    assert response.status == 404
    assert "secret plan" not in page.content()
    shot(page, "not-found")
    for url in (f"/memories/{memory.pk}/edit", f"/namespaces/{namespace.slug}/"):
        assert page.goto(url).status == 404


def test_every_page_renders_without_console_errors(page, study, user):
    memory = study.memories.first()
    services.token_create(owner=user, name="ci", namespaces=[study], access="read")
    log_in(page)
    pages = {
        "memories": "/memories/",
        "memories-filtered": "/memories/?topic=geo&sort=uses",
        "memory-edit": f"/memories/{memory.pk}/edit",
        "namespaces": "/namespaces/",
        "namespace": f"/namespaces/{study.slug}/",
        "review-index": "/review/",
        "password": "/accounts/password_change/",
    }
    for name, url in pages.items():
        response = page.goto(url)
        assert response.status == 200, url
        shot(page, name)
    # The filters update the list as one types, and the URL follows.
    page.goto("/memories/")
    page.locator("#id_q").press_sequentially("capital", delay=30)
    page.wait_for_url(re.compile(r"q=capital"))
    page.wait_for_function("() => document.querySelectorAll('[data-memory]').length === 2")


def test_it_fits_a_phone(browser, console, live_server, study):
    context, page = _new_page(
        browser,
        console,
        viewport={"width": 375, "height": 740},
        base_url=live_server.url,
        is_mobile=True,
        has_touch=True,
    )
    try:
        log_in(page)
        for name, url in (("phone-home", "/"), ("phone-memories", "/memories/")):
            page.goto(url)
            assert page.evaluate("document.documentElement.scrollWidth") <= 375, url
            shot(page, name)
        page.goto("/review/")
        page.get_by_role("button", name="Study all of Study").click()
        page.get_by_text("Show answer").click()
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        shot(page, "phone-review")
    finally:
        context.close()
    assert console.unexpected() == []


def test_it_works_without_javascript(browser, console, live_server, study):
    context, page = _new_page(browser, console, java_script_enabled=False, base_url=live_server.url)
    try:
        log_in(page)
        page.get_by_role("link", name="Memories").click()
        page.wait_for_url(re.compile(r"/memories/$"))
        page.fill("#id_q", "capital")
        page.get_by_role("button", name="Filter").click()
        page.wait_for_url(re.compile(r"q=capital"))
        assert page.locator("[data-memory]").count() == 2
        page.get_by_role("link", name="Review").click()
        page.get_by_role("button", name="Study all of Study").click()
        page.get_by_text("Show answer").click()  # <details> needs no script
        page.get_by_role("button", name=re.compile(r"^Good")).click()
        page.wait_for_url(re.compile(r"/review/\d+/$"))
        progress = page.locator("[data-progress]")
        assert "1 of 3 done" in progress.inner_text()
        # Good on a review card sends it away for days: two review cards are left, no new
        # or learning ones.
        counts = {
            kind: progress.locator(f'[data-count="{kind}"]').inner_text()
            for kind in ("new", "learning", "review")
        }
        assert counts == {"new": "0", "learning": "0", "review": "2"}
    finally:
        context.close()
    assert ReviewLog.objects.count() == 1
    assert console.unexpected() == []


def test_paging_by_keyboard_keeps_the_focus_in_the_results(page, user):
    """Enter on "Next →" swaps the results (htmx) and removes the link: the focus goes to
    the new results, not back to the top of the page."""
    namespace = services.namespace_create(owner=user, name="Pages", mode="personal")
    from tests.support.dashboard import add_memories

    add_memories(namespace, user, 30)
    log_in(page)
    page.goto("/memories/")
    page.get_by_role("link", name="Next →").first.focus()
    page.keyboard.press("Enter")
    page.get_by_text("Page 2 of 2").first.wait_for()
    page.wait_for_function("document.activeElement !== document.body")
    assert page.evaluate("document.activeElement.id") == "memory-results"


def test_an_expired_session_sends_an_htmx_action_to_the_login_page(page, user):
    """The session ends while the list is open: "Next →" (an htmx request) takes the whole
    page to the login form, and signing in comes back to the page, not to a fragment; the
    login page is never swapped into the list."""
    namespace = services.namespace_create(owner=user, name="Pages", mode="personal")
    from tests.support.dashboard import add_memories

    add_memories(namespace, user, 30)
    log_in(page)
    page.goto("/memories/?sort=newest")
    page.context.clear_cookies(name="sessionid")
    page.get_by_role("link", name="Next →").first.click()
    page.wait_for_url(re.compile(r"/accounts/login/\?next="))
    assert page.locator("h1").count() == 1 and page.locator("footer").count() == 1
    page.fill("#id_username", "ada")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/memories/\?sort=newest$"))


def test_a_refused_htmx_form_says_so_and_saves_nothing(page, user, console):
    """A form whose CSRF token went stale (another tab signed out and in; cookies cleared)
    is refused with a 403: the page says so in an alert, where before nothing happened."""
    services.namespace_create(owner=user, name="Personal", mode="personal")
    log_in(page)
    page.goto("/tokens/")
    page.context.clear_cookies(name="csrftoken")
    page.fill("#id_name", "stale")
    page.get_by_label("All namespaces").check()
    page.get_by_role("button", name="Create token").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("Nothing was saved. Reload the page")
    assert not ApiToken.objects.filter(name="stale").exists()
    console.allow.append(re.compile(r"403"))
    # The next request that goes through takes the alert away.
    page.reload()
    expect(page.get_by_role("alert")).to_have_count(0)


def test_an_htmx_swap_never_applies_an_inline_style(page, user, console):
    """htmx settles an element that keeps its id across a swap by copying its old
    attributes onto the new one; a `style` set from script (the CSSOM, which the policy
    allows) was copied with setAttribute, which the Content-Security-Policy refuses: a
    console error. Only class, width and height are settled."""
    namespace = services.namespace_create(owner=user, name="Pages", mode="personal")
    from tests.support.dashboard import add_memories

    add_memories(namespace, user, 30)
    log_in(page)
    page.goto("/memories/")
    page.evaluate("document.getElementById('memory-results').style.outline = '1px solid'")
    page.get_by_role("link", name="Next →").first.click()
    page.get_by_text("Page 2 of 2").first.wait_for()
    page.wait_for_timeout(200)  # past htmx's settle delay
    assert [e for e in console.errors if "inline style" in e] == []
