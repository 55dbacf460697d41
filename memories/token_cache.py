"""The token cache: an API token read by its prefix kept in the shared cache, so a request
does not cost a token query (memories.auth.token_for_secret; docs/scaling.md).

With API_TOKEN_CACHE_SECONDS, a token read from the database is kept in the shared cache
(Redis) under its prefix, with the generation it was read at. Every change that matters
to authentication (revocation, an edit, a deletion, the owner's deactivation) writes a
new generation once its transaction commits, so the next request on any process reads
the token again: the entry and the generation come in one round trip (MGET). Reading
the generation before the database means a request that read a token just before its
revocation stores it under the old generation, never the new one.
"""

from __future__ import annotations

import re
import uuid

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from memories.models import ApiToken

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


@receiver([post_save, post_delete], sender=ApiToken, dispatch_uid="engram-token-cache")
def _token_changed(sender, instance: ApiToken, **kwargs) -> None:
    token_cache_forget([instance.prefix])


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="engram-token-owner")
def _owner_changed(sender, instance, created: bool, **kwargs) -> None:
    if not created and settings.API_TOKEN_CACHE_SECONDS:
        token_cache_forget(list(instance.api_tokens.values_list("prefix", flat=True)))
