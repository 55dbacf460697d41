"""Who is calling and what they may touch: bearer tokens, the request scope, throttling."""

from __future__ import annotations

import hmac
import math
from collections.abc import Iterable
from datetime import timedelta
from functools import cached_property

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions, serializers, throttling
from rest_framework.request import Request

from memories.models import ApiToken, Classification, Memory, Namespace
from memories.services import token_hash
from memories.token_cache import (
    token_by_prefix,
    token_cache_store,
    token_namespaces,
    token_namespaces_store,
)

# last_used_at is refreshed at most this often, so a busy token is not a write per request.
LAST_USED_RESOLUTION = timedelta(minutes=5)


def token_for_secret(secret: str) -> ApiToken:
    """The live token a secret (`eng_<prefix>_<secret>`) belongs to, its owner loaded; every
    transport's check (the REST API's bearer header, MCP over HTTP and stdio).
    AuthenticationFailed says why not."""
    parts = secret.split("_")
    if len(parts) < 3 or parts[0] != "eng":
        raise exceptions.AuthenticationFailed("Malformed token.")
    token = token_by_prefix(parts[1])
    if token is None or not hmac.compare_digest(token.secret_hash, token_hash(secret)):
        raise exceptions.AuthenticationFailed("Invalid token.")
    now = timezone.now()
    if token.revoked_at is not None:
        raise exceptions.AuthenticationFailed("This token has been revoked.")
    if token.expires_at is not None and token.expires_at <= now:
        raise exceptions.AuthenticationFailed("This token has expired.")
    if not token.owner.is_active:
        raise exceptions.AuthenticationFailed("The token's owner is inactive.")
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
        token_cache_store(token)
    return token


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer eng_<prefix>_<secret>`; request.auth is the ApiToken."""

    keyword = "Bearer"

    def authenticate(self, request: Request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != self.keyword.lower():
            return None
        token = token_for_secret(secret.strip())
        return token.owner, token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class Scope:
    """What the caller may see and change: namespaces, classification ceiling, write access.

    Session users (the dashboard) see all their namespaces at every level. Every API read
    and write goes through a scope, so another user's ids and ids above the ceiling are
    indistinguishable from missing ones.
    """

    def __init__(self, *, user, token: ApiToken | None) -> None:
        self.user = user
        self.token = token
        self.ceiling = token.ceiling if token else Classification.RESTRICTED
        self.can_write = token is None or token.access == ApiToken.Access.WRITE

    @classmethod
    def of(cls, request: Request | HttpRequest) -> Scope:
        """The caller's scope, once a request: an API token's, or a logged-in person's
        (every namespace, every classification) on the dashboard."""
        scope = getattr(request, "_engram_scope", None)
        if scope is None:
            auth = getattr(request, "auth", None)
            token = auth if isinstance(auth, ApiToken) else None
            scope = cls(user=request.user, token=token)
            request._engram_scope = scope
        return scope

    @cached_property
    def namespace_ids(self) -> list[int]:
        return list(self.namespaces().values_list("pk", flat=True))

    def namespaces(self) -> QuerySet[Namespace]:
        # The applied decay fit comes along: decay_params() reads it without a query.
        qs = Namespace.objects.filter(owner=self.user).select_related("decay_fit_applied")
        if self.token is not None and not self.token.all_namespaces:
            qs = qs.filter(tokens=self.token)
        return qs

    def namespaces_named(self, slugs: Iterable[str]) -> dict[str, Namespace]:
        """The namespaces in scope among slugs, by slug; only those are read (a user may own
        a thousand). Unordered: the model's ordering costs more to compile (0.5 ms of a
        request's CPU) than the look-up costs the database. An API token's are kept by
        memories.token_cache between requests."""
        wanted = {slug for slug in slugs if isinstance(slug, str)}  # others name none
        found = token_namespaces(self.token, wanted)  # what this process keeps: no statement
        if missing := wanted - found.keys():
            read = {ns.slug: ns for ns in self.namespaces().filter(slug__in=missing).order_by()}
            token_namespaces_store(self.token, read)
            found |= read
        return found

    def namespace(self, slug: str, *, field: str = "namespace") -> Namespace:
        """A namespace in scope named in a body or query; unknown ones are a field error."""
        namespace = self.namespaces_named([slug]).get(slug)
        if namespace is None:
            raise serializers.ValidationError({field: ["No such namespace."]})
        return namespace

    def memories(self) -> QuerySet[Memory]:
        return Memory.objects.visible_to(namespace_ids=self.namespace_ids, ceiling=self.ceiling)

    @property
    def default_classification(self) -> int:
        """The level of what this caller writes without naming one (Classification.default_for)."""
        return Classification.default_for(self.ceiling)

    @property
    def manages_namespaces(self) -> bool:
        """Creating namespaces needs a session or a write token over all namespaces."""
        return self.token is None or (self.can_write and self.token.all_namespaces)


class ScopedAccess(permissions.BasePermission):
    """Authenticated, and read-only tokens may only read."""

    message = "This token is read-only."

    def has_permission(self, request: Request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if request.method in permissions.SAFE_METHODS:
            return True
        return Scope.of(request).can_write


class SessionOnly(permissions.BasePermission):
    """Token management needs a logged-in person, never a token."""

    message = "Tokens are managed by a logged-in user, not with a token."

    def has_permission(self, request: Request, view) -> bool:
        return bool(request.user and request.user.is_authenticated and request.auth is None)


class TokenRateThrottle(throttling.SimpleRateThrottle):
    """Per-token (or per-user for sessions) rate limit: one counter per fixed window in
    the shared cache, incremented atomically.

    DRF's SimpleRateThrottle reads a history, appends and writes it back, so concurrent
    requests of one token read the same history and all pass (8 clients x 200 requests
    all got through a limit of 1,200/min). An atomic increment counts each request once
    (Redis INCR; config.cache.DatabaseCache.incr locks the row). Windows are aligned on
    multiples of the period: a client may spend one window's allowance at its end and the
    next one's at its start, so up to twice the rate over a period straddling the edge.
    """

    scope = "api"

    def get_rate(self) -> str:
        return settings.API_RATE_LIMIT

    def get_cache_key(self, request: Request, view) -> str | None:
        if isinstance(request.auth, ApiToken):
            ident = f"token-{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = f"ip-{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def allow_request(self, request: Request, view) -> bool:
        key = self.get_cache_key(request, view)
        if self.rate is None or key is None:
            return True
        self.now = self.timer()
        window = int(self.now // self.duration)
        self.window_end = (window + 1) * self.duration
        key = f"{key}_{window}"
        try:
            count = self.cache.incr(key)
        except ValueError:  # the window's first request (or its counter was evicted)
            self.cache.add(key, 0, math.ceil(self.window_end - self.now) + 1)
            try:
                count = self.cache.incr(key)
            except ValueError:  # evicted again at once: not worth refusing a request for
                return True
        return count <= self.num_requests

    def wait(self) -> float:
        """Seconds until the window ends and the counter starts again."""
        return max(self.window_end - self.now, 0.0)


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Documents the bearer scheme in the OpenAPI schema."""

    target_class = "memories.auth.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema) -> dict:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token: `Authorization: Bearer eng_<prefix>_<secret>`.",
        }
