"""The dashboard on a 375 px phone (issue 17, part 12): no page scrolls sideways (tables and
plots scroll inside their card), the "Space" hint on "Show answer" can be read, and a
memory's history reads like prose, not Python. The fixtures and helpers are
test_browser.py's."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from memories import services
from memories.models import Memory, MemoryEvent
from memories.services import webhooks as hooks
from review import services as review_services
from review.models import Card, ReviewLog
from tests.e2e.test_browser import (  # noqa: F401 (fixtures)
    _new_page,
    browser,
    console,
    log_in,
    shot,
    study,
)
from tests.support.dashboard import add_memories

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

PHONE = {"viewport": {"width": 375, "height": 740}, "is_mobile": True, "has_touch": True}
# The apps whose views are dashboard pages; their pages are the GET routes ending in "/"
# (every POST-only action ends without one).
DASHBOARD_VIEWS = ("memories.views", "review.views", "recall.views", "django.contrib.auth.views")
NOT_PAGES = {"login", "logout"}  # the login page is seen logged out; logout is a POST


def dashboard_pages(
    patterns: list | None = None, prefix: str = ""
) -> list[tuple[str, str, list[str]]]:
    """(name, route, parameter names) of every dashboard page in the URL configuration."""
    pages = []
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            if not route.startswith(("api/", "admin/")):
                pages += dashboard_pages(pattern.url_patterns, route)
        elif (
            isinstance(pattern, URLPattern)
            and pattern.name not in NOT_PAGES
            and pattern.callback.__module__ in DASHBOARD_VIEWS
            and (route == "" or route.endswith("/"))
        ):
            pages.append((pattern.name, route, list(pattern.pattern.converters)))
    return pages


@pytest.fixture
def phone(browser, console, live_server):  # noqa: F811
    context, page = _new_page(browser, console, base_url=live_server.url, **PHONE)
    yield page
    context.close()
    assert console.unexpected() == [], console.unexpected()


@pytest.fixture
def everything(study, user):  # noqa: F811
    """One of each object a page shows, with long words and a wordy history, background
    runs, and a second namespace (the home page's tabs)."""
    memory = study.memories.order_by("pk").first()
    add_memories(study, user, 3, start=10)
    services.namespace_create(
        owner=user, name="A second namespace with a long name", mode="personal"
    )
    # Names and texts of one unbroken word, as long as the forms take (a person's choice).
    services.namespace_create(owner=user, name="N" * 100, mode="personal")
    study.name = "Study" + "Nomenclature" * 7
    study.save(update_fields=["name"])
    services.memory_create(namespace=study, content="x" * 10_000, topic="t" * 100)
    services.memory_update(
        memory=memory,
        changes={
            "keywords": ["japanese", "verbs", "conjugation"],
            "content": memory.content + " " + "Supercalifragilistic" * 4,
        },
        actor=user,
        source="dashboard",
    )
    services.memory_touch(memory=memory, boost_strength=True, actor=user, source="dashboard")
    card = Card.objects.get(memory=memory)
    review_services.card_grade(card=card, grade=4, source=ReviewLog.Source.SIMULATED)
    MemoryEvent.objects.create(
        namespace=study,
        memory=memory,
        memory_ref=memory.pk,
        kind=MemoryEvent.Kind.UPDATED,
        source="worker",
        before={"score": None, "storage": "hot", "strength": 1.0, "tags": ["japanese"]},
        after={
            "score": None,
            "storage": "hot",
            "strength": 1.05124329393835,
            "tags": ["japanese", "verbs"],
            "next_review": (timezone.now() + timedelta(days=3)).isoformat(),
        },
    )
    # A leech (lapsed and suspended) with long words, for the leeches list.
    leech = services.memory_create(
        namespace=study,
        content="A card that keeps lapsing: " + "Pneumonoultramicroscopic" * 4,
        topic="geo",
        cue="What keeps lapsing, " + "again" * 20 + "?",
    )
    Card.objects.filter(memory=leech).update(leech=True, lapses=8, suspended_at=timezone.now())
    # One memory about to be forgotten (the digest's table), with long words.
    fading = services.memory_create(
        namespace=study, content="Fading away soon: " + "Floccinaucinihilipilification" * 3
    )
    Memory.objects.filter(pk=fading.pk).update(last_used_at=timezone.now() - timedelta(days=11))
    token, _ = services.token_create(
        owner=user, name="a-rather-long-token-name", namespaces=[study]
    )
    subscription = hooks.webhook_subscription_create(
        namespace=study, url="http://127.0.0.1:9/" + "hook" * 20
    )
    session = review_services.study_session_start(
        namespace=study, tz=timezone.get_current_timezone(), user=user
    )
    cram = review_services.cram_start(namespace=study, user=user)
    return {
        "memory": memory,
        "slug": study.slug,
        "token": token,
        "webhook": subscription,
        "review": session,
        "cram": cram,
    }


def url_for(name: str, params: list[str], objects: dict) -> str:
    """The page's URL with the object of its kind (by the route name's first word)."""
    kinds = {"memory": "memory", "review": "review", "cram": "cram", "webhook": "webhook"}
    kwargs = {}
    for param in params:
        if param == "slug":
            kwargs[param] = objects["slug"]
        else:
            kind = kinds.get(name.split("-")[0])
            assert kind, f"no object for the page {name!r}: add one to the `everything` fixture"
            kwargs[param] = objects[kind].pk
    return reverse(name, kwargs=kwargs)


def fits(page) -> None:
    """No sideways scroll of the page itself. A phone widens its layout viewport to the
    content, so innerWidth must stay the phone's too."""
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1] <= PHONE["viewport"]["width"], (page.url, width)


def taps(page) -> None:
    """Touch targets big enough for a finger: buttons, the account links and Clear at least
    44 px tall, checkboxes at least 24 px (WCAG 2.5.5 and 2.5.8)."""
    small = page.evaluate(
        """() => {
        const out = [];
        const check = (selector, least) => {
          for (const el of document.querySelectorAll(selector)) {
            const box = el.getBoundingClientRect();
            if (box.width === 0 || box.height === 0) continue;  // not shown
            if (getComputedStyle(el).visibility === "hidden") continue;
            if (el.closest(".visually-hidden")) continue;
            if (box.height < least) out.push(`${el.outerHTML.slice(0, 80)}: ${box.height}`);
          }
        };
        check("button, a.button, .account a, a.clear", 43.5);
        check('input[type="checkbox"], input[type="radio"]', 23.5);
        return out;
      }"""
    )
    assert small == [], (page.url, small[:5])


def test_the_url_configuration_lists_the_dashboard_pages():
    names = {name for name, _, _ in dashboard_pages()}
    assert {"home", "memory-detail", "token-list", "review-session", "search"} <= names
    assert not names & {"memory-update", "review-grade", "api-memory-history", "logout"}


def test_no_page_scrolls_sideways_on_a_phone(phone, everything):
    log_in(phone)
    for name, _, params in dashboard_pages():
        url = url_for(name, params, everything)
        response = phone.goto(url)
        assert response.status == 200, url
        fits(phone)
        taps(phone)
        shot(phone, f"phone-page-{name}")


def test_the_show_answer_hint_can_be_read(phone, study):  # noqa: F811
    log_in(phone)
    phone.goto("/review/")
    phone.get_by_role("button", name="Study all of Study").click()
    hint = phone.locator("details.answer > summary kbd")
    colours = hint.evaluate(
        """el => {
            const style = getComputedStyle(el);
            let back = el, bg = 'rgba(0, 0, 0, 0)';
            while (back && (bg === 'rgba(0, 0, 0, 0)' || bg === 'transparent')) {
                bg = getComputedStyle(back).backgroundColor;
                back = back.parentElement;
            }
            return [style.color, bg];
        }"""
    )
    assert colours[0] != colours[1], colours
    fits(phone)


def test_a_memorys_history_reads_like_prose(phone, everything):
    log_in(phone)
    phone.goto(reverse("memory-detail", args=[everything["memory"].pk]))
    history = phone.locator("section[aria-labelledby=history-heading]").inner_text()

    assert "None" not in history
    assert "['" not in history and "[]" not in history
    assert "hot → hot" not in history and "storage" not in history
    assert "japanese, verbs" in history
    assert "1.051" in history and "1.05124" not in history
    assert not re.search(r"\d\.\d{4,}", history), history
    assert not re.search(r"\d{4}-\d\d-\d\dT", history), history
    shot(phone, "phone-memory-history")


def test_the_home_page_labels_agent_reinforcement_apart(phone, study):  # noqa: F811
    # The simulated worker grades before the person has reviewed anything.
    for card in Card.objects.filter(namespace=study):
        review_services.card_grade(card=card, grade=4, source=ReviewLog.Source.SIMULATED)
    log_in(phone)
    phone.goto("/")
    assert phone.locator('#stats [data-stat="reviews-today"]').inner_text().strip() == "0"
    assert phone.locator('#stats [data-stat="streak"]').inner_text().strip() == "0"
    # No retention yet: the dash the page shows for none.
    assert phone.locator('#stats [data-stat="retention"]').inner_text().strip() == "\u2013"
    agents = phone.locator('#stats [data-stat="agent-reinforcement"]').inner_text()
    assert "Agent reinforcement" in agents and "3 simulated reviews" in agents
    fits(phone)
    shot(phone, "phone-home-agent-reinforcement")


def test_a_new_tokens_secret_is_scrolled_into_view(phone, user):
    """The secret is shown once, at the top of the page; the button that makes it is far
    below on a phone, so the page must scroll to it (focus alone did not)."""
    for n in range(6):  # enough namespaces to push the button below the fold
        services.namespace_create(owner=user, name=f"Project {n}", mode="agent_memory")
    log_in(phone)
    phone.goto("/tokens/")
    phone.fill("#id_name", "phone-agent")
    phone.get_by_label("Project 0").check()
    button = phone.get_by_role("button", name="Create token")
    button.scroll_into_view_if_needed()
    assert phone.evaluate("window.scrollY") > 0  # the check can fail: the top is out of view
    button.click()
    secret = phone.locator("[data-secret]")
    secret.wait_for()
    phone.wait_for_function(
        "() => { const box = document.querySelector('[data-secret]').getBoundingClientRect();"
        " return box.top >= 0 && box.bottom <= window.innerHeight; }"
    )
    assert secret.inner_text().strip().startswith("eng_")
    shot(phone, "phone-token-created")


def test_a_card_with_a_long_topic_fits_a_phone(phone, user):
    """A topic of one long word is shown in the card's badge (cram and review pick their
    card at random, so the walk over every page may not meet it): cut, not widening."""
    namespace = services.namespace_create(owner=user, name="Topics", mode="personal")
    services.memory_create(namespace=namespace, content="Some fact", topic="t" * 100)
    cram = review_services.cram_start(namespace=namespace, user=user)
    session = review_services.study_session_start(
        namespace=namespace, tz=timezone.get_current_timezone(), user=user
    )
    log_in(phone)
    for url in (
        reverse("cram-session", args=[cram.pk]),
        reverse("review-session", args=[session.pk]),
    ):
        assert phone.goto(url).status == 200
        assert phone.locator(".badge", has_text="tttt").count() >= 1, url
        fits(phone)
