"""Memories' pages (memories, namespaces, tokens) and API routes (/api/v1/...)."""

from __future__ import annotations

from django.urls import include, path

from memories import api, views

api_urlpatterns = [
    path("namespaces", api.NamespaceListView.as_view(), name="api-namespaces"),
    path("namespaces/<slug:slug>", api.NamespaceDetailView.as_view(), name="api-namespace"),
    path("namespaces/<slug:slug>/export", api.NamespaceExportView.as_view(), name="api-export"),
    path("namespaces/<slug:slug>/import", api.NamespaceImportView.as_view(), name="api-import"),
    path(
        "namespaces/<slug:slug>/import/<int:job>",
        api.NamespaceImportJobView.as_view(),
        name="api-import-job",
    ),
    path("memories", api.MemoryListView.as_view(), name="api-memories"),
    path("memories/bulk", api.MemoryBulkView.as_view(), name="api-memories-bulk"),
    path("memories/<int:pk>", api.MemoryDetailView.as_view(), name="api-memory"),
    path("memories/<int:pk>/forget", api.MemoryForgetView.as_view(), name="api-memory-forget"),
    path("memories/<int:pk>/restore", api.MemoryRestoreView.as_view(), name="api-memory-restore"),
    path("memories/<int:pk>/touch", api.MemoryTouchView.as_view(), name="api-memory-touch"),
    path("memories/<int:pk>/history", api.MemoryHistoryView.as_view(), name="api-memory-history"),
    path("associations", api.AssociationListView.as_view(), name="api-associations"),
    path("associations/<int:pk>", api.AssociationDetailView.as_view(), name="api-association"),
    path("entities", api.EntityListView.as_view(), name="api-entities"),
    path("relations", api.RelationListView.as_view(), name="api-relations"),
    path("relations/<int:pk>", api.RelationDetailView.as_view(), name="api-relation"),
    path("consolidations", api.ConsolidationListView.as_view(), name="api-consolidations"),
    path("tokens", api.TokenListView.as_view(), name="api-tokens"),
    path("tokens/<int:pk>/revoke", api.TokenRevokeView.as_view(), name="api-token-revoke"),
]

pages = [
    path("memories/", views.memory_list, name="memory-list"),
    path("memories/<int:pk>/", views.memory_detail, name="memory-detail"),
    path("memories/<int:pk>/edit", views.memory_edit, name="memory-edit"),
    path("memories/<int:pk>/update", views.memory_update, name="memory-update"),
    path("memories/<int:pk>/forget", views.memory_forget, name="memory-forget"),
    path("memories/<int:pk>/restore", views.memory_restore, name="memory-restore"),
    path("memories/<int:pk>/boost", views.memory_boost, name="memory-boost"),
    path("namespaces/", views.namespace_list, name="namespace-list"),
    path("namespaces/new", views.namespace_create, name="namespace-create"),
    path("namespaces/<slug:slug>/", views.namespace_detail, name="namespace-detail"),
    path("namespaces/<slug:slug>/update", views.namespace_update, name="namespace-update"),
    path("tokens/", views.token_list, name="token-list"),
    path("tokens/new", views.token_create, name="token-create"),
    path("tokens/<int:pk>/revoke", views.token_revoke, name="token-revoke"),
]

# config/urls.py includes every app's urls.py at the site root.
urlpatterns = [path("api/v1/", include(api_urlpatterns)), *pages]
