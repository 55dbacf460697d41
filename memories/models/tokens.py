"""API tokens: bearer tokens for agents, and the query piece that finds the usable ones."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from config.bounds import datetime_checks, validate_datetime
from memories.models.classification import Classification
from memories.models.namespaces import Namespace


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def usable(self, now) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )


class ApiToken(models.Model):
    """A bearer token for agents; only a SHA-256 of the secret is stored."""

    class Access(models.TextChoices):
        READ = "read", "Read only"
        WRITE = "write", "Read and write"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    all_namespaces = models.BooleanField(
        default=False, help_text="Use every namespace of the owner, present and future."
    )
    namespaces = models.ManyToManyField(Namespace, blank=True, related_name="tokens")
    access = models.CharField(max_length=5, choices=Access.choices, default=Access.READ)
    ceiling = models.PositiveSmallIntegerField(
        choices=Classification.choices, default=Classification.INTERNAL
    )
    expires_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    last_used_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    revoked_at = models.DateTimeField(null=True, blank=True, validators=[validate_datetime])
    created_at = models.DateTimeField(default=timezone.now, validators=[validate_datetime])

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = datetime_checks(
            "apitoken", "expires_at", "last_used_at", "revoked_at", "created_at"
        )

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def is_usable(self, now) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)
