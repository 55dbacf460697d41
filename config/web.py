"""Helpers every app's dashboard views share: rendering a page or its htmx partial, the
redirect after a POST, where "today" is, and the answers to a stale form or an expired
session."""

from __future__ import annotations

import zoneinfo
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib.messages import get_messages
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponsePermanentRedirect,
    HttpResponseRedirect,
)
from django.shortcuts import render, resolve_url
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.utils.cache import patch_vary_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import HttpResponseClientRedirect


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


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A refused form (its CSRF token is stale: another tab logged out and in, the cookie was
    cleared) gets a dashboard page that says what to do, not Django's page for developers.
    Nothing was written; the reason stays in the log."""
    return render(request, "403_csrf.html", {"reason": reason}, status=403)


class HtmxLoginRedirectMiddleware:
    """An htmx request whose session has expired is sent to the login page: htmx would
    follow the redirect itself and swap the whole login page into the part of the page it
    was updating. The browser goes there instead (HX-Redirect), and back to the page it was
    on (not to the fragment's address) once signed in."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        htmx = getattr(request, "htmx", None)
        if not htmx or response.status_code not in (301, 302, 303, 307, 308):
            return response
        target = urlsplit(response["Location"])
        if target.path != resolve_url(settings.LOGIN_URL):
            return response
        current = urlsplit(htmx.current_url or "")
        page = current.path + (f"?{current.query}" if current.query else "")
        if not page or current.netloc not in ("", request.get_host()):
            page = "/"
        return HttpResponseClientRedirect(f"{target.path}?{urlencode({'next': page})}")


def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for whatever a page's icon link says: the icon."""
    return HttpResponsePermanentRedirect(static("img/engram.svg"))
