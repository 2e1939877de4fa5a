"""Helpers for the lab proof tests (kubernetes client and helm only, no collection code)."""

import pytest
from kube_helpers import unique, wait_for


@pytest.fixture
def wait():
    """The ``wait_for`` helper."""
    return wait_for


@pytest.fixture
def name():
    """The ``unique`` name helper."""
    return unique
