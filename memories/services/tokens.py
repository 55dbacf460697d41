"""API tokens: create (the secret shown once, stored as a hash) and revoke."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from memories.models import ApiToken, Classification, Namespace
from memories.token_cache import token_cache_forget

TOKEN_PREFIX_BYTES = 6
TOKEN_SECRET_BYTES = 32


def token_hash(secret: str) -> str:
    """SHA-256 of the whole token: tokens are 256-bit random, so no salt or stretching."""
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def token_create(
    *,
    owner,
    name: str,
    namespaces: Iterable[Namespace] = (),
    all_namespaces: bool = False,
    access: str = "read",
    ceiling: int = Classification.INTERNAL,
    expires_at: datetime | None = None,
) -> tuple[Any, str]:
    """Create an API token; returns (token, secret). The secret is never stored or shown again."""
    namespaces = list(namespaces)
    if any(ns.owner_id != owner.pk for ns in namespaces):
        raise ValidationError({"namespaces": "Unknown namespace."})
    if not all_namespaces and not namespaces:
        raise ValidationError({"namespaces": "Choose at least one namespace, or all_namespaces."})
    if all_namespaces and namespaces:
        # Saved as both, the list would be a scope that is not the token's.
        raise ValidationError({"namespaces": "Choose some namespaces or all_namespaces, not both."})
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError({"expires_at": "Must be in the future."})
    prefix = secrets.token_hex(TOKEN_PREFIX_BYTES)
    secret = f"eng_{prefix}_{secrets.token_urlsafe(TOKEN_SECRET_BYTES)}"
    token = ApiToken(
        owner=owner,
        name=name.strip(),
        prefix=prefix,
        secret_hash=token_hash(secret),
        all_namespaces=all_namespaces,
        access=access,
        ceiling=ceiling,
        expires_at=expires_at,
    )
    token.full_clean()
    token.save(force_insert=True)
    if namespaces:
        token.namespaces.set(namespaces)
    return token, secret


def token_revoke(*, token, now: datetime | None = None) -> None:
    """Revoke a token; the next request that presents it is refused."""
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=now or timezone.now()
    )
    # An update sends no signal: the token cache is told here.
    token_cache_forget([token.prefix])
