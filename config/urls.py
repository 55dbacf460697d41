from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    # The dashboard arrives with its own issue; until then the admin is the home page.
    path("", RedirectView.as_view(pattern_name="admin:index", permanent=False), name="home"),
]
