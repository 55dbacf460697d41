"""The token cache: an API token read by its prefix kept in the shared cache, so a request
does not cost a token query (memories.auth.token_for_secret; docs/scaling.md).

With API_TOKEN_CACHE_SECONDS, a token read from the database is kept in the shared cache
(Redis) under its prefix, with the generation it was read at. Every change that matters
to authentication (revocation, an edit, a deletion, the owner's deactivation) writes a
new generation once its transaction commits, so the next request on any process reads
the token again: the entry and the generation come in one round trip (MGET). Reading
the generation before the database means a request that read a token just before its
revocation stores it under the old generation, never the new one.

The namespaces a token names in its requests are kept the same way, in each process
(token_namespaces / token_namespaces_store): under the token's prefix and generation, so
the look-up costs no statement (about 1.3 ms of a request's CPU on PostgreSQL, a fifth of
a create). Any change to a namespace (saved, updated in bulk, deleted, its decay fit) or to
which namespaces a token may use writes new generations for every token of the owner
(namespaces_changed), so the next request on any process reads them again.
"""

from __future__ import annotations

import copy
import re
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.dispatch import receiver

from memories.models import ApiToken, DecayFit, Namespace

_PREFIX = re.compile(r"[0-9a-f]{1,16}")


def _token_cache_keys(prefix: str) -> tuple[str, str]:
    return f"engram:token:{prefix}", f"engram:token-generation:{prefix}"


def _tokens():
    """Tokens with their owner, less the owner's password hash: it has no business in a
    cache, and a user loaded without it saves only the fields it holds."""
    return ApiToken.objects.select_related("owner").defer("owner__password")


def token_by_prefix(prefix: str) -> ApiToken | None:
    if not _PREFIX.fullmatch(prefix):
        return None  # never a database or cache lookup for a made-up prefix
    seconds = settings.API_TOKEN_CACHE_SECONDS
    if not seconds:
        return _tokens().filter(prefix=prefix).first()
    entry_key, generation_key = _token_cache_keys(prefix)
    found = cache.get_many([entry_key, generation_key])
    generation = found.get(generation_key)
    entry = found.get(entry_key)
    if entry is not None and entry[0] == generation:
        return entry[1]
    if generation is None:
        # A token never changed has no generation yet: give it one, so what is kept under
        # it (its namespaces) can be dropped by the next change. Whoever adds first wins.
        cache.add(generation_key, uuid.uuid4().hex, timeout=None)
        generation = cache.get(generation_key)
    token = _tokens().filter(prefix=prefix).first()
    if token is not None:
        token._cache_generation = generation
        cache.set(entry_key, (generation, token), seconds)
    return token


def token_cache_store(token: ApiToken) -> None:
    """Store a token read by token_by_prefix again (its last_used_at refreshed)."""
    seconds = settings.API_TOKEN_CACHE_SECONDS
    if seconds and hasattr(token, "_cache_generation"):
        entry_key, _ = _token_cache_keys(token.prefix)
        cache.set(entry_key, (token._cache_generation, token), seconds)


def token_cache_forget(prefixes: list[str]) -> None:
    """New generations for these tokens: the next request reads them from the database.
    Now and again when the transaction commits (a request that read the old row in the
    meantime must not keep it)."""
    if not settings.API_TOKEN_CACHE_SECONDS or not prefixes:
        return

    def forget() -> None:
        generations = {_token_cache_keys(p)[1]: uuid.uuid4().hex for p in prefixes}
        cache.set_many(generations, timeout=None)
        cache.delete_many([_token_cache_keys(p)[0] for p in prefixes])

    forget()
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(forget)


# --- The namespaces a token names, per process --------------------------------------------

_NAMED_MAX = 1024  # entries (token, generation, slug), a few kB each; least recently used go first
_named: OrderedDict[tuple[str, str, str], tuple[float, Namespace]] = OrderedDict()
_named_lock = threading.Lock()


def _generation(token: ApiToken | None) -> str | None:
    if token is None or not settings.API_TOKEN_CACHE_SECONDS:
        return None
    return getattr(token, "_cache_generation", None)  # only tokens read through the cache


def token_namespaces(token: ApiToken | None, slugs: Iterable[str]) -> dict[str, Namespace]:
    """Of these slugs, the namespaces this process keeps for the token (each a copy, so a
    request may change its own), by slug; those it does not keep are left out."""
    generation = _generation(token)
    if generation is None:
        return {}
    now = time.monotonic()
    found = {}
    with _named_lock:
        for slug in slugs:
            key = (token.prefix, generation, slug)
            kept = _named.get(key)
            if kept is None:
                continue
            if kept[0] <= now:
                del _named[key]
                continue
            _named.move_to_end(key)
            found[slug] = kept[1]
    return {slug: copy.copy(namespace) for slug, namespace in found.items()}


def token_namespaces_store(token: ApiToken | None, namespaces: dict[str, Namespace]) -> None:
    """Keep namespaces the token's scope read from the database, by slug, under the
    generation its request began with."""
    generation = _generation(token)
    if generation is None or not namespaces:
        return
    expires = time.monotonic() + settings.API_TOKEN_CACHE_SECONDS
    with _named_lock:
        for slug, namespace in namespaces.items():
            key = (token.prefix, generation, slug)
            _named[key] = (expires, copy.copy(namespace))
            _named.move_to_end(key)
        while len(_named) > _NAMED_MAX:
            _named.popitem(last=False)


def namespaces_changed(owner_ids: Iterable[int]) -> None:
    """A namespace of these users changed, or which namespaces their tokens may use: every
    process reads their tokens and namespaces again on the next request."""
    owner_ids = {pk for pk in owner_ids if pk is not None}
    if settings.API_TOKEN_CACHE_SECONDS and owner_ids:
        prefixes = ApiToken.objects.filter(owner_id__in=owner_ids).values_list("prefix", flat=True)
        token_cache_forget(list(prefixes))


@receiver([post_save, post_delete], sender=Namespace, dispatch_uid="engram-namespace-cache")
def _namespace_changed(sender, instance: Namespace, **kwargs) -> None:
    namespaces_changed([instance.owner_id])


@receiver([post_save, post_delete], sender=DecayFit, dispatch_uid="engram-decay-fit-cache")
def _decay_fit_changed(sender, instance: DecayFit, **kwargs) -> None:
    # A namespace carries its applied fit; deleting the fit sets the namespace's to null
    # without a signal of the namespace's own.
    namespaces_changed(
        Namespace.objects.filter(pk=instance.namespace_id).values_list("owner_id", flat=True)
    )


@receiver(m2m_changed, sender=ApiToken.namespaces.through, dispatch_uid="engram-token-namespaces")
def _token_namespaces_changed(sender, instance, action: str, **kwargs) -> None:
    if action.startswith("post_"):
        namespaces_changed([instance.owner_id])  # a token's or a namespace's: both have one


@receiver([post_save, post_delete], sender=ApiToken, dispatch_uid="engram-token-cache")
def _token_changed(sender, instance: ApiToken, **kwargs) -> None:
    token_cache_forget([instance.prefix])


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="engram-token-owner")
def _owner_changed(sender, instance, created: bool, **kwargs) -> None:
    if not created and settings.API_TOKEN_CACHE_SECONDS:
        token_cache_forget(list(instance.api_tokens.values_list("prefix", flat=True)))
