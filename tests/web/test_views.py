"""Dashboard views: login, ownership, writes through the services, htmx partials, and a
constant number of queries per page as the data grows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.models import ApiToken, BackgroundRun, Memory, MemoryEvent, Namespace
from recall.models import RecallEvent
from recall.views import highlight
from review import services as review_services
from review.models import Card, ReviewLog, StudySession
from review.views import format_interval

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


# --- Data --------------------------------------------------------------------------------


def add_memories(namespace: Namespace, user, count: int, start: int = 0) -> list[Memory]:
    """Memories in two decks of a personal namespace (so each has a card): a third due,
    a third graded once, a third new; plus what the background leaves behind."""
    now = timezone.now()
    created = []
    for i in range(start, start + count):
        memory = services.memory_create(
            namespace=namespace,
            content=f"Fact {i}: the capital of country {i} is city {i}.\nMore about {i}.",
            topic=("geo", "history")[i % 2],
        )
        card = Card.objects.get(memory=memory)
        if i % 3 == 0:
            Card.objects.filter(pk=card.pk).update(
                next_review=now - timedelta(days=1), interval_days=1, repetitions=1
            )
        elif i % 3 == 1:
            review_services.card_grade(card=card, grade=4, source="human", user=user)
        created.append(memory)
    MemoryEvent.objects.create(
        namespace=namespace,
        memory=created[0],
        memory_ref=created[0].pk,
        kind=MemoryEvent.Kind.PROMOTED,
        source="sweep",
    )
    BackgroundRun.objects.create(
        kind=BackgroundRun.Kind.SWEEP,
        namespace=namespace,
        status=BackgroundRun.Status.OK,
        finished_at=now,
        counts={"promoted": 1, "forgotten": 0, "examined": count},
    )
    return created


@pytest.fixture
def personal(user) -> Namespace:
    return services.namespace_create(owner=user, name="Personal", mode=Namespace.Mode.PERSONAL)


@pytest.fixture
def theirs(other_user) -> dict:
    """Bob's namespace, memory, token and sessions: all invisible to Ada."""
    namespace = services.namespace_create(owner=other_user, name="Bob's", mode="personal")
    memory = services.memory_create(namespace=namespace, content="Bob's secret.", topic="b")
    card = Card.objects.get(memory=memory)
    token, _ = services.token_create(owner=other_user, name="bob", namespaces=[namespace])
    study = review_services.study_session_start(
        namespace=namespace, tz=timezone.get_current_timezone(), user=other_user
    )
    cram = review_services.cram_start(namespace=namespace, user=other_user)
    return {
        "namespace": namespace,
        "memory": memory,
        "card": card,
        "token": token,
        "study": study,
        "cram": cram,
    }


def queries(client, url: str, **extra) -> int:
    with CaptureQueriesContext(connection) as context:
        response = client.get(url, **extra)
    assert response.status_code == 200, (url, response.status_code)
    return len(context.captured_queries)


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


def _memory_with_history(
    namespace: Namespace, user, others: list[Memory], rounds: int, tag: str = "a"
):
    memory = others[0]
    now = timezone.now()
    for i in range(rounds):
        services.memory_update(memory=memory, changes={"utility": 0.1 + i / 100}, actor=user)
        services.association_create(source=memory, target=others[i + 1], weight=0.5)
        services.association_create(source=others[-(i + 1)], target=memory, weight=0.4)
        services.relation_create(
            namespace=namespace,
            subject=f"{tag}{i}",
            predicate="knows",
            object=f"b{i}",
            memory=memory,
        )
        stamp = now - timedelta(minutes=i + 1)
        RecallEvent.objects.create(
            namespace=namespace, user=user, query=f"query {i}", created_at=stamp
        )
        memory.recall_timestamps = [*memory.recall_timestamps, stamp.isoformat()]
    Memory.objects.filter(pk=memory.pk).update(recall_timestamps=memory.recall_timestamps)
    card = Card.objects.get(memory=memory)
    for grade in (4, 3):
        card.refresh_from_db()
        review_services.card_grade(card=card, grade=grade, source="human", user=user)
    return memory


def test_pages_make_the_same_number_of_queries_as_the_data_grows(ada_client, user, personal):
    second = services.namespace_create(owner=user, name="Second", mode="personal")
    first = add_memories(personal, user, 6)
    add_memories(second, user, 3)
    memory = _memory_with_history(personal, user, first, 2)
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
    _memory_with_history(personal, user, [memory, *more], 6, tag="z")
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
    # sweep changes (2), active sessions
    with django_assert_max_num_queries(22):
        ada_client.get(reverse("home"))


# --- Memories ----------------------------------------------------------------------------


def test_the_memory_list_filters_sorts_and_paginates(ada_client, user, personal):
    add_memories(personal, user, 30)
    forgotten = Memory.objects.filter(topic="geo").first()
    services.memory_forget(memory=forgotten, reason="old")
    page = ada_client.get(reverse("memory-list"))
    assert page.context["page"].paginator.count == 29
    assert len(page.context["rows"]) == 25
    second = ada_client.get(reverse("memory-list"), {"page": 2})
    assert len(second.context["rows"]) == 4
    geo = ada_client.get(reverse("memory-list"), {"topic": "geo"})
    assert geo.context["page"].paginator.count == 14
    assert (
        ada_client.get(reverse("memory-list"), {"status": "forgotten"})
        .context["page"]
        .paginator.count
        == 1
    )
    assert (
        ada_client.get(reverse("memory-list"), {"status": "any"}).context["page"].paginator.count
        == 30
    )
    text = ada_client.get(reverse("memory-list"), {"q": "country 17 "})
    assert [row["memory"].content[:8] for row in text.context["rows"]] == ["Fact 17:"]
    oldest = ada_client.get(reverse("memory-list"), {"sort": "old"}).context["rows"][0]
    assert oldest["memory"].content.startswith("Fact 0:")
    # A bad value in one filter leaves the others working.
    assert (
        ada_client.get(reverse("memory-list"), {"tier": "nope", "topic": "geo"})
        .context["page"]
        .paginator.count
        == 14
    )


def test_the_memory_list_answers_htmx_with_its_results_only(ada_client, user, personal):
    add_memories(personal, user, 3)
    response = ada_client.get(reverse("memory-list"), {"topic": "geo"}, **HX)
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="memory-results"')
    assert "<html" not in body and "<form" not in body
    assert "HX-Request" in response["Vary"]
    full = ada_client.get(reverse("memory-list"), {"topic": "geo"}).content.decode()
    assert "<html" in full and 'value="geo"' in full


def test_the_memory_page_shows_content_schedule_history_links_and_curve(ada_client, user, personal):
    memories = add_memories(personal, user, 6)
    memory = _memory_with_history(personal, user, memories, 2)
    response = ada_client.get(reverse("memory-detail", args=[memory.pk]))
    body = response.content.decode()
    assert memory.content.splitlines()[0] in body
    assert 'class="plot plot-curve"' in body and "<title>Decay score over the next 30 days" in body
    for threshold in ("0.05", "0.15", "0.35", "0.65"):
        assert f'data-threshold="{threshold}"' in body
    assert "Updated" in body and "utility" in body  # history
    assert "query 0" in body and "query 1" in body  # recall history
    assert body.count('href="/memories/') >= 4  # associations both ways
    assert "a0 —[knows]→ b0" in body
    assert response.context["card"].total_reviews == 2


def test_editing_a_memory_goes_through_memory_update(ada_client, user, personal):
    memory = services.memory_create(
        namespace=personal, content="Old text\nline two", topic="t", keywords=["a", "b"]
    )
    url = reverse("memory-update", args=[memory.pk])
    page = ada_client.get(reverse("memory-edit", args=[memory.pk]))
    form = page.context["form"]
    data = {name: form[name].value() or "" for name in form.fields}
    data.update(content="New text\r\nline two", keywords="a, c", next="/memories/")
    data["expires_at"] = ""
    response = ada_client.post(url, data)
    assert response.status_code == 303 and response["Location"] == "/memories/"
    memory.refresh_from_db()
    assert memory.content == "New text\nline two"
    assert memory.keywords == ["a", "c"]
    event = MemoryEvent.objects.get(memory=memory, kind=MemoryEvent.Kind.UPDATED)
    assert set(event.after) == {"content", "keywords"}  # nothing else looked changed
    assert event.source == "dashboard" and event.actor == user


def test_an_invalid_edit_shows_the_services_error_and_changes_nothing(
    ada_client, personal, nothing_written
):
    memory = services.memory_create(namespace=personal, content="Keep me")
    page = ada_client.get(reverse("memory-edit", args=[memory.pk]))
    form = page.context["form"]
    data = {name: form[name].value() or "" for name in form.fields}
    data.update(strength="7.5", keywords="")
    with nothing_written():
        response = ada_client.post(reverse("memory-update", args=[memory.pk]), data)
    assert response.status_code == 200
    assert response.context["form"].errors["strength"]
    memory.refresh_from_db()
    assert memory.strength == 1.0
    assert not MemoryEvent.objects.filter(kind=MemoryEvent.Kind.UPDATED).exists()


def test_forget_restore_and_boost(ada_client, personal, nothing_written):
    memory = services.memory_create(namespace=personal, content="Fleeting")
    detail = reverse("memory-detail", args=[memory.pk])
    with nothing_written():
        response = ada_client.post(reverse("memory-forget", args=[memory.pk]), {"reason": ""})
    assert response.status_code == 303
    memory.refresh_from_db()
    assert memory.status == Memory.Status.ACTIVE  # the service wants a reason
    assert "Say why" in ada_client.get(detail).content.decode()

    ada_client.post(reverse("memory-forget", args=[memory.pk]), {"reason": "obsolete"})
    memory.refresh_from_db()
    assert memory.status == Memory.Status.FORGOTTEN and memory.forgotten_reason == "obsolete"
    assert "obsolete" in ada_client.get(detail).content.decode()

    ada_client.post(reverse("memory-restore", args=[memory.pk]))
    memory.refresh_from_db()
    assert memory.status == Memory.Status.ACTIVE

    ada_client.post(reverse("memory-boost", args=[memory.pk]))
    memory.refresh_from_db()
    assert memory.strength == pytest.approx(1.1) and memory.use_count == 1
    assert MemoryEvent.objects.filter(memory=memory, kind="touched", source="dashboard").exists()


def test_next_never_leaves_the_site(ada_client, personal):
    memory = services.memory_create(namespace=personal, content="Stay")
    response = ada_client.post(
        reverse("memory-boost", args=[memory.pk]), {"next": "https://evil.example/"}
    )
    assert response["Location"] == reverse("memory-detail", args=[memory.pk])


# --- Namespaces and tokens ---------------------------------------------------------------


def test_creating_a_namespace_with_its_mode_and_settings(ada_client, user, nothing_written):
    response = ada_client.post(
        reverse("namespace-create"),
        {
            "name": "Agent 42",
            "slug": "",
            "mode": "agent_memory",
            "description": "",
            "scheduler": "fsrs",
            "desired_retention": "0.85",
            "new_cards_per_day": "7",
            "decay_model": "power_law",
            "decay_half_life_days": "5",
        },
    )
    namespace = Namespace.objects.get(owner=user)
    assert response.status_code == 303
    assert response["Location"] == reverse("namespace-detail", args=["agent-42"])
    assert (namespace.slug, namespace.mode, namespace.scheduler) == (
        "agent-42",
        "agent_memory",
        "fsrs",
    )
    assert namespace.new_cards_per_day == 7 and namespace.decay_half_life_days == 5
    assert namespace.decay_model == "power_law" and namespace.decay_beta is None

    with nothing_written():
        again = ada_client.post(
            reverse("namespace-create"),
            {
                "name": "Agent 42",
                "mode": "personal",
                "scheduler": "sm2",
                "desired_retention": "0.9",
                "new_cards_per_day": "5",
            },
        )
    assert again.status_code == 200
    assert again.context["form"].errors  # the unique slug, from the model's constraint
    assert Namespace.objects.filter(owner=user).count() == 1


def test_namespace_settings_go_through_namespace_update(ada_client, personal, nothing_written):
    page = ada_client.get(reverse("namespace-detail", args=[personal.slug]))
    form = page.context["form"]
    data = {
        name: form[name].value() if form[name].value() is not None else "" for name in form.fields
    }
    data.update(name="Renamed", new_cards_per_day="12", weight_recency="0.4")
    response = ada_client.post(reverse("namespace-update", args=[personal.slug]), data)
    assert response.status_code == 303
    personal.refresh_from_db()
    assert personal.name == "Renamed" and personal.new_cards_per_day == 12
    assert personal.weight_recency == 0.4 and personal.slug == "personal"
    data.update(desired_retention="1.5", name="Renamed again")
    with nothing_written():
        bad = ada_client.post(reverse("namespace-update", args=[personal.slug]), data)
    assert bad.status_code == 200 and bad.context["form"].errors["desired_retention"]


def test_a_token_secret_is_shown_once_and_only_its_hash_is_kept(ada_client, user, personal):
    response = ada_client.post(
        reverse("token-create"),
        {"name": "agent", "namespaces": [personal.slug], "access": "write", "ceiling": "2"},
    )
    assert response.status_code == 200
    secret = response.context["secret"]
    token = ApiToken.objects.get(owner=user)
    assert secret.startswith(f"eng_{token.prefix}_") and secret in response.content.decode()
    assert token.secret_hash == services.token_hash(secret) and secret not in token.secret_hash
    assert (token.access, token.ceiling) == ("write", 2)
    assert list(token.namespaces.all()) == [personal]
    assert "no-store" in response["Cache-Control"]
    assert secret not in ada_client.get(reverse("token-list")).content.decode()
    assert secret not in str(dict(ada_client.session))


def test_a_token_needs_namespaces(ada_client, user, personal, nothing_written):
    with nothing_written():
        response = ada_client.post(
            reverse("token-create"), {"name": "x", "access": "read", "ceiling": "1"}
        )
    assert response.status_code == 200
    assert response.context["form"].errors["namespaces"]
    assert not ApiToken.objects.exists()
    with nothing_written():
        past = ada_client.post(
            reverse("token-create"),
            {
                "name": "x",
                "all_namespaces": "on",
                "access": "read",
                "ceiling": "1",
                "expires_at": "2001-01-01T10:00",
            },
        )
    assert past.context["form"].errors["expires_at"]


def test_tokens_are_created_and_revoked_with_htmx(ada_client, user, personal, api):
    created = ada_client.post(
        reverse("token-create"),
        {"name": "agent", "namespaces": [personal.slug], "access": "read", "ceiling": "1"},
        **HX,
    )
    body = created.content.decode()
    assert body.lstrip().startswith('<div id="tokens-main"') and "<html" not in body
    secret = created.context["secret"]
    assert api(secret).get("/api/v1/memories").status_code == 200
    token = ApiToken.objects.get()
    revoked = ada_client.post(reverse("token-revoke", args=[token.pk]), **HX)
    assert revoked.status_code == 200
    assert 'hx-swap-oob="true"' in revoked.content.decode()  # the "revoked" message
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert api(secret).get("/api/v1/memories").status_code == 401
    page = ada_client.get(reverse("token-list")).content.decode()
    assert "revoked" in page and "agent" in page


# --- Home --------------------------------------------------------------------------------


def test_home_shows_due_and_new_cards_per_deck_and_the_plots(ada_client, user, personal):
    add_memories(personal, user, 9)
    response = ada_client.get(reverse("home"))
    body = response.content.decode()
    overview = response.context["overview"][0]
    assert overview["namespace"] == personal
    assert {d.deck: d.due_today for d in overview["decks"]} == {"geo": 2, "history": 1}
    assert overview["new"] == 3
    assert body.count('action="/review/start"') == 3  # study all + one per deck
    for kind in ("reviews", "forecast", "histogram"):
        assert f'class="plot plot-{kind}"' in body
    assert response.context["memories_scored"] == 9
    assert 'data-threshold="0.65"' in body
    assert "1 promoted" in body  # the sweep's work, from its events
    assert response.context["background"]["runs"][0]["counts"] == [("promoted", 1)]


def test_home_switches_namespace_with_an_htmx_partial(ada_client, user, personal):
    second = services.namespace_create(owner=user, name="Second", mode="personal")
    add_memories(second, user, 3)
    response = ada_client.get(reverse("home"), {"namespace": "second"}, **HX)
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="stats"')
    assert 'Statistics <span class="muted">· Second</span>' in body
    assert "Background work" not in body


def test_home_without_namespaces_invites_to_create_one(ada_client):
    body = ada_client.get(reverse("home")).content.decode()
    assert "Create one" in body


def test_global_background_runs_hide_their_counts_from_non_staff(ada_client, user, personal):
    BackgroundRun.objects.create(
        kind=BackgroundRun.Kind.SWEEP, status="ok", counts={"forgotten": 999}
    )
    runs = ada_client.get(reverse("home")).context["background"]["runs"]
    assert runs[0]["counts"] == []
    user.is_staff = True
    user.save()
    runs = ada_client.get(reverse("home")).context["background"]["runs"]
    assert runs[0]["counts"] == [("forgotten", 999)]


# --- Review ------------------------------------------------------------------------------


@pytest.fixture
def due_three(user, personal) -> list[Card]:
    past = timezone.now() - timedelta(days=3)
    cards = []
    for i in range(3):
        memory = services.memory_create(
            namespace=personal, content=f"Card {i} answer", topic="deck"
        )
        card = Card.objects.get(memory=memory)
        Card.objects.filter(pk=card.pk).update(next_review=past, interval_days=1, repetitions=1)
        cards.append(card)
    return cards


def start(client, namespace, **extra) -> StudySession:
    response = client.post(reverse("review-start"), {"namespace": namespace.slug, **extra})
    assert response.status_code == 303
    return StudySession.objects.order_by("-pk").first()


def grade(client, session, grade_name, **extra):
    item = session.items.filter(done=False).order_by("position").first()
    card = Card.objects.get(pk=item.card_id)
    return client.post(
        reverse("review-grade", args=[session.pk]),
        {"card": card.pk, "grade": grade_name, "version": card.version},
        **extra,
    )


def test_a_study_session_grades_through_the_service_one_card_per_request(
    ada_client, user, personal, due_three
):
    session = start(ada_client, personal)
    page = ada_client.get(reverse("review-session", args=[session.pk]))
    body = page.content.decode()
    assert "Card 1 of 3" in body
    for label in ("Again", "Hard", "Good", "Easy"):
        assert f'{label}<span class="interval">' in body
    assert page.context["buttons"][2]["interval"] == "6 d"  # SM-2 Good on a 1-day card

    response = grade(ada_client, session, "good", **HX)
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="review-card"') and "<html" not in body
    assert "Card 2 of 3" in body
    log = ReviewLog.objects.get()
    assert (log.grade, log.source, log.user, log.session_id) == (4, "human", user, session.pk)

    # Below Good, the card comes back at the end of the session.
    grade(ada_client, session, "again", **HX)
    assert (
        ada_client.get(reverse("review-session", args=[session.pk])).context["progress"].remaining
        == 2
    )
    grade(ada_client, session, "easy", **HX)
    repeat = ada_client.get(reverse("review-session", args=[session.pk]))
    assert repeat.context["item"].attempts == 1
    assert "Again, try 2" in repeat.content.decode()
    done = grade(ada_client, session, "good", **HX)
    assert "Session complete" in done.content.decode()
    # The repeat is practice, not a review: three reviews today.
    assert 'data-stat="reviews-today">3<' in done.content.decode()
    assert ReviewLog.objects.count() == 3


def test_without_htmx_a_grade_redirects_back_to_the_session(ada_client, personal, due_three):
    session = start(ada_client, personal)
    response = grade(ada_client, session, "good")
    assert response.status_code == 303
    assert response["Location"] == reverse("review-session", args=[session.pk])


def test_a_stale_grade_is_refused_with_a_message(ada_client, personal, due_three, nothing_written):
    session = start(ada_client, personal)
    item = session.items.order_by("position").first()
    card = Card.objects.get(pk=item.card_id)
    with nothing_written():
        response = ada_client.post(
            reverse("review-grade", args=[session.pk]),
            {"card": card.pk, "grade": "good", "version": card.version + 5},
            **HX,
        )
    assert "reload it and grade again" in response.content.decode()
    assert not ReviewLog.objects.exists()
    with nothing_written():
        bad = ada_client.post(
            reverse("review-grade", args=[session.pk]), {"card": card.pk, "grade": "great"}, **HX
        )
    assert "Unknown grade" in bad.content.decode()


def test_undo_gives_the_last_grade_back(ada_client, user, personal, due_three, nothing_written):
    session = start(ada_client, personal)
    with nothing_written():
        nothing = ada_client.post(reverse("review-undo", args=[session.pk]), **HX)
    assert "no grade to undo" in nothing.content.decode()
    first = session.items.order_by("position").first()
    before = Card.objects.filter(pk=first.card_id).values("next_review", "repetitions").get()
    grade(ada_client, session, "good", **HX)
    response = ada_client.post(reverse("review-undo", args=[session.pk]), **HX)
    assert "Card 1 of 3" in response.content.decode()
    after = Card.objects.filter(pk=first.card_id).values("next_review", "repetitions").get()
    assert after == before
    assert ReviewLog.objects.get().undone_at is not None
    assert f'data-card="{first.card_id}"' in response.content.decode()


def test_finishing_early_shows_the_summary(ada_client, personal, due_three):
    session = start(ada_client, personal)
    grade(ada_client, session, "good", **HX)
    response = ada_client.post(reverse("review-finish", args=[session.pk]), **HX)
    body = response.content.decode()
    assert "Session ended" in body
    assert "<li>Good <strong>1</strong></li>" in body
    summary = ada_client.get(reverse("review-session", args=[session.pk]))
    assert summary.context["progress"].graded == 1
    assert dict(summary.context["grades"]) == {"Again": 0, "Hard": 0, "Good": 1, "Easy": 0}


def test_a_deck_session_and_an_empty_one(ada_client, user, personal, due_three):
    services.memory_create(namespace=personal, content="Other deck", topic="other")
    session = start(ada_client, personal, deck="other")
    assert session.deck == "other" and session.items.count() == 1  # a new card
    empty = start(ada_client, personal, deck="nothing-here")
    body = ada_client.get(reverse("review-session", args=[empty.pk])).content.decode()
    assert "Nothing to review" in body


def test_a_memory_forgotten_mid_session_can_be_restored(ada_client, personal, due_three):
    session = start(ada_client, personal)
    first = session.items.order_by("position").first()
    memory = Card.objects.get(pk=first.card_id).memory
    back = reverse("review-session", args=[session.pk])
    response = ada_client.post(
        reverse("memory-forget", args=[memory.pk]), {"reason": "wrong", "next": back}
    )
    assert response["Location"] == back
    body = ada_client.get(back).content.decode()
    assert "This memory is forgotten" in body and 'name="grade"' not in body


# --- Cram --------------------------------------------------------------------------------


def test_cram_scores_a_deck_and_reschedules_nothing(ada_client, user, personal, due_three):
    services.memory_create(namespace=personal, content="Elsewhere", topic="other")
    before = list(Card.objects.order_by("pk").values())
    response = ada_client.post(reverse("cram-start"), {"namespace": personal.slug, "deck": "deck"})
    session = StudySession.objects.get(mode="cram")
    assert response["Location"] == reverse("cram-session", args=[session.pk])
    answers = iter(["1", "0", "1"])
    for _ in range(3):
        item = session.items.filter(done=False).order_by("position").first()
        last = ada_client.post(
            reverse("cram-answer", args=[session.pk]),
            {"card": item.card_id, "correct": next(answers)},
            **HX,
        )
    body = last.content.decode()
    assert body.lstrip().startswith('<div id="cram-card"')
    assert "<span data-score>2/3</span>" in body
    assert '<tr data-deck-score="deck"><td>deck</td><td class="num">2</td>' in body
    session.refresh_from_db()
    assert session.status == StudySession.Status.FINISHED
    assert list(Card.objects.order_by("pk").values()) == before
    assert not ReviewLog.objects.exists()


def test_cram_of_an_empty_deck_says_so(ada_client, personal, nothing_written):
    with nothing_written():
        response = ada_client.post(reverse("cram-start"), {"namespace": personal.slug, "deck": "x"})
    assert response["Location"] == reverse("cram-index")
    assert "no cards to cram" in ada_client.get(reverse("cram-index")).content.decode()


def test_cram_can_finish_early(ada_client, personal, due_three):
    ada_client.post(reverse("cram-start"), {"namespace": personal.slug})
    session = StudySession.objects.get(mode="cram")
    response = ada_client.post(reverse("cram-finish", args=[session.pk]), **HX)
    assert "<span data-score>0/0</span>" in response.content.decode()


# --- Search ------------------------------------------------------------------------------


@pytest.fixture
def searchable(user):
    work = services.namespace_create(owner=user, name="Work", mode="agent_memory")
    home = services.namespace_create(owner=user, name="Home", mode="agent_memory")
    db = services.memory_create(
        namespace=work,
        content="The project database is PostgreSQL 15.",
        topic="project",
        tier="long_term",
    )
    secret = services.memory_create(
        namespace=work,
        content="The PostgreSQL admin password rotates monthly.",
        topic="ops",
        classification=3,
    )
    garden = services.memory_create(
        namespace=home, content="The garden PostgreSQL sticker is on the shed.", topic="garden"
    )
    return {"work": work, "home": home, "db": db, "secret": secret, "garden": garden}


def result_ids(response) -> set[int]:
    return {row["hit"].memory_id for row in response.context["rows"]}


def test_search_runs_recall_with_its_filters(ada_client, searchable):
    url = reverse("search")
    everything = ada_client.get(url, {"q": "postgresql"})
    assert result_ids(everything) == {
        m.pk for k, m in searchable.items() if k in ("db", "secret", "garden")
    }
    work = ada_client.get(url, {"q": "postgresql", "namespace": "work"})
    assert result_ids(work) == {searchable["db"].pk, searchable["secret"].pk}
    assert result_ids(ada_client.get(url, {"q": "postgresql", "topic": "ops"})) == {
        searchable["secret"].pk
    }
    assert result_ids(ada_client.get(url, {"q": "postgresql", "tier": "long_term"})) == {
        searchable["db"].pk
    }
    internal = ada_client.get(url, {"q": "postgresql", "classification": "1"})
    assert searchable["secret"].pk not in result_ids(internal)
    tomorrow = (timezone.localdate() + timedelta(days=1)).isoformat()
    assert result_ids(ada_client.get(url, {"q": "postgresql", "since": tomorrow})) == set()


def test_search_explains_results_and_keeps_the_query_in_the_page(ada_client, searchable):
    response = ada_client.get(reverse("search"), {"q": "project database", "topic": "project"})
    body = response.content.decode()
    assert "<mark>database</mark>" in body and "<mark>project</mark>" in body
    assert 'data-stage="Sf"' in body and "Full text" in body
    assert 'value="project database"' in body and 'value="project"' in body
    assert "Why this result" in body
    assert RecallEvent.objects.get().query == "project database"


def test_search_answers_htmx_with_the_results_only(ada_client, searchable):
    response = ada_client.get(reverse("search"), {"q": "postgresql"}, **HX)
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="search-results"')
    assert "<form" not in body


def test_searching_is_looking_not_using(ada_client, searchable):
    ada_client.get(reverse("search"), {"q": "postgresql"})
    db = Memory.objects.get(pk=searchable["db"].pk)
    assert (db.use_count, db.recall_count) == (0, 0)


def test_search_shows_bad_input_on_the_form(ada_client, searchable):
    response = ada_client.get(reverse("search"), {"q": "x", "since": "not a date"})
    assert response.context["form"].errors["since"]
    assert response.context["result"] is None


def test_search_without_a_query_runs_nothing(ada_client, searchable):
    response = ada_client.get(reverse("search"))
    assert response.context["result"] is None and not RecallEvent.objects.exists()


# --- Helpers -----------------------------------------------------------------------------


def test_highlight_marks_query_words_and_escapes_the_rest():
    html = highlight("<b>Databases</b> & the café's database", ["database", "cafe"])
    assert html == (
        "&lt;b&gt;<mark>Databases</mark>&lt;/b&gt; &amp; the <mark>café</mark>&#x27;s "
        "<mark>database</mark>"
    )
    assert highlight("nothing <here>", []) == "nothing &lt;here&gt;"


@pytest.mark.parametrize(
    ("days", "label"),
    [(0.003, "4 min"), (0.25, "6 h"), (1, "1 d"), (6, "6 d"), (45, "1.5 mo"), (400, "1.1 y")],
)
def test_format_interval(days, label):
    assert format_interval(days) == label
