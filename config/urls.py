from __future__ import annotations

from csp.constants import SELF, UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

from config.metrics import metrics_view
from config.web import favicon

# What the API docs pages need beyond the site's Content-Security-Policy (settings): both
# set styles inline, Redoc searches in a worker it builds from a blob.
swagger_ui = csp_update({"style-src": [UNSAFE_INLINE]})(
    SpectacularSwaggerSplitView.as_view(url_name="api-schema")  # its script in a file, not inline
)
redoc = csp_update({"style-src": [UNSAFE_INLINE], "worker-src": [SELF, "blob:"]})(
    SpectacularRedocView.as_view(url_name="api-schema")
)

# Each app's urls.py holds its pages and its API routes (under api/v1/); apps are named
# here as strings, so config imports none of them (docs/architecture.md).
urlpatterns = [
    path("api/v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/v1/docs", swagger_ui, name="api-docs"),
    path("api/v1/redoc", redoc, name="api-redoc"),
    # Sign-in and password change; no password reset (config/accounts.py).
    path("accounts/", include("config.accounts")),
    path("admin/", admin.site.urls),
    # Prometheus: the METRICS_TOKEN bearer or a staff session (docs/metrics.md).
    path("metrics", metrics_view, name="metrics"),
    # Browsers ask for /favicon.ico whatever the page's <link rel="icon"> says.
    path("favicon.ico", favicon, name="favicon"),
    path("", include("memories.urls")),
    path("", include("review.urls")),
    path("", include("recall.urls")),
]

handler400 = "config.api.handler400"
handler403 = "config.api.handler403"
handler404 = "config.api.handler404"
handler500 = "config.api.handler500"
