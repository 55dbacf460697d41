"""ASGI entry point: the dashboard, the REST API and MCP in one deployment.

`gunicorn config.asgi:application -k uvicorn_worker.UvicornWorker` (README, Production) and
`make run` serve it. Requests under /mcp (and MCP's protected-resource metadata) go to the
MCP app (memories.mcp, streamable HTTP), everything else to Django. The MCP app is named
by string, as config/urls.py names the apps: config imports none of them.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application
from django.utils.module_loading import import_string

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_app = get_asgi_application()
mcp_app = import_string("memories.mcp.asgi_app")()

MCP_PREFIXES = ("/mcp", "/.well-known/oauth-protected-resource")


def _is_mcp(path: str) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in MCP_PREFIXES)


async def application(scope, receive, send) -> None:
    # Lifespan goes to the MCP app, whose start-up runs its session manager (Django's ASGI
    # handler serves HTTP only).
    if scope["type"] == "lifespan" or (scope["type"] == "http" and _is_mcp(scope.get("path", ""))):
        await mcp_app(scope, receive, send)
        return
    await django_app(scope, receive, send)
