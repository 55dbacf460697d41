"""Recall shows a group of near-duplicates once (issue 15, item 2): the best of the group,
with the others' ids under `duplicates`, only ids the caller may see."""

from __future__ import annotations

import pytest

from memories import services
from memories.models import Association, Classification, Memory
from memories.signatures import simhash
from recall.fusion import Candidate
from recall.ranking import collapse_near_duplicates, text_near_duplicates

pytestmark = pytest.mark.django_db

PARIS = "User lives in Paris."
PARIS_AGAIN = "The user lives in Paris."
PARIS_NOW = "The user lives in Paris now."


def recall(client, query: str, **extra):
    response = client.post(
        "/api/v1/recall", {"query": query, "track": False, **extra}, format="json"
    )
    assert response.status_code == 200, response.json()
    return response.json()["results"]


def store(client, namespace, *texts: str, **fields) -> list[int]:
    response = client.post(
        "/api/v1/memories/bulk",
        {"namespace": namespace.slug, "memories": [{"content": t, **fields} for t in texts]},
        format="json",
    )
    assert response.status_code == 201, response.json()
    return [item["id"] for item in response.json()]


def test_a_group_is_one_result_naming_the_others(user, namespace, make_token, api):
    _, secret = make_token(user)
    agent = api(secret)
    paris, again, now = store(agent, namespace, PARIS, PARIS_AGAIN, PARIS_NOW)
    (other,) = store(agent, namespace, "The user works in Lyon on Mondays.")
    results = recall(agent, "where does the user live? Paris")
    ids = [hit["memory_id"] for hit in results]
    assert len([i for i in ids if i in (paris, again, now)]) == 1
    [kept] = [hit for hit in results if hit["memory_id"] in (paris, again, now)]
    assert sorted([kept["memory_id"], *kept["duplicates"]]) == [paris, again, now]
    for hit in results:
        if hit["memory_id"] == other:
            assert hit["duplicates"] == []


def test_duplicates_name_only_memories_the_caller_may_see(user, namespace, make_token, api):
    _, high = make_token(user, ceiling=Classification.RESTRICTED)
    writer = api(high)
    (first,) = store(writer, namespace, PARIS, classification="internal")
    (hidden,) = store(writer, namespace, PARIS_AGAIN, classification="restricted")
    (third,) = store(writer, namespace, "User lives in Paris!", classification="internal")
    _, low = make_token(user, ceiling=Classification.INTERNAL)
    results = recall(api(low), "user lives in Paris")
    assert hidden not in [hit["memory_id"] for hit in results]
    assert all(hidden not in hit["duplicates"] for hit in results)
    group = [hit for hit in results if hit["memory_id"] in (first, third)]
    assert len(group) == 1 and group[0]["duplicates"] in ([first], [third])
    # The writer who may see the restricted one gets the whole group, once.
    everything = recall(writer, "user lives in Paris")
    group = [hit for hit in everything if hit["memory_id"] in (first, hidden, third)]
    assert len(group) == 1
    assert sorted([group[0]["memory_id"], *group[0]["duplicates"]]) == [first, hidden, third]


def test_a_forgotten_member_is_not_named(user, namespace, make_token, api):
    _, secret = make_token(user)
    agent = api(secret)
    paris, again = store(agent, namespace, PARIS, PARIS_AGAIN)
    services.memory_forget(memory=Memory.objects.get(pk=again), reason="wrong")
    results = recall(agent, "user lives in Paris")
    assert [(hit["memory_id"], hit["duplicates"]) for hit in results] == [(paris, [])]


def _candidate(memory_id: int, final: float) -> Candidate:
    candidate = Candidate(memory_id, {"id": memory_id, "content": ""})
    candidate.final = final
    return candidate


def test_collapse_keeps_the_best_of_each_connected_group():
    candidates = {i: _candidate(i, f) for i, f in ((1, 0.5), (2, 0.9), (3, 0.2), (4, 0.9))}
    # 1-2 and 2-3 chain into one group; 9 is linked but outside the candidates.
    links = [(1, 2), (3, 2), (4, 9), (5, 6)]
    duplicates = collapse_near_duplicates(candidates, links, visible=[9])
    assert duplicates == {2: [1, 3], 4: [9]}
    assert sorted(candidates) == [2, 4]
    # A member outside the candidates and not visible is not named.
    again = {i: _candidate(i, 1.0) for i in (4,)}
    assert collapse_near_duplicates(again, [(4, 9)]) == {}
    # Ties: the lower id stays.
    tie = {i: _candidate(i, 0.5) for i in (7, 8)}
    assert collapse_near_duplicates(tie, [(8, 7)]) == {7: [8]}


def _texts(*rows: tuple[int, int, str, float]) -> dict[int, Candidate]:
    candidates = {}
    for memory_id, namespace_id, content, final in rows:
        candidate = Candidate(
            memory_id,
            {
                "id": memory_id,
                "namespace_id": namespace_id,
                "content": content,
                "signature": simhash(content),
            },
        )
        candidate.final = final
        candidates[memory_id] = candidate
    return candidates


def test_texts_compared_at_recall_pair_near_duplicates_of_one_comparing_namespace():
    candidates = _texts(
        (1, 10, PARIS, 0.9),
        (2, 10, PARIS_AGAIN, 0.8),
        (3, 10, "User lives in Berlin.", 0.7),
        (4, 20, PARIS, 0.6),  # the same text in another namespace: another memory
        (5, 30, PARIS_AGAIN, 0.5),  # a namespace that does not compare (dedupe off)
        (6, 30, PARIS, 0.4),
    )
    found = text_near_duplicates(
        candidates, namespaces=[10, 20], trigram_threshold=0.7, signature_threshold=0.75
    )
    assert found == [(1, 2)]
    # Only the pool's best are compared.
    assert (
        text_near_duplicates(
            candidates, namespaces=[10], trigram_threshold=0.7, signature_threshold=0.75, pool=1
        )
        == []
    )


def test_a_group_written_a_moment_ago_is_one_result_before_the_worker_links_it(
    user, namespace, make_token, api
):
    # No `committed()`: the worker's task has not run, nothing is linked or sketched yet.
    _, secret = make_token(user)
    agent = api(secret)
    paris, again = store(agent, namespace, PARIS, PARIS_AGAIN)
    assert not Association.objects.filter(kind=services.NEAR_DUPLICATE).exists()
    results = recall(agent, "where does the user live? Paris")
    [group] = [hit for hit in results if hit["memory_id"] in (paris, again)]
    assert sorted([group["memory_id"], *group["duplicates"]]) == [paris, again]


def test_a_namespace_that_keeps_duplicates_gets_each_of_them(user, make_token, api):
    plain = services.namespace_create(owner=user, name="Log", dedupe="off")
    _, secret = make_token(user)
    agent = api(secret)
    paris, again = store(agent, plain, PARIS, PARIS_AGAIN)
    results = recall(agent, "where does the user live? Paris", namespaces=[plain.slug])
    assert sorted(hit["memory_id"] for hit in results) == [paris, again]
    assert all(hit["duplicates"] == [] for hit in results)
