"""A Redis database of a test's own: its number differs by purpose and by pytest-xdist
worker, so tests that empty one never empty another's, whatever runs beside them."""

from __future__ import annotations

import os

PURPOSES = ("cache", "broker", "throttle", "scale-out")


def redis_db(purpose: str) -> int:
    """Databases 15 downwards: four per worker (Redis has 16: workers 0 to 2 fit, and any
    more share by worker number modulo 3)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) % 3 if worker.isdigit() else 0
    return 15 - index * len(PURPOSES) - PURPOSES.index(purpose)


def redis_url(purpose: str) -> str:
    return f"redis://127.0.0.1:6379/{redis_db(purpose)}"
