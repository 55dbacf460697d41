"""Every benchmark and evaluation of Engram: library modules and their manage.py commands.

No models, no migrations. The product apps (memories, review, recall) never import this
app; it imports from them.
"""

from __future__ import annotations

from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "benchmarks"
    verbose_name = "Benchmarks"
