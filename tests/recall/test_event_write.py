"""The recall event (recall.services._event_save): every field stored as given, one
statement for an untracked recall on PostgreSQL, and its lazy commit confined to the
recall's own transaction."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from config.db import is_postgres
from memories.models import Classification
from recall.models import RecallEvent
from recall.services import recall_run

pytestmark = pytest.mark.django_db


def _synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


def test_the_event_holds_what_the_recall_did(user, namespace, make_memory, make_token):
    memory = make_memory("The deploy runs on Fridays at noon.")
    token, _secret = make_token(user)
    result = recall_run(
        namespaces=[namespace],
        ceiling=Classification.CONFIDENTIAL,
        query="when does the deploy run",
        session_id="s-1",
        track=False,
        user=user,
        token=token,
        context={"hour": 9},
    )
    event = RecallEvent.objects.get(pk=result.event_id)
    assert event.namespace_id == namespace.pk
    assert (event.token_id, event.user_id) == (token.pk, user.pk)
    assert event.query == "when does the deploy run"
    assert event.result_ids == [memory.pk]
    assert event.session_id == "s-1"
    assert event.filters["ceiling"] == Classification.CONFIDENTIAL
    assert event.filters["context"] == {"hour": 9}
    assert event.filters["track"] is False
    assert set(event.stage_timings) == set(result.stage_timings)
    assert event.duration_ms == pytest.approx(result.duration_ms)


def test_an_untracked_recall_writes_its_event_in_one_statement(namespace, make_memory):
    make_memory("The deploy runs on Fridays at noon.")
    with CaptureQueriesContext(connection) as queries:
        recall_run(
            namespaces=[namespace], ceiling=Classification.RESTRICTED, query="deploy", track=False
        )
    writes = [
        q["sql"] for q in queries if not q["sql"].lstrip().upper().startswith(("SELECT", "WITH"))
    ]
    if is_postgres():
        assert len(writes) == 1, writes
        assert writes[0].startswith("INSERT INTO") and "synchronous_commit" in writes[0]
    else:
        assert [w for w in writes if w.startswith("INSERT INTO")], writes


@pytest.mark.django_db(transaction=True)
def test_the_lazy_commit_ends_with_the_recall_transaction(namespace, make_memory):
    if not is_postgres():
        pytest.skip("PostgreSQL's commit setting")
    make_memory("The deploy runs on Fridays at noon.")
    assert _synchronous_commit() == "on"
    with transaction.atomic():
        recall_run(
            namespaces=[namespace], ceiling=Classification.RESTRICTED, query="deploy", track=True
        )
        assert _synchronous_commit() == "off"
    assert _synchronous_commit() == "on"
    recall_run(
        namespaces=[namespace], ceiling=Classification.RESTRICTED, query="deploy", track=False
    )
    assert _synchronous_commit() == "on"  # the one-statement write leaves the session as it was
