from __future__ import annotations

from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    def ready(self) -> None:
        # The token cache's receivers (revocations and edits reach every process).
        import memories.token_cache  # noqa: F401
