from __future__ import annotations

from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "review"
    verbose_name = "Review"

    def ready(self) -> None:
        # Review's reactions to memories' writes (memories.hooks, docs/architecture.md).
        from review import receivers  # models are loaded only once ready() runs

        receivers.connect()
