from __future__ import annotations

from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    def ready(self) -> None:
        # config has no AppConfig: the worker's metrics (django-q2 signals) connect here.
        from config.metrics import connect_worker_signals

        connect_worker_signals()
        # The token cache's receivers (revocations and edits reach every process).
        import memories.token_cache  # noqa: F401
