"""Typed readers for environment variables that fail loudly, naming the variable."""

from __future__ import annotations

import os
from collections.abc import Mapping

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class Env:
    """Reads settings from a mapping (os.environ by default)."""

    def __init__(self, source: Mapping[str, str] | None = None) -> None:
        self.source = os.environ if source is None else source

    def _raw(self, name: str) -> str | None:
        value = self.source.get(name)
        return None if value is None else value.strip()

    def str(self, name: str, default: str = "") -> str:
        value = self._raw(name)
        return default if value is None else value

    def bool(self, name: str, default: bool = False) -> bool:
        value = self._raw(name)
        if value is None:
            return default
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise ImproperlyConfigured(
            f"{name}={value!r} is not a boolean; use one of true/false, 1/0, yes/no, on/off."
        )

    def int(
        self, name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
    ) -> int:
        value = self._raw(name)
        if value is None or value == "":
            return default
        try:
            number = int(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from None
        self._check_range(name, number, minimum, maximum)
        return number

    def float(
        self,
        name: str,
        default: float,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
    ) -> float:
        value = self._raw(name)
        if value is None or value == "":
            return default
        try:
            number = float(value)
        except ValueError:
            raise ImproperlyConfigured(f"{name}={value!r} is not a number.") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise ImproperlyConfigured(f"{name}={value!r} is not a finite number.")
        self._check_range(name, number, minimum, maximum)
        return number

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        value = self.str(name, default) or default
        if value not in choices:
            raise ImproperlyConfigured(f"{name}={value!r} must be one of: {', '.join(choices)}.")
        return value

    def list(self, name: str, default: list[str]) -> list[str]:
        value = self._raw(name)
        if value is None:
            return list(default)
        return [item.strip() for item in value.split(",") if item.strip()]

    @staticmethod
    def _check_range(
        name: str, number: float, minimum: float | None, maximum: float | None
    ) -> None:
        if minimum is not None and number < minimum:
            raise ImproperlyConfigured(f"{name}={number} is below the minimum {minimum}.")
        if maximum is not None and number > maximum:
            raise ImproperlyConfigured(f"{name}={number} is above the maximum {maximum}.")


def database_from_url(name: str, url: str) -> dict:
    """Parse a database URL into Django's DATABASES entry, naming the variable on failure."""
    try:
        config = dj_database_url.parse(url)
    except Exception as exc:  # the library raises several types for bad URLs
        raise ImproperlyConfigured(f"{name}={url!r} could not be parsed: {exc}") from None
    engine = config.get("ENGINE", "")
    if engine not in ("django.db.backends.sqlite3", "django.db.backends.postgresql"):
        raise ImproperlyConfigured(
            f"{name}={url!r}: only sqlite:/// and postgres:// URLs are supported."
        )
    if engine == "django.db.backends.postgresql" and not config.get("NAME"):
        raise ImproperlyConfigured(f"{name}={url!r} names no database.")
    return config
