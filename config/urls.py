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

# What the API docs pages need beyond the site's Content-Security-Policy (settings): both
# set styles inline, Redoc searches in a worker it builds from a blob.
swagger_ui = csp_update({"style-src": [UNSAFE_INLINE]})(
    SpectacularSwaggerSplitView.as_view(url_name="api-schema")  # its script in a file, not inline
)
redoc = csp_update({"style-src": [UNSAFE_INLINE], "worker-src": [SELF, "blob:"]})(
    SpectacularRedocView.as_view(url_name="api-schema")
)

api_v1 = [
    path("", include("memories.urls")),
    path("", include("review.urls")),
    path("", include("recall.urls")),
    path("schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs", swagger_ui, name="api-docs"),
    path("redoc", redoc, name="api-redoc"),
]

urlpatterns = [
    path("api/v1/", include(api_v1)),
    # Sign-in and password change; no password reset (config/accounts.py).
    path("accounts/", include("config.accounts")),
    path("admin/", admin.site.urls),
    path("", include("config.web_urls")),
]

handler400 = "config.api.handler400"
handler403 = "config.api.handler403"
handler404 = "config.api.handler404"
handler500 = "config.api.handler500"
