"""The dashboard's accounts: sign-in, sign-out, password change, and the lockout answer.

No password reset: it would need outgoing mail, and people get their password back from
an administrator (admin, or `manage.py changepassword`). django-axes counts failed
sign-ins per username and address (settings: AXES_*, LOGIN_FAILURE_LIMIT).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path(
        "password_change/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
]


def client_ip(request: HttpRequest) -> str | None:
    """The caller's address: behind the proxy (BEHIND_PROXY), the one it appended last to
    X-Forwarded-For (earlier entries are whatever the client sent); else REMOTE_ADDR."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if settings.BEHIND_PROXY and forwarded.strip():
        return forwarded.split(",")[-1].strip()
    return request.META.get("REMOTE_ADDR")


def locked_out(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials=None
) -> HttpResponse:
    """django-axes' answer to a locked-out sign-in: the login page saying so, 429."""
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    form = AuthenticationForm(request, initial={"username": username})
    context = {
        "form": form,
        "locked_out": True,
        "lockout_minutes": int(settings.AXES_COOLOFF_TIME.total_seconds() // 60),
        "next": request.POST.get("next") or request.GET.get("next", ""),
    }
    return render(request, "registration/login.html", context, status=429)
