"""`ago`: how long ago a moment was, in words ("3 hours ago"), and "just now" for the last
minute, where Django's timesince says "0 minutes". A builtin of every template
(config/settings.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.timesince import timesince

register = template.Library()

JUST_NOW = timedelta(minutes=1)


@register.filter
def ago(value: datetime | None) -> str:
    if not value:
        return ""
    if timezone.now() - value < JUST_NOW:
        return "just now"
    return f"{timesince(value)} ago"
