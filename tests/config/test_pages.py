"""Every dashboard page, generated from the URL configuration: login required, 404 for
another user's objects, and a constant number of queries as the data grows."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.models import ApiToken, Memory, Namespace
from review import services as review_services
from review.models import ReviewLog, StudySession
from tests.support.dashboard import add_memories, memory_with_history, queries

pytestmark = pytest.mark.django_db


# --- Login -------------------------------------------------------------------------------

PAGES = [
    "home",
    "review-index",
    "cram-index",
    "search",
    "memory-list",
    "namespace-list",
    "token-list",
]


@pytest.mark.parametrize("name", PAGES)
def test_every_page_needs_a_login(client, name):
    url = reverse(name)
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next={url}"


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("memory-detail", [1]),
        ("memory-edit", [1]),
        ("namespace-detail", ["work"]),
        ("review-session", [1]),
        ("cram-session", [1]),
    ],
)
def test_object_pages_need_a_login(client, name, args):
    assert client.get(reverse(name, args=args)).status_code == 302


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("memory-update", [1]),
        ("memory-forget", [1]),
        ("memory-restore", [1]),
        ("memory-boost", [1]),
        ("memory-supersede", [1]),
        ("memory-superseded-by", [1]),
        ("memory-merge", [1]),
        ("memory-reinstate", [1]),
        ("namespace-create", []),
        ("namespace-update", ["work"]),
        ("token-create", []),
        ("token-revoke", [1]),
        ("review-start", []),
        ("review-grade", [1]),
        ("review-undo", [1]),
        ("review-finish", [1]),
        ("cram-start", []),
        ("cram-answer", [1]),
        ("cram-finish", [1]),
    ],
)
def test_writes_need_a_login_and_a_post(client, user, name, args, nothing_written):
    url = reverse(name, args=args)
    with nothing_written():
        assert client.post(url).status_code == 302
    client.force_login(user)
    assert client.get(url).status_code == 405


@pytest.mark.parametrize("name", PAGES)
def test_an_htmx_request_without_a_session_sends_the_page_to_the_login(client, name):
    """htmx would follow a 302 itself and swap the login page into the fragment it was
    updating: it is told to load the login page instead, with the page it was on as next."""
    response = client.get(
        reverse(name),
        headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/memories/?page=2"},
    )
    assert response.status_code == 200 and not response.content
    assert response["HX-Redirect"] == f"{reverse('login')}?next=%2Fmemories%2F%3Fpage%3D2"
    # Another site's address is never where the login sends the browser back to.
    away = client.post(
        reverse("token-create"),
        headers={"HX-Request": "true", "HX-Current-URL": "https://elsewhere.example/x"},
    )
    assert away["HX-Redirect"] == f"{reverse('login')}?next=%2F"


def test_a_stale_form_gets_a_page_that_says_what_to_do(user, nothing_written):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    with nothing_written():
        response = browser.post(reverse("token-create"), {"name": "x", "all_namespaces": "on"})
    assert response.status_code == 403
    body = response.content.decode()
    assert "This form has expired" in body and "Nothing was saved" in body
    assert 'aria-label="Main"' in body  # the dashboard's page, with its navigation
    assert not ApiToken.objects.exists()


def test_the_login_page_logs_in_and_keeps_next(client, user):
    page = client.get(reverse("login") + "?next=/memories/")
    assert b'id="id_username"' in page.content and b'id="id_password"' in page.content
    assert b'name="next" value="/memories/"' in page.content
    response = client.post(
        reverse("login"), {"username": "ada", "password": "pw-ada-12345", "next": "/memories/"}
    )
    assert response.status_code == 302 and response["Location"] == "/memories/"


def test_logging_out_is_a_post(ada_client):
    response = ada_client.post(reverse("logout"))
    assert response.status_code == 302
    assert ada_client.get(reverse("home")).status_code == 302


def test_password_change_page(ada_client):
    assert ada_client.get(reverse("password_change")).status_code == 200


# --- Every page for its owner, 404 for everyone else ------------------------------------


def test_every_page_answers_its_owner(ada_client, user, personal):
    memories = add_memories(personal, user, 6)
    services.token_create(owner=user, name="agent", namespaces=[personal])
    study = review_services.study_session_start(
        namespace=personal, tz=timezone.get_current_timezone(), user=user
    )
    cram = review_services.cram_start(namespace=personal, user=user)
    urls = [reverse(name) for name in PAGES] + [
        reverse("search") + "?q=capital",
        reverse("memory-detail", args=[memories[0].pk]),
        reverse("memory-edit", args=[memories[0].pk]),
        reverse("namespace-detail", args=[personal.slug]),
        reverse("review-session", args=[study.pk]),
        reverse("cram-session", args=[cram.pk]),
    ]
    for url in urls:
        response = ada_client.get(url)
        assert response.status_code == 200, url
        assert b"<main" in response.content


def test_another_users_objects_answer_404(ada_client, theirs, nothing_written):
    memory, namespace = theirs["memory"], theirs["namespace"]
    study, cram, card = theirs["study"], theirs["cram"], theirs["card"]
    gets = [
        reverse("memory-detail", args=[memory.pk]),
        reverse("memory-edit", args=[memory.pk]),
        reverse("namespace-detail", args=[namespace.slug]),
        reverse("review-session", args=[study.pk]),
        reverse("cram-session", args=[cram.pk]),
    ]
    for url in gets:
        assert ada_client.get(url).status_code == 404, url
    posts = [
        (reverse("memory-update", args=[memory.pk]), {"content": "mine now"}),
        (reverse("memory-forget", args=[memory.pk]), {"reason": "gone"}),
        (reverse("memory-restore", args=[memory.pk]), {}),
        (reverse("memory-boost", args=[memory.pk]), {}),
        (reverse("memory-supersede", args=[memory.pk]), {"old": memory.pk}),
        (reverse("memory-superseded-by", args=[memory.pk]), {"new": memory.pk}),
        (reverse("memory-merge", args=[memory.pk]), {}),
        (reverse("memory-reinstate", args=[memory.pk]), {}),
        (reverse("namespace-update", args=[namespace.slug]), {"name": "Mine"}),
        (reverse("token-revoke", args=[theirs["token"].pk]), {}),
        (reverse("review-start"), {"namespace": namespace.slug}),
        (reverse("review-grade", args=[study.pk]), {"card": card.pk, "grade": "good"}),
        (reverse("review-undo", args=[study.pk]), {}),
        (reverse("review-finish", args=[study.pk]), {}),
        (reverse("cram-start"), {"namespace": namespace.slug}),
        (reverse("cram-answer", args=[cram.pk]), {"card": card.pk, "correct": "1"}),
        (reverse("cram-finish", args=[cram.pk]), {}),
    ]
    for url, data in posts:
        with nothing_written():
            assert ada_client.post(url, data).status_code == 404, url
    memory.refresh_from_db()
    assert memory.status == Memory.Status.ACTIVE and memory.content == "Bob's secret."
    assert memory.use_count == 0
    assert ApiToken.objects.get(pk=theirs["token"].pk).revoked_at is None
    assert not ReviewLog.objects.exists()
    assert StudySession.objects.filter(status=StudySession.Status.ACTIVE).count() == 2
    assert Namespace.objects.get(pk=namespace.pk).name == "Bob's"


def test_lists_show_only_the_users_own_things(ada_client, user, personal, theirs):
    add_memories(personal, user, 3)
    for url in (reverse("memory-list"), reverse("home"), reverse("namespace-list")):
        body = ada_client.get(url).content.decode()
        assert "Bob" not in body, url
    search = ada_client.get(reverse("search"), {"q": "secret"}).content.decode()
    assert "Bob&#x27;s secret" not in search and "Bob's secret" not in search
    assert "bob" not in ada_client.get(reverse("token-list")).content.decode()


# --- Query counts ------------------------------------------------------------------------


def test_pages_make_the_same_number_of_queries_as_the_data_grows(ada_client, user, personal):
    second = services.namespace_create(owner=user, name="Second", mode="personal")
    first = add_memories(personal, user, 6)
    add_memories(second, user, 3)
    memory = memory_with_history(personal, user, first, 2)
    services.token_create(owner=user, name="t1", namespaces=[personal, second])
    tz = timezone.get_current_timezone()
    study = review_services.study_session_start(namespace=personal, tz=tz, user=user)
    cram = review_services.cram_start(namespace=personal, user=user, deck="geo")

    def urls(study, cram) -> list[str]:
        return [
            reverse("home"),
            reverse("home") + f"?namespace={second.slug}",
            reverse("review-index"),
            reverse("cram-index"),
            reverse("memory-list"),
            reverse("memory-list") + "?topic=geo&sort=uses&q=capital",
            reverse("memory-detail", args=[memory.pk]),
            reverse("memory-edit", args=[memory.pk]),
            reverse("namespace-list"),
            reverse("namespace-detail", args=[personal.slug]),
            reverse("token-list"),
            reverse("review-session", args=[study.pk]),
            reverse("cram-session", args=[cram.pk]),
        ]

    for url in urls(study, cram):
        ada_client.get(url)  # warm caches (content types, sessions)
    before = {url: queries(ada_client, url) for url in urls(study, cram)}

    more = add_memories(personal, user, 30, start=100)
    add_memories(second, user, 12, start=200)
    memory_with_history(personal, user, [memory, *more], 6, tag="z")
    services.token_create(owner=user, name="t2", namespaces=[personal])
    services.token_create(owner=user, name="t3", all_namespaces=True)
    bigger_study = review_services.study_session_start(namespace=personal, tz=tz, user=user)
    bigger_cram = review_services.cram_start(namespace=personal, user=user, deck="geo")
    assert bigger_study.items.count() > study.items.count()
    assert bigger_cram.items.count() > cram.items.count()

    grown = urls(bigger_study, bigger_cram)
    after = dict(zip(before, (queries(ada_client, url) for url in grown), strict=True))
    assert after == before


def test_the_search_page_stays_within_a_query_budget(ada_client, user, personal):
    """The page adds one query to recall_run's; which stages run (and so the pipeline's
    count) depends on the hits, so this pins a ceiling rather than an exact number."""
    url = reverse("search") + "?q=capital+country"
    add_memories(personal, user, 6)
    ada_client.get(url)
    small = queries(ada_client, url)
    add_memories(personal, user, 60, start=100)
    large = queries(ada_client, url)
    assert small <= 20 and large <= 20, (small, large)


def test_the_home_page_query_count_is_pinned(
    ada_client, user, personal, django_assert_max_num_queries
):
    add_memories(personal, user, 9)
    ada_client.get(reverse("home"))
    # session, user, scope, per-namespace decks (2), statistics (<= 9), histogram, runs,
    # sweep changes (2), active sessions, the about-to-forget count
    with django_assert_max_num_queries(23):
        ada_client.get(reverse("home"))


def test_the_favicon_browsers_ask_for_is_the_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith(".svg")
    assert "engram" in response["Location"]


def test_no_template_comment_spans_lines():
    """Django's {# #} comment is one line: one spread over several is sent to the browser as
    text (and, in <head>, closed the head early: the title, styles and scripts fell into
    the body). Longer comments use {% comment %}."""
    from pathlib import Path

    from django.conf import settings

    base = Path(settings.BASE_DIR)
    unclosed = [
        f"{path.relative_to(base)}:{number}"
        for root in (base / "templates", *base.glob("*/templates"))
        for path in root.rglob("*.html")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if line.count("{#") != line.count("#}")
    ]
    assert unclosed == []


@pytest.mark.parametrize("name", PAGES)
def test_no_page_shows_template_syntax(ada_client, name):
    body = ada_client.get(reverse(name)).content.decode()
    for syntax in ("{#", "#}", "{%", "%}", "{{", "}}"):
        assert syntax not in body, (name, syntax)
    head = body.split("<body", 1)[0]
    assert "<title>" in head and 'rel="stylesheet"' in head
