from __future__ import annotations

from django.urls import path

from review import api

urlpatterns = [
    path("review/queue", api.QueueView.as_view(), name="api-review-queue"),
    path("review/stats", api.StatsView.as_view(), name="api-review-stats"),
    path("review/cards/<int:pk>/grade", api.CardGradeView.as_view(), name="api-card-grade"),
    path("review/cards/<int:pk>/undo", api.CardUndoView.as_view(), name="api-card-undo"),
    path("review/sessions", api.SessionStartView.as_view(), name="api-sessions"),
    path("review/sessions/<int:pk>", api.SessionDetailView.as_view(), name="api-session"),
    path(
        "review/sessions/<int:pk>/grade", api.SessionGradeView.as_view(), name="api-session-grade"
    ),
    path(
        "review/sessions/<int:pk>/finish",
        api.SessionFinishView.as_view(),
        name="api-session-finish",
    ),
    path("review/cram", api.CramStartView.as_view(), name="api-cram"),
    path("review/cram/<int:pk>", api.CramDetailView.as_view(), name="api-cram-session"),
    path("review/cram/<int:pk>/answer", api.CramAnswerView.as_view(), name="api-cram-answer"),
    path("review/cram/<int:pk>/finish", api.CramFinishView.as_view(), name="api-cram-finish"),
]
