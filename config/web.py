"""Helpers every app's dashboard views share: rendering a page or its htmx partial, the
redirect after a POST, and where "today" is."""

from __future__ import annotations

import zoneinfo
from typing import Any

from django.conf import settings
from django.contrib.messages import get_messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.cache import patch_vary_headers
from django.utils.http import url_has_allowed_host_and_scheme


def render_page(
    request: HttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    partial: str | None = None,
    status: int = 200,
) -> HttpResponse:
    """The whole page, or only its `partial` for an htmx request (not a history restore,
    which needs the whole page back)."""
    htmx = getattr(request, "htmx", None)
    if partial and htmx and not htmx.history_restore_request:
        response = render(request, f"{template}#{partial}", context, status=status)
        if len(get_messages(request)):
            # Messages live outside the partial: swap them in out of band.
            oob = render_to_string("_messages.html", {"oob": True}, request)
            response.content += oob.encode()
    else:
        response = render(request, template, context, status=status)
    patch_vary_headers(response, ("HX-Request",))
    return response


def safe_next(request: HttpRequest, default: str) -> str:
    """Where to go after a POST: the form's `next` if it is a path on this site."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


def see_other(url: str) -> HttpResponseRedirect:
    """303 after a POST, so a reload does not post again."""
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response


def user_tz() -> zoneinfo.ZoneInfo:
    """Where "today" is: the server's TIME_ZONE (docs/dashboard.md)."""
    return zoneinfo.ZoneInfo(settings.TIME_ZONE)
