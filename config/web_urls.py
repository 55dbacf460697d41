"""The dashboard's pages (docs/dashboard.md). Included at the site root by config/urls.py."""

from __future__ import annotations

from django.urls import path

from memories import views as memory_views
from recall import views as recall_views
from review import views as review_views

urlpatterns = [
    path("", review_views.home, name="home"),
    # Review and cram
    path("review/", review_views.review_index, name="review-index"),
    path("review/start", review_views.review_start, name="review-start"),
    path("review/<int:pk>/", review_views.review_session, name="review-session"),
    path("review/<int:pk>/grade", review_views.review_grade, name="review-grade"),
    path("review/<int:pk>/undo", review_views.review_undo, name="review-undo"),
    path("review/<int:pk>/finish", review_views.review_finish, name="review-finish"),
    path("cram/", review_views.cram_index, name="cram-index"),
    path("cram/start", review_views.cram_start, name="cram-start"),
    path("cram/<int:pk>/", review_views.cram_session, name="cram-session"),
    path("cram/<int:pk>/answer", review_views.cram_answer, name="cram-answer"),
    path("cram/<int:pk>/finish", review_views.cram_finish, name="cram-finish"),
    # Search
    path("search/", recall_views.search, name="search"),
    # Memories
    path("memories/", memory_views.memory_list, name="memory-list"),
    path("memories/<int:pk>/", memory_views.memory_detail, name="memory-detail"),
    path("memories/<int:pk>/edit", memory_views.memory_edit, name="memory-edit"),
    path("memories/<int:pk>/update", memory_views.memory_update, name="memory-update"),
    path("memories/<int:pk>/forget", memory_views.memory_forget, name="memory-forget"),
    path("memories/<int:pk>/restore", memory_views.memory_restore, name="memory-restore"),
    path("memories/<int:pk>/boost", memory_views.memory_boost, name="memory-boost"),
    # Namespaces and tokens
    path("namespaces/", memory_views.namespace_list, name="namespace-list"),
    path("namespaces/new", memory_views.namespace_create, name="namespace-create"),
    path("namespaces/<slug:slug>/", memory_views.namespace_detail, name="namespace-detail"),
    path("namespaces/<slug:slug>/update", memory_views.namespace_update, name="namespace-update"),
    path("tokens/", memory_views.token_list, name="token-list"),
    path("tokens/new", memory_views.token_create, name="token-create"),
    path("tokens/<int:pk>/revoke", memory_views.token_revoke, name="token-revoke"),
]
