"""Memories' pages (memories, namespaces, tokens) and API routes (/api/v1/...)."""

from __future__ import annotations

from django.urls import include, path

from memories import views
from memories.api.digests import ConsolidationListView
from memories.api.graph import EntityListView, RelationDetailView, RelationListView
from memories.api.links import AssociationDetailView, AssociationListView
from memories.api.memories import (
    MemoryActionView,
    MemoryBulkView,
    MemoryDetailView,
    MemoryForgettingView,
    MemoryForgetView,
    MemoryHistoryView,
    MemoryListView,
    MemoryReinforceView,
    MemoryRestoreView,
    MemoryTouchView,
)
from memories.api.namespaces import (
    NamespaceDecayFitsView,
    NamespaceDetailView,
    NamespaceListView,
)
from memories.api.tokens import TokenListView, TokenRevokeView
from memories.api.transfer import NamespaceExportView, NamespaceImportJobView, NamespaceImportView
from memories.api.webhooks import (
    NamespaceWebhookListView,
    WebhookDeliveryListView,
    WebhookDetailView,
    WebhookRedeliverView,
)

api_urlpatterns = [
    path("namespaces", NamespaceListView.as_view(), name="api-namespaces"),
    path("namespaces/<slug:slug>", NamespaceDetailView.as_view(), name="api-namespace"),
    path(
        "namespaces/<slug:slug>/decay-fits",
        NamespaceDecayFitsView.as_view(),
        name="api-namespace-decay-fits",
    ),
    path("namespaces/<slug:slug>/export", NamespaceExportView.as_view(), name="api-export"),
    path("namespaces/<slug:slug>/import", NamespaceImportView.as_view(), name="api-import"),
    path(
        "namespaces/<slug:slug>/import/<int:job>",
        NamespaceImportJobView.as_view(),
        name="api-import-job",
    ),
    path(
        "namespaces/<slug:slug>/webhooks",
        NamespaceWebhookListView.as_view(),
        name="api-namespace-webhooks",
    ),
    path("webhooks/<int:pk>", WebhookDetailView.as_view(), name="api-webhook"),
    path(
        "webhooks/<int:pk>/deliveries",
        WebhookDeliveryListView.as_view(),
        name="api-webhook-deliveries",
    ),
    path(
        "webhooks/deliveries/<int:pk>/redeliver",
        WebhookRedeliverView.as_view(),
        name="api-webhook-redeliver",
    ),
    path("memories", MemoryListView.as_view(), name="api-memories"),
    path("memories/bulk", MemoryBulkView.as_view(), name="api-memories-bulk"),
    path("memories/reinforce", MemoryReinforceView.as_view(), name="api-memories-reinforce"),
    path("memories/forgetting", MemoryForgettingView.as_view(), name="api-memories-forgetting"),
    path("memories/actions", MemoryActionView.as_view(), name="api-memories-actions"),
    path("memories/<int:pk>", MemoryDetailView.as_view(), name="api-memory"),
    path("memories/<int:pk>/forget", MemoryForgetView.as_view(), name="api-memory-forget"),
    path("memories/<int:pk>/restore", MemoryRestoreView.as_view(), name="api-memory-restore"),
    path("memories/<int:pk>/touch", MemoryTouchView.as_view(), name="api-memory-touch"),
    path("memories/<int:pk>/history", MemoryHistoryView.as_view(), name="api-memory-history"),
    path("associations", AssociationListView.as_view(), name="api-associations"),
    path("associations/<int:pk>", AssociationDetailView.as_view(), name="api-association"),
    path("entities", EntityListView.as_view(), name="api-entities"),
    path("relations", RelationListView.as_view(), name="api-relations"),
    path("relations/<int:pk>", RelationDetailView.as_view(), name="api-relation"),
    path("consolidations", ConsolidationListView.as_view(), name="api-consolidations"),
    path("tokens", TokenListView.as_view(), name="api-tokens"),
    path("tokens/<int:pk>/revoke", TokenRevokeView.as_view(), name="api-token-revoke"),
]

pages = [
    path("memories/", views.memory_list, name="memory-list"),
    path("memories/add/", views.memory_add, name="memory-add"),
    path("memories/create", views.memory_create, name="memory-create"),
    path("memories/bulk", views.memory_bulk, name="memory-bulk"),
    path("memories/forgetting/", views.memory_forgetting, name="memory-forgetting"),
    path("memories/<int:pk>/", views.memory_detail, name="memory-detail"),
    path("memories/<int:pk>/edit", views.memory_edit, name="memory-edit"),
    path("memories/<int:pk>/update", views.memory_update, name="memory-update"),
    path("memories/<int:pk>/forget", views.memory_forget, name="memory-forget"),
    path("memories/<int:pk>/restore", views.memory_restore, name="memory-restore"),
    path("memories/<int:pk>/boost", views.memory_boost, name="memory-boost"),
    path("memories/<int:pk>/reinstate", views.memory_reinstate, name="memory-reinstate"),
    path("memories/<int:pk>/supersede", views.memory_supersede, name="memory-supersede"),
    path(
        "memories/<int:pk>/superseded-by",
        views.memory_superseded_by,
        name="memory-superseded-by",
    ),
    path("memories/<int:pk>/merge", views.memory_merge, name="memory-merge"),
    path("namespaces/", views.namespace_list, name="namespace-list"),
    path("namespaces/new", views.namespace_create, name="namespace-create"),
    path("namespaces/<slug:slug>/", views.namespace_detail, name="namespace-detail"),
    path("namespaces/<slug:slug>/update", views.namespace_update, name="namespace-update"),
    path("namespaces/<slug:slug>/decay-fit", views.namespace_decay_fit, name="namespace-decay-fit"),
    path("namespaces/<slug:slug>/webhooks/new", views.webhook_create, name="webhook-create"),
    path("namespaces/<slug:slug>/webhooks/<int:pk>/", views.webhook_detail, name="webhook-detail"),
    path(
        "namespaces/<slug:slug>/webhooks/<int:pk>/toggle",
        views.webhook_toggle,
        name="webhook-toggle",
    ),
    path(
        "namespaces/<slug:slug>/webhooks/<int:pk>/delete",
        views.webhook_delete,
        name="webhook-delete",
    ),
    path(
        "namespaces/<slug:slug>/webhooks/deliveries/<int:pk>/redeliver",
        views.webhook_redeliver,
        name="webhook-redeliver",
    ),
    path("tokens/", views.token_list, name="token-list"),
    path("tokens/new", views.token_create, name="token-create"),
    path("tokens/<int:pk>/revoke", views.token_revoke, name="token-revoke"),
]

# config/urls.py includes every app's urls.py at the site root.
urlpatterns = [path("api/v1/", include(api_urlpatterns)), *pages]
