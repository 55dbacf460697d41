"""Test overrides: fast password hashing, tasks run synchronously."""

from __future__ import annotations

from config.settings import *  # noqa: F403
from config.settings import Q_CLUSTER

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
Q_CLUSTER = {**Q_CLUSTER, "sync": True}
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# The webhook tests deliver to receivers on 127.0.0.1.
WEBHOOK_ALLOW_LOOPBACK = True
