"""The API's routes, walked from the URL configuration, for tests that must cover each."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, get_resolver


def api_routes() -> list[tuple[str, str, type]]:
    """(name, route, view class) of every /api/v1/ route, walking the resolver tree."""
    found: list[tuple[str, str, type]] = []

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern) and hasattr(pattern.callback, "view_class"):
                route = prefix + str(pattern.pattern)
                if route.startswith("api/v1/") and pattern.name:
                    found.append((pattern.name, route, pattern.callback.view_class))

    walk(get_resolver().url_patterns, "")
    return found
