"""Small helpers the lab and integration tests share: unique names, polling, 404 handling."""

import time
import uuid

import pytest
from kubernetes.client.rest import ApiException


def unique(prefix):
    """A DNS-label name unique to this test run."""
    return "%s-%s" % (prefix, uuid.uuid4().hex[:6])


def wait_for(check, timeout, what, interval=1.0):
    """Poll ``check()`` until it returns a truthy value; fail with ``what`` (and the last value) on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail("timed out after %ds waiting for %s (last: %r)" % (timeout, what, value))
        time.sleep(interval)


def read_or_none(read):
    """``read()``, or None when the object does not exist."""
    try:
        return read()
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def absent(read):
    """Whether ``read()`` answers 404."""
    return read_or_none(read) is None


def ignore_404(call):
    """``call()``, treating 'already gone' as done."""
    read_or_none(call)
