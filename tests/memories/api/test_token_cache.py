"""The token cache (memories/token_cache.py): with API_TOKEN_CACHE_SECONDS a request does
not cost a token query, and every change that matters to authentication still takes effect
on the next request. The test settings' cache is the database cache, shared like Redis."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories import services
from memories.models import ApiToken, Classification, Namespace
from memories.token_cache import (
    _token_cache_keys,
    token_by_prefix,
    token_namespaces,
    token_namespaces_store,
)
from tests.support.decay_fits import make_decay_fit

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def token_cache(settings):
    settings.API_TOKEN_CACHE_SECONDS = 60
    cache.clear()
    yield
    cache.clear()


def token_queries(agent, path: str = "/api/v1/memories") -> tuple[int, int]:
    """(status, statements that read the token table) of one GET."""
    with CaptureQueriesContext(connection) as queries:
        status = agent.get(path).status_code
    table = ApiToken._meta.db_table
    return status, sum(
        f'FROM "{table}"' in q["sql"] or f"FROM {table}" in q["sql"] for q in queries
    )


def test_the_second_request_reads_no_token_row(user, make_token, api):
    _token, secret = make_token(user)
    agent = api(secret)
    assert token_queries(agent) == (200, 1)
    assert token_queries(agent) == (200, 0)
    assert token_queries(agent) == (200, 0)


def test_without_the_setting_every_request_reads_the_token(settings, user, make_token, api):
    settings.API_TOKEN_CACHE_SECONDS = 0
    _token, secret = make_token(user)
    agent = api(secret)
    assert token_queries(agent) == (200, 1)
    assert token_queries(agent) == (200, 1)


def test_a_revoked_token_is_refused_on_the_next_request(client, user, make_token, api):
    token, secret = make_token(user)
    agent = api(secret)
    assert token_queries(agent) == (200, 1)
    assert token_queries(agent) == (200, 0)
    client.force_login(user)
    assert client.post(f"/api/v1/tokens/{token.pk}/revoke").status_code == 200
    response = agent.get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "This token has been revoked."


def test_an_edit_in_the_admin_takes_effect_on_the_next_request(
    user, namespace, make_token, make_memory, api
):
    secret_memory = make_memory(
        "The launch code is 0000.", classification=Classification.RESTRICTED
    )
    token, secret = make_token(user, ceiling=Classification.RESTRICTED)
    agent = api(secret)
    assert agent.get(f"/api/v1/memories/{secret_memory.pk}").status_code == 200
    assert token_queries(agent, f"/api/v1/memories/{secret_memory.pk}") == (200, 0)
    token.ceiling = Classification.INTERNAL
    token.save()  # what the admin's change form does
    assert agent.get(f"/api/v1/memories/{secret_memory.pk}").status_code == 404


def test_a_deleted_token_is_refused(user, make_token, api):
    token, secret = make_token(user)
    agent = api(secret)
    assert agent.get("/api/v1/memories").status_code == 200
    token.delete()
    response = agent.get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Invalid token."


def test_a_deactivated_owner_is_refused(user, make_token, api):
    _token, secret = make_token(user)
    agent = api(secret)
    assert agent.get("/api/v1/memories").status_code == 200
    user.is_active = False
    user.save()
    response = agent.get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "The token's owner is inactive."


def test_a_token_read_before_its_revocation_and_stored_after_it_is_not_served(
    user, make_token, api
):
    """The race the generations close: a request reads the live row, the token is revoked
    (new generation), then that request stores what it read under the generation it saw."""
    token, secret = make_token(user)
    entry_key, generation_key = _token_cache_keys(token.prefix)
    seen_generation = cache.get(generation_key)
    live = ApiToken.objects.select_related("owner").get(pk=token.pk)
    services.token_revoke(token=token)
    cache.set(entry_key, (seen_generation, live), 60)
    response = api(secret).get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "This token has been revoked."


@pytest.mark.parametrize("header", ["eng_NOT-HEX_x", "eng_0123456789abcdef0_x", "eng__x"])
def test_a_made_up_prefix_reads_neither_cache_nor_database(user, api, header):
    with CaptureQueriesContext(connection) as queries:
        response = api(header).get("/api/v1/memories")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Invalid token."
    # The database cache is the database: nothing at all was read for the token.
    assert not [q for q in queries if "cache" in q["sql"] or "apitoken" in q["sql"]]


def test_last_used_is_still_recorded(user, make_token, api):
    token, secret = make_token(user)
    assert token.last_used_at is None
    assert api(secret).get("/api/v1/memories").status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_the_cache_never_holds_the_owners_password_hash(user, make_token, api):
    token, secret = make_token(user)
    assert api(secret).get("/api/v1/memories").status_code == 200
    entry_key, _ = _token_cache_keys(token.prefix)
    _generation, cached = cache.get(entry_key)
    assert "password" in cached.owner.get_deferred_fields()
    assert user.password not in repr(cached.owner.__dict__)


# --- The namespaces a token names, kept per process under the token's generation ----------


def namespace_reads(agent, body: dict) -> tuple[int, int]:
    """(status, statements that read the namespace table) of one create."""
    with CaptureQueriesContext(connection) as queries:
        status = agent.post("/api/v1/memories", body, format="json").status_code
    table = Namespace._meta.db_table
    return status, sum(
        f'FROM "{table}"' in q["sql"] or f"FROM {table}" in q["sql"] for q in queries
    )


def test_the_second_request_naming_a_namespace_reads_no_namespace_row(
    user, namespace, make_token, api
):
    _token, secret = make_token(user, namespaces=[namespace])
    agent = api(secret)
    assert namespace_reads(agent, {"namespace": namespace.slug, "content": "One."}) == (201, 1)
    assert namespace_reads(agent, {"namespace": namespace.slug, "content": "Two."}) == (201, 0)
    # Without the cache every request reads it.
    services.namespace_update(namespace=namespace, changes={"description": "x"})
    assert namespace_reads(agent, {"namespace": namespace.slug, "content": "Three."}) == (201, 1)


def test_without_the_setting_every_request_reads_the_namespace(
    settings, user, namespace, make_token, api
):
    settings.API_TOKEN_CACHE_SECONDS = 0
    _token, secret = make_token(user, namespaces=[namespace])
    agent = api(secret)
    assert namespace_reads(agent, {"namespace": namespace.slug, "content": "One."}) == (201, 1)
    assert namespace_reads(agent, {"namespace": namespace.slug, "content": "Two."}) == (201, 1)


def dedupes(agent, slug: str, text: str) -> bool:
    """Whether storing `text` twice answers the first memory the second time."""
    first = agent.post("/api/v1/memories", {"namespace": slug, "content": text}, format="json")
    again = agent.post("/api/v1/memories", {"namespace": slug, "content": text}, format="json")
    assert first.status_code == 201, first.content
    assert again.status_code in (200, 201), again.content
    return again.json()["deduplicated"]


@pytest.mark.parametrize("how", ["api", "queryset update", "admin save"])
def test_a_namespace_change_takes_effect_on_the_next_request(user, namespace, make_token, api, how):
    _token, secret = make_token(user)
    agent = api(secret)
    assert dedupes(agent, namespace.slug, "Deploys happen on Tuesdays.")  # kept from now on
    if how == "api":
        response = agent.patch(
            f"/api/v1/namespaces/{namespace.slug}", {"dedupe": "off"}, format="json"
        )
        assert response.status_code == 200, response.content
    elif how == "queryset update":
        Namespace.objects.filter(pk=namespace.pk).update(dedupe=Namespace.Dedupe.OFF)
    else:
        namespace.dedupe = Namespace.Dedupe.OFF
        namespace.save()
    assert not dedupes(agent, namespace.slug, "The staging database is db2.")


def test_a_namespace_taken_from_the_token_is_refused_on_the_next_request(
    user, namespace, make_token, api
):
    other = services.namespace_create(owner=user, name="Home")
    token, secret = make_token(user, namespaces=[namespace, other])
    agent = api(secret)
    body = {"namespace": namespace.slug, "content": "One."}
    assert agent.post("/api/v1/memories", body, format="json").status_code == 201
    assert (
        agent.post("/api/v1/memories", body | {"content": "Two."}, format="json").status_code == 201
    )
    token.namespaces.remove(namespace)  # what the admin's change form does, in the end
    response = agent.post("/api/v1/memories", body | {"content": "Three."}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"namespace": ["No such namespace."]}
    namespace.tokens.add(token)  # and from the namespace's side
    assert (
        agent.post("/api/v1/memories", body | {"content": "Four."}, format="json").status_code
        == 201
    )


def test_a_deleted_namespace_is_refused_on_the_next_request(user, namespace, make_token, api):
    _token, secret = make_token(user)
    agent = api(secret)
    body = {"namespace": namespace.slug, "content": "One."}
    assert agent.post("/api/v1/memories", body, format="json").status_code == 201
    namespace.delete()
    response = agent.post("/api/v1/memories", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"namespace": ["No such namespace."]}


def test_a_decay_fit_deleted_or_saved_gives_the_owners_tokens_a_new_generation(
    user, other_user, namespace, make_token, api
):
    """A namespace carries its applied fit, and deleting the fit sets the namespace's to
    null without a signal of the namespace's own."""
    token, secret = make_token(user)
    other_token, other_secret = make_token(other_user)
    for agent in (api(secret), api(other_secret)):
        assert agent.get("/api/v1/memories").status_code == 200
    keys = [_token_cache_keys(t.prefix)[1] for t in (token, other_token)]
    before = [cache.get(key) for key in keys]
    assert None not in before  # a token never changed has a generation all the same
    fit = make_decay_fit(namespace, accepted=True)
    after_save = [cache.get(key) for key in keys]
    assert after_save[0] != before[0] and after_save[1] == before[1]  # only the owner's
    fit.delete()
    assert cache.get(keys[0]) not in (before[0], after_save[0])


def test_a_namespace_read_before_a_change_and_kept_after_it_is_not_served(
    user, namespace, make_token, api
):
    """The race the generations close, for namespaces: a request reads the namespace, it
    changes (new generation), then that request keeps what it read under the generation it
    saw."""
    token, secret = make_token(user)
    agent = api(secret)
    assert agent.get("/api/v1/memories").status_code == 200  # the token is cached
    seen = token_by_prefix(token.prefix)
    old = Namespace.objects.select_related("decay_fit_applied").get(pk=namespace.pk)
    Namespace.objects.filter(pk=namespace.pk).update(dedupe=Namespace.Dedupe.OFF)
    token_namespaces_store(seen, {namespace.slug: old})
    assert token_namespaces(seen, [namespace.slug])  # kept, under the old generation
    assert not dedupes(agent, namespace.slug, "Deploys happen on Tuesdays.")
