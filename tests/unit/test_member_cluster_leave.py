"""A KubeFleet leave that stops because another run took the member reports what it had already changed."""

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils.errors import LockLost, WaitTimeout
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.member_cluster import MemberCluster


class StoppingWaiter:
    """A wait that ends as the module's lock hook would end it: the lock is lost (or it times out)."""

    def __init__(self, error):
        self.error = error
        self.shorter = []

    def within(self, seconds):
        self.shorter.append(seconds)
        return self

    def until(self, fetch, predicate, what, hint=None):
        raise self.error


class Module:
    check_mode = False

    def __init__(self, waiter, force):
        self.waiter = waiter
        self.params = {"name": "member1", "force_remove_finalizers": force, "force_grace_period": 5}


@pytest.mark.parametrize("force", [True, False])
def test_a_lost_lock_in_the_wait_after_the_delete_is_a_failure_after_a_change(force):
    waiter = StoppingWaiter(LockLost("lock on member1 lost"))
    with pytest.raises(LockLost) as err:
        MemberCluster(Module(waiter, force))._wait_left(deleted=True)  # pylint: disable=protected-access
    assert err.value.details["changed"] is True
    assert "this run already deleted MemberCluster member1" in err.value.msg
    assert waiter.shorter == ([5.0] if force else [])


def test_a_lost_lock_when_this_run_deleted_nothing_is_not_a_change():
    with pytest.raises(LockLost) as err:
        MemberCluster(Module(StoppingWaiter(LockLost("lock on member1 lost")), True))._wait_left(deleted=False)  # pylint: disable=protected-access
    assert "changed" not in err.value.details and err.value.msg == "lock on member1 lost"


def test_a_grace_period_that_times_out_goes_on_to_remove_the_finalizers(monkeypatch):
    removed = []
    runner = MemberCluster(Module(StoppingWaiter(WaitTimeout("timed out")), True))
    monkeypatch.setattr(runner, "_remove_finalizers", lambda: removed.append(True) or ["MemberCluster member1"])
    monkeypatch.setattr(runner, "_report_timeout", lambda wait, deleted, forced: None)
    assert runner._wait_left(deleted=True) == ["MemberCluster member1"]  # pylint: disable=protected-access
    assert removed == [True]
