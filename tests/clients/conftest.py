"""The client's live tests use the e2e tests' migrated database of the engine under test."""

from __future__ import annotations

from tests.e2e.conftest import prepared_database

__all__ = ["prepared_database"]
