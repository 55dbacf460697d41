from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories import services
from memories.models import Classification, Memory
from recall.models import RecallEvent
from review.models import Card, ReviewLog

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent_ns(user):
    ns = services.namespace_create(owner=user, name="agent", mode="agent_memory")
    services.memory_create(
        namespace=ns,
        content="The project uses PostgreSQL in production.",
        topic="project",
        classification=Classification.PUBLIC,
    )
    services.memory_create(namespace=ns, content="Deploys happen on Tuesdays.", topic="ops")
    services.memory_create(
        namespace=ns,
        content="The PostgreSQL superuser password is hunter2",
        topic="project",
        classification=Classification.RESTRICTED,
    )
    return ns


def test_it_recalls_explains_and_tracks(user, agent_ns, make_token, api):
    _, secret = make_token(user, namespaces=[agent_ns])
    response = api(secret).post(
        "/api/v1/recall",
        {"query": "which database, postgresql?", "session_id": "s1"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    contents = [hit["content"] for hit in body["results"]]
    assert contents[0] == "The project uses PostgreSQL in production."
    assert "hunter2" not in str(body)  # restricted is above the token's ceiling
    assert "Sf" in body["stage_timings"] and "Sf" in body["results"][0]["stages"]
    assert "final_score" in body["results"][0]["explanation"]
    memory = Memory.objects.get(content__startswith="The project uses")
    assert (memory.recall_count, memory.session_ids) == (1, ["s1"])
    event = RecallEvent.objects.get(pk=body["event_id"])
    assert event.result_ids[0] == memory.pk


def test_a_word_only_hidden_memories_hold_is_never_named(
    user, other_user, agent_ns, make_token, api
):
    """Nothing in a recall's answer (results, Sf's explanation of what it matched on and
    what it dropped as too common) tells a caller that a word is in a memory above its
    ceiling or in another user's namespace."""
    theirs = services.namespace_create(owner=other_user, name="theirs")
    services.memory_create(namespace=theirs, content="Their vault word is qv9xk2")
    services.memory_create(
        namespace=agent_ns, content="Vault word qv9xk2", classification=Classification.RESTRICTED
    )
    _, low = make_token(user, namespaces=[agent_ns], ceiling=Classification.PUBLIC)
    _, high = make_token(user, namespaces=[agent_ns], ceiling=Classification.RESTRICTED)

    def answer(secret):
        response = api(secret).post(
            "/api/v1/recall", {"query": "qv9xk2 hunter2", "track": False}, format="json"
        )
        assert response.status_code == 200, response.json()
        return response.json()

    seen = answer(low)
    assert "qv9xk2" not in str(seen).replace(seen["query"], "")
    assert "hunter2" not in str(seen).replace(seen["query"], "")
    assert seen["results"] == []
    # The same question within the ceiling finds both words: the check above can fail.
    assert 'FTS matches on "qv9xk2"' in answer(high)["stage_timings"]["Sf"]["detail"]


def test_track_false_changes_nothing(user, agent_ns, make_token, api):
    _, secret = make_token(user, namespaces=[agent_ns])
    api(secret).post("/api/v1/recall", {"query": "postgresql", "track": False}, format="json")
    assert Memory.objects.filter(recall_count__gt=0).count() == 0


def test_a_read_only_token_recalls_with_track_false(
    user, namespace, make_token, api, nothing_written
):
    memory = services.memory_create(namespace=namespace, content="Kyoto has 1600 temples")
    Card.objects.filter(memory=memory).update(next_review=timezone.now() - timedelta(days=1))
    _, secret = make_token(user, namespaces=[namespace], access="read")
    client = api(secret)

    read = client.post("/api/v1/recall", {"query": "kyoto temples", "track": False}, format="json")
    assert read.status_code == 200, read.json()
    assert [hit["memory_id"] for hit in read.json()["results"]] == [memory.pk]

    # Without `track`, a read-only token's recall is read-only.
    default = client.post("/api/v1/recall", {"query": "kyoto temples"}, format="json")
    assert default.status_code == 200, default.json()
    assert [hit["memory_id"] for hit in default.json()["results"]] == [memory.pk]

    # Tracking boosts and counts the results: a write, so asking for it is refused by name.
    with nothing_written():
        tracked = client.post(
            "/api/v1/recall", {"query": "kyoto temples", "track": True}, format="json"
        )
    assert tracked.status_code == 403
    error = tracked.json()["error"]
    assert error["code"] == "permission_denied" and list(error["fields"]) == ["track"]
    assert "`track: false`" in error["message"]

    stored = Memory.objects.get(pk=memory.pk)
    assert (stored.recall_count, stored.access_count, stored.use_count) == (0, 0, 0)
    assert not ReviewLog.objects.exists()
    assert RecallEvent.objects.count() == 2  # the logs of the two read-only recalls


def test_other_users_namespaces_and_bad_input(
    user, other_user, agent_ns, make_token, api, nothing_written
):
    _, theirs = make_token(other_user)
    with nothing_written():
        response = api(theirs).post(
            "/api/v1/recall", {"query": "postgresql", "namespaces": [agent_ns.slug]}, format="json"
        )
    assert response.status_code == 400
    assert "namespaces" in response.json()["error"]["fields"]
    services.namespace_create(owner=other_user, name="Mine")
    response = api(theirs).post("/api/v1/recall", {"query": "postgresql"}, format="json")
    assert response.status_code == 200 and response.json()["results"] == []
    _, mine = make_token(user)
    for payload, field in [
        ({"query": ""}, "query"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "stages": ["S9"]}, "stages"),
        ({"query": "x", "context": {"hour": 25}}, "context"),
        ({"query": "x", "colour": 1}, "colour"),
    ]:
        with nothing_written():
            response = api(mine).post("/api/v1/recall", payload, format="json")
        assert response.status_code == 400 and field in response.json()["error"]["fields"]
    # The input is validated by one serializer per thread: no error of the requests
    # above stays with it, and a body that is not an object is refused by name too.
    response = api(mine).post("/api/v1/recall", ["query"], format="json")
    assert response.status_code == 400
    assert api(mine).post("/api/v1/recall", {"query": "x"}, format="json").status_code == 200


def test_a_recall_of_a_due_memory_counts_as_an_implicit_review(user, namespace, make_token, api):
    memory = services.memory_create(namespace=namespace, content="Kyoto has 1600 temples")
    Card.objects.filter(memory=memory).update(
        next_review=timezone.now() - timedelta(days=1), repetitions=1, interval_days=1
    )
    _, secret = make_token(user, namespaces=[namespace])
    api(secret).post("/api/v1/recall", {"query": "kyoto temples"}, format="json")
    log = ReviewLog.objects.get(card__memory=memory)
    assert (log.source, log.grade) == ("implicit", 4)
    card = Card.objects.get(memory=memory)
    assert card.next_review > timezone.now()


def test_a_recall_naming_its_namespaces_reads_only_those(user, namespace, make_token, api):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    services.memory_create(namespace=namespace, content="Lighthouse keeper schedule")
    _, secret = make_token(user, all_namespaces=True)
    body = {"query": "lighthouse", "namespaces": [namespace.slug], "track": False}
    api(secret).post("/api/v1/recall", body, format="json")  # the token's first use

    def recall() -> tuple[list, list[str]]:
        with CaptureQueriesContext(connection) as captured:
            response = api(secret).post("/api/v1/recall", body, format="json")
        assert response.status_code == 200
        return response.json()["results"], [q["sql"] for q in captured.captured_queries]

    few_results, few = recall()
    for n in range(30):
        services.namespace_create(owner=user, name=f"Other {n}")
    many_results, many = recall()

    assert [hit["memory_id"] for hit in many_results] == [hit["memory_id"] for hit in few_results]
    assert len(many) == len(few)
    namespace_reads = [sql for sql in many if 'FROM "memories_namespace"' in sql]
    assert namespace_reads and all(namespace.slug in sql for sql in namespace_reads)
    # An unknown slug among them is still named, and nothing is recalled.
    body["namespaces"] = [namespace.slug, "other-0", "nope"]
    response = api(secret).post("/api/v1/recall", body, format="json")
    assert response.status_code == 400
    assert "nope" in str(response.json()) and "other-0" not in str(response.json())


def _tracked_recall(api, secret: str, query: str) -> tuple[dict, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        response = api(secret).post("/api/v1/recall", {"query": query}, format="json")
    assert response.status_code == 200
    return response.json(), len(captured.captured_queries)


def test_a_tracked_recall_grades_its_due_memories_in_a_fixed_number_of_statements(
    user, namespace, make_token, api
):
    _, secret = make_token(user, namespaces=[namespace])
    yesterday = timezone.now() - timedelta(days=1)

    def due_memories(word: str, count: int) -> list[Memory]:
        made = [
            services.memory_create(namespace=namespace, content=f"{word} ferry timetable {n}")
            for n in range(count)
        ]
        Card.objects.filter(memory__in=made).update(
            next_review=yesterday, repetitions=1, interval_days=1
        )
        return made

    one = due_memories("Quay", 1)
    _tracked_recall(api, secret, "warm up")  # the token's first use writes last_used_at
    _, statements_for_one = _tracked_recall(api, secret, "quay ferry")
    many = due_memories("Pier", 6)
    body, statements_for_six = _tracked_recall(api, secret, "pier ferry")

    assert {hit["memory_id"] for hit in body["results"]} >= {m.pk for m in many}
    assert statements_for_six == statements_for_one
    for memory in [*one, *many]:
        log = ReviewLog.objects.get(card__memory=memory)
        assert (log.source, log.grade, log.state_after["version"]) == ("implicit", 4, 1)
        card = Card.objects.get(memory=memory)
        assert (card.version, card.total_reviews, card.correct_reviews) == (1, 1, 1)
        assert card.next_review > timezone.now()
        event = memory.events.get(kind="graded")
        assert event.after["review_log"] == log.pk
        assert event.before["utility"] == log.state_before["utility"]
        assert (
            event.after["utility"]
            == log.state_after["utility"]
            == Memory.objects.get(pk=memory.pk).utility
        )
    # Graded once: no longer due, so a second recall adds no review.
    _tracked_recall(api, secret, "pier ferry")
    assert ReviewLog.objects.filter(card__memory__in=many).count() == 6


def _recall_queries(api, secret: str, query: str) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        response = api(secret).post(
            "/api/v1/recall", {"query": query, "track": False}, format="json"
        )
    assert response.status_code == 200
    return len(captured.captured_queries)


def test_a_recall_runs_the_same_few_queries_however_many_memories_match(
    user, namespace, make_token, api
):
    _, secret = make_token(user, namespaces=[namespace])
    first = services.memory_create(namespace=namespace, content="Harbour crane maintenance log")
    services.association_create(
        source=first,
        target=services.memory_create(namespace=namespace, content="Crane operator rota"),
    )
    for n in range(12):  # more than the limit: Sf fills it, as it will below
        services.memory_create(namespace=namespace, content=f"Harbour crane inspection {n}")
    _recall_queries(api, secret, "warm up")  # the token's first use writes last_used_at
    few = _recall_queries(api, secret, "harbour crane")

    for n in range(60):
        services.memory_create(namespace=namespace, content=f"Harbour crane repair {n}")
    many = _recall_queries(api, secret, "harbour crane")

    assert many == few
    # Token, rate limit (database cache in the tests), scope, the stages, candidate rows,
    # links, the event: a fixed number, never one per candidate.
    assert many <= 20


def test_each_result_lists_the_results_it_contradicts_and_which_is_newer(
    user, namespace, make_token, api
):
    now = timezone.now()
    old = services.memory_create(
        namespace=namespace,
        content="The release deadline is May 5",
        created_at=now - timedelta(days=2),
    )
    new = services.memory_create(
        namespace=namespace, content="Release deadline moved: May 12 now", created_at=now
    )
    _, secret = make_token(user, namespaces=[namespace], access="read")
    response = api(secret).post("/api/v1/recall", {"query": "release deadline"}, format="json")
    assert response.status_code == 200, response.json()
    results = {hit["memory_id"]: hit for hit in response.json()["results"]}
    assert results[old.pk]["conflicts"] == [
        {"memory_id": new.pk, "newer_id": new.pk, "reason": "different numbers"}
    ]
    assert results[new.pk]["conflicts"] == [
        {"memory_id": old.pk, "newer_id": new.pk, "reason": "different numbers"}
    ]
    assert results[new.pk]["warnings"] == [
        f"⚠️ Conflicts with another result (memory {old.pk}, older): different numbers"
    ]
