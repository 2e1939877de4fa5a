"""Helpers for the lab proof tests (kubernetes client and helm only, no collection code)."""

import time
import uuid

import pytest


def wait_for(check, timeout, what, interval=1.0):
    """Poll ``check()`` until it returns a truthy value; fail with ``what`` (and the last value) on timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            pytest.fail('timed out after %ds waiting for %s (last: %r)' % (timeout, what, last))
        time.sleep(interval)


def unique(prefix):
    """A DNS-label name unique to this test run."""
    return '%s-%s' % (prefix, uuid.uuid4().hex[:6])


@pytest.fixture
def wait():
    """The ``wait_for`` helper."""
    return wait_for


@pytest.fixture
def name():
    """The ``unique`` name helper."""
    return unique
