from __future__ import annotations

from django.urls import path

from recall import api

urlpatterns = [
    path("recall", api.RecallView.as_view(), name="api-recall"),
]
