"""Review's pages (the home page, review and cram sessions) and API routes (/api/v1/review/...)."""

from __future__ import annotations

from django.urls import include, path

from review import api, views

api_urlpatterns = [
    path("review/queue", api.QueueView.as_view(), name="api-review-queue"),
    path("review/stats", api.StatsView.as_view(), name="api-review-stats"),
    path("review/decks", api.DecksView.as_view(), name="api-review-decks"),
    path("review/cards/<int:pk>/grade", api.CardGradeView.as_view(), name="api-card-grade"),
    path("review/cards/<int:pk>/undo", api.CardUndoView.as_view(), name="api-card-undo"),
    path("review/cards/<int:pk>/suspend", api.CardSuspendView.as_view(), name="api-card-suspend"),
    path("review/cards/<int:pk>/bury", api.CardBuryView.as_view(), name="api-card-bury"),
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
    path("review/optimize", api.OptimizeView.as_view(), name="api-review-optimize"),
    path(
        "review/optimize/reset",
        api.OptimizeResetView.as_view(),
        name="api-review-optimize-reset",
    ),
]

pages = [
    path("", views.home, name="home"),
    path("review/", views.review_index, name="review-index"),
    path("review/cards/", views.card_browser, name="card-browser"),
    path("review/cards/<int:pk>/action", views.card_action, name="card-action"),
    path("review/leeches/", views.leeches, name="leeches"),
    path("review/decks/<slug:slug>/", views.deck_options, name="deck-options"),
    path("review/start", views.review_start, name="review-start"),
    path("review/<int:pk>/", views.review_session, name="review-session"),
    path("review/<int:pk>/grade", views.review_grade, name="review-grade"),
    path("review/<int:pk>/undo", views.review_undo, name="review-undo"),
    path("review/<int:pk>/cue", views.review_cue, name="review-cue"),
    path(
        "review/<int:pk>/bury",
        views.review_set_aside,
        {"action": "bury"},
        name="review-bury",
    ),
    path(
        "review/<int:pk>/suspend",
        views.review_set_aside,
        {"action": "suspend"},
        name="review-suspend",
    ),
    path("review/<int:pk>/finish", views.review_finish, name="review-finish"),
    path("cram/", views.cram_index, name="cram-index"),
    path("cram/start", views.cram_start, name="cram-start"),
    path("cram/<int:pk>/", views.cram_session, name="cram-session"),
    path("cram/<int:pk>/answer", views.cram_answer, name="cram-answer"),
    path("cram/<int:pk>/finish", views.cram_finish, name="cram-finish"),
    path("review/optimize/<slug:slug>/", views.optimize_page, name="review-optimize"),
    path("review/optimize/<slug:slug>/run", views.optimize_run, name="review-optimize-run"),
    path("review/optimize/<slug:slug>/reset", views.optimize_reset, name="review-optimize-reset"),
]

# config/urls.py includes every app's urls.py at the site root.
urlpatterns = [path("api/v1/", include(api_urlpatterns)), *pages]
