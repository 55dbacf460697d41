from __future__ import annotations

from django.apps import AppConfig


class RecallConfig(AppConfig):
    name = "recall"
    verbose_name = "Recall"

    def ready(self) -> None:
        # Recall's reactions to memories' writes (memories.hooks, docs/architecture.md).
        from recall import receivers  # models are loaded only once ready() runs

        receivers.connect()
