"""Recall's page (search) and API route (/api/v1/recall)."""

from __future__ import annotations

from django.urls import include, path

from recall import api, views

api_urlpatterns = [
    path("recall", api.RecallView.as_view(), name="api-recall"),
]

pages = [
    path("search/", views.search, name="search"),
]

# config/urls.py includes every app's urls.py at the site root.
urlpatterns = [path("api/v1/", include(api_urlpatterns)), *pages]
