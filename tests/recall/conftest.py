from __future__ import annotations

import pytest

from tests.recall.fixtures.helpers import make_recall


@pytest.fixture
def recall(namespace):
    """recall_run over the test namespace at the highest ceiling, not tracking by default."""
    return make_recall(namespace)
