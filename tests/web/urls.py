"""The project's URLs with the dashboard at the root, for the dashboard's tests.

config/urls.py includes config.web_urls itself once the dashboard is wired in; until then
its placeholder "home" redirect is dropped here so "/" is the dashboard's home page.
"""

from __future__ import annotations

from django.urls import include, path

from config import urls as project

urlpatterns = [
    path("", include("config.web_urls")),
    *(p for p in project.urlpatterns if getattr(p, "name", None) != "home"),
]

handler400 = project.handler400
handler403 = project.handler403
handler404 = project.handler404
handler500 = project.handler500
