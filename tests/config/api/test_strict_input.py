"""Types are not coerced and substring filters need enough text to use an index (issue 13,
items 8 and 10), through the API and the dashboard alike."""

from __future__ import annotations

import pytest

from memories.substring import MIN_CHARS

pytestmark = pytest.mark.django_db


@pytest.fixture
def writer(user, namespace, make_token, api):
    _, secret = make_token(user, namespaces=[namespace], access="write")
    return api(secret)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("content", 5),
        ("content", True),
        ("content", ["a list"]),
        ("strength", True),
        ("strength", "1.5"),
        ("keywords", "not a list"),
        ("keywords", [1, 2]),
        ("topic", 3.5),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_field(
    writer, namespace, field, value, nothing_written
):
    body = {"namespace": namespace.slug, "content": "A note", field: value}
    with nothing_written():
        single = writer.post("/api/v1/memories", body, format="json")
        bulk = writer.post("/api/v1/memories/bulk", {"memories": [body]}, format="json")
    assert single.status_code == 400, single.json()
    assert field in single.json()["error"]["fields"]
    assert bulk.status_code == 400
    assert field in bulk.json()["error"]["fields"]["memories"]["0"]


@pytest.mark.parametrize("needle", ["a", "ab", "%", "%%%%", "_*_", "a%b", " .- ", "é!"])
def test_a_filter_too_short_for_an_index_is_refused_naming_q(writer, namespace, needle):
    response = writer.get("/api/v1/memories", {"q": needle})
    assert response.status_code == 400
    error = response.json()["error"]
    assert list(error["fields"]) == ["q"]
    assert f"At least {MIN_CHARS} letters or digits" in error["fields"]["q"][0]


def test_a_filter_of_three_letters_is_served(writer, namespace, make_memory):
    make_memory("Kyoto has many temples")
    make_memory("Osaka has castles")
    response = writer.get("/api/v1/memories", {"q": "kyo"})
    assert response.status_code == 200
    assert [m["content"] for m in response.json()["results"]] == ["Kyoto has many temples"]


def test_the_dashboard_refuses_the_same_filter_with_a_message(client, user, namespace):
    client.force_login(user)
    page = client.get("/memories/", {"q": "ab"})
    assert page.status_code == 200
    assert f"At least {MIN_CHARS} letters or digits" in page.content.decode()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": 5}, "query"),
        ({"query": "kyoto", "limit": "10"}, "limit"),
        ({"query": "kyoto", "track": "yes"}, "track"),
        ({"query": "kyoto", "include_expired": 1}, "include_expired"),
        ({"query": "kyoto", "context": {"hour": "9"}}, "context"),
    ],
)
def test_recall_bodies_are_not_coerced_either(writer, body, field, nothing_written):
    with nothing_written():
        response = writer.post("/api/v1/recall", body, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["error"]["fields"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/review/sessions", {"limit": "10"}, "limit"),
        ("/api/v1/review/sessions", {"deck": 7}, "deck"),
        ("/api/v1/review/cram", {"seed": "1"}, "seed"),
        ("/api/v1/review/cram", {"cards": ["1"]}, "cards"),
    ],
)
def test_review_bodies_are_not_coerced_either(
    writer, namespace, path, body, field, nothing_written
):
    with nothing_written():
        response = writer.post(path, {"namespace": namespace.slug, **body}, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["error"]["fields"]
