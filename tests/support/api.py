"""Calls an agent makes over the API, for tests that write as one."""

from __future__ import annotations


def create(client, namespace, content: str, **fields):
    """POST /api/v1/memories: the response."""
    return client.post(
        "/api/v1/memories",
        {"namespace": namespace.slug, "content": content, **fields},
        format="json",
    )
