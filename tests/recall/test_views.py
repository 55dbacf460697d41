"""recall's page: search."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from memories import services
from memories.models import Memory
from recall.models import RecallEvent
from recall.views import highlight
from tests.support.dashboard import HX

pytestmark = pytest.mark.django_db


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


def test_highlight_marks_query_words_and_escapes_the_rest():
    html = highlight("<b>Databases</b> & the café's database", ["database", "cafe"])
    assert html == (
        "&lt;b&gt;<mark>Databases</mark>&lt;/b&gt; &amp; the <mark>café</mark>&#x27;s "
        "<mark>database</mark>"
    )
    assert highlight("nothing <here>", []) == "nothing &lt;here&gt;"
