"""The per-member lock's rules: what a lock Lease says, when it counts as live, and how a batch waits (no API involved;
taking and releasing Leases on a real hub is tested in tests/integration/test_member_lock.py)."""

import datetime

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError, ConnectionFailure, WaitTimeout
from ansible_collections.fleetops.registration.plugins.module_utils.member_lock import (
    MAX_DURATION_SECONDS, SKEW_SECONDS, LockHeld, MemberLock, NotALock, describe_lock, held_message, lock_body, renewal_due,
    run_over, take_locks, tidied_message, tidy_locks,
)
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.member_lock_batch import lock_duration, release_retrying
from ansible_collections.fleetops.registration.plugins.module_utils.waiter import Waiter

NOW = datetime.datetime(2026, 11, 24, 17, 0, 0, tzinfo=datetime.timezone.utc)


def test_a_lock_names_its_member_holder_and_runner_and_lives_its_duration():
    body = lock_body("edge-07", "k3v9x0a7qp", "AWX job 42", 900, NOW)
    assert body["metadata"]["name"] == "fleetops-member-edge-07"
    assert body["metadata"]["labels"]["fleetops.registration/member"] == "edge-07"
    assert body["spec"] == {"holderIdentity": "k3v9x0a7qp", "leaseDurationSeconds": 900,
                            "acquireTime": "2026-11-24T17:00:00.000000Z", "renewTime": "2026-11-24T17:00:00.000000Z"}
    assert "resourceVersion" not in body["metadata"]
    lock = describe_lock(body, NOW + datetime.timedelta(seconds=899))
    assert lock == {"holder": "k3v9x0a7qp", "by": "AWX job 42", "since": "2026-11-24T17:00:00.000000Z",
                    "expires": "2026-11-24T17:15:00Z", "live": True, "process": None}
    assert "edge-07 is being changed by another run (holder k3v9x0a7qp, run by AWX job 42" in held_message("edge-07", lock)


def test_a_lock_is_taken_over_only_past_its_expiry_and_the_allowed_clock_skew():
    body = lock_body("edge-07", "k3v9x0a7qp", "me@host", 60, NOW)
    assert describe_lock(body, NOW + datetime.timedelta(seconds=60 + SKEW_SECONDS - 1))["live"] is True
    assert describe_lock(body, NOW + datetime.timedelta(seconds=60 + SKEW_SECONDS + 1))["live"] is False
    current = dict(body, metadata=dict(body["metadata"], resourceVersion="41"))
    assert lock_body("edge-07", "other", "me@host", 60, NOW, current=current)["metadata"]["resourceVersion"] == "41"


def test_a_lease_without_a_holder_is_no_lock():
    assert describe_lock(None) is None
    assert describe_lock({"spec": {"leaseDurationSeconds": 60}}) is None


def test_the_lock_lives_as_long_as_the_run_s_registration_token_unless_told():
    assert lock_duration({"wait_timeout": 300, "lock_duration": None}) == 900
    assert lock_duration({"wait_timeout": 300, "lock_duration": 120}) == 120


def test_a_lock_lives_at_most_a_day_whatever_its_lease_says():
    """Issue 31: a Lease named like a lock with a huge leaseDurationSeconds blocked the member's runs for as long."""
    planted = lock_body("edge-07", "someone", "me@host", 10 ** 9, NOW)
    assert describe_lock(planted, NOW + datetime.timedelta(seconds=MAX_DURATION_SECONDS - 60))["live"] is True
    assert describe_lock(planted, NOW + datetime.timedelta(seconds=MAX_DURATION_SECONDS + SKEW_SECONDS + 1))["live"] is False
    assert describe_lock(dict(planted, spec=dict(planted["spec"], leaseDurationSeconds="99999999")),
                         NOW + datetime.timedelta(seconds=SKEW_SECONDS + 1))["live"] is False
    with pytest.raises(ParameterError, match="lock_duration"):
        lock_duration({"wait_timeout": 300, "lock_duration": MAX_DURATION_SECONDS + 1})
    assert lock_duration({"wait_timeout": 10 ** 6, "lock_duration": None}) == MAX_DURATION_SECONDS


class LeaseHub:
    """The hub as try_take sees it: a create that finds ``existing`` there (409), then a get of it."""

    def __init__(self, existing):
        self.existing = existing
        self.writes = []

    def create(self, resource, body, namespace):
        if self.existing is not None:
            raise ApiError("exists", status=409)
        self.writes.append(body)
        return dict(body, metadata=dict(body["metadata"], resourceVersion="1"))

    def get(self, resource, name, namespace):
        return self.existing

    def request(self, method, path, body=None, **kwargs):
        self.writes.append(body)
        return dict(body, metadata=dict(body["metadata"], resourceVersion="2"))


def test_a_lease_named_like_a_lock_without_the_collection_s_labels_is_refused_not_waited_for_or_taken():
    """Issue 31: a Lease fleetops-member-<name> without the collection's label blocked that member's runs."""
    foreign = lock_body("edge-07", "someone", "me@host", 60, NOW - datetime.timedelta(hours=1))
    foreign["metadata"]["labels"] = {}
    foreign["metadata"]["resourceVersion"] = "7"
    hub = LeaseHub(foreign)
    with pytest.raises(NotALock, match="fleetops-system/fleetops-member-edge-07 .*not a member lock of this collection"):
        MemberLock(hub, "fleetops-system", "edge-07", "mine", "me@host", 60).try_take(NOW)
    assert hub.writes == []
    # another member's lock under this member's name is not ours either
    other = lock_body("edge-08", "someone", "me@host", 60, NOW)
    other["metadata"].update(name="fleetops-member-edge-07", resourceVersion="7")
    with pytest.raises(NotALock):
        MemberLock(LeaseHub(other), "fleetops-system", "edge-07", "mine", "me@host", 60).try_take(NOW)
    # the collection's own expired lock is taken over as before
    expired = lock_body("edge-07", "someone", "me@host", 60, NOW - datetime.timedelta(hours=1))
    expired["metadata"]["resourceVersion"] = "7"
    hub = LeaseHub(expired)
    assert MemberLock(hub, "fleetops-system", "edge-07", "mine", "me@host", 60).try_take(NOW) is None
    assert hub.writes[-1]["spec"]["holderIdentity"] == "mine"


def test_a_step_renews_the_lock_once_a_wait_s_time_has_passed_since_it_was_taken():
    lock = {"holder": "k3v9x0a7qp", "taken": "2026-11-24T17:00:00.000000Z"}
    assert renewal_due(lock, 300, NOW + datetime.timedelta(seconds=299)) is False
    assert renewal_due(lock, 300, NOW + datetime.timedelta(seconds=300)) is True
    assert renewal_due({"holder": "k3v9x0a7qp"}, 300, NOW) is True  # no time known: renew rather than risk it


class FakeLock:
    """A MemberLock whose hub answers from a script: each try_take pops the next answer (None: taken)."""

    def __init__(self, member, answers):
        self.member = member
        self.namespace = "kube-system"
        self.answers = list(answers)
        self.tries = 0

    def try_take(self):
        self.tries += 1
        answer = self.answers.pop(0) if self.answers else None
        if isinstance(answer, ApiError):
            raise ApiError(answer.msg, status=answer.status)
        return answer


def clock():
    """A Waiter whose clock advances by each sleep, so waits take no real time."""
    now = [0.0]
    return Waiter(10, sleep=2, clock=lambda: now[0], sleeper=lambda s: now.__setitem__(0, now[0] + s))


OTHER = {"holder": "other", "by": "AWX job 7", "since": "t0", "expires": "t1", "live": True}


def test_free_locks_are_taken_at_once_and_held_ones_are_waited_for_side_by_side():
    free, busy, busier = FakeLock("a", [None]), FakeLock("b", [OTHER, OTHER, None]), FakeLock("c", [OTHER, None])
    waited, failed = take_locks([free, busy, busier], clock())
    assert waited == ["b", "c"] and failed == {}
    assert (free.tries, busy.tries, busier.tries) == (1, 3, 2)


def test_a_lock_held_past_the_wait_fails_that_member_alone_naming_the_other_run():
    stuck, free = FakeLock("a", [OTHER] * 100), FakeLock("b", [None])
    waited, failed = take_locks([stuck, free], clock())
    assert waited == [] and list(failed) == ["a"]
    assert isinstance(failed["a"], LockHeld)
    message = failed["a"].message()
    assert "a is being changed by another run (holder other, run by AWX job 7, since t0, expires t1)" in message
    assert "kube-system/fleetops-member-a" in message


def test_a_request_error_fails_that_member_with_its_own_message():
    denied = FakeLock("a", [ApiError("forbidden", status=403)])
    waited, failed = take_locks([denied, FakeLock("b", [None])], clock())
    assert waited == [] and failed["a"].msg == "forbidden"


class FlakyHubLock:
    """A MemberLock whose hub is unreachable for the first ``down`` releases."""

    def __init__(self, down):
        self.member = "a"
        self.down = down
        self.calls = 0

    def release(self, version):
        self.calls += 1
        if self.calls <= self.down:
            raise ConnectionFailure("cannot reach the hub API server")
        return version == "7"


def test_a_release_waits_for_an_unreachable_hub_to_come_back_within_the_wait():
    lock = FlakyHubLock(down=3)
    assert release_retrying(lock, "7", clock()) is True and lock.calls == 4
    with pytest.raises(WaitTimeout):
        release_retrying(FlakyHubLock(down=100), "7", clock())


def test_a_run_is_over_once_its_lock_is_released_taken_expired_or_its_process_gone_here():
    process = {"host": "ctl", "boot_id": "b", "pid_namespace": "p", "pid": 4242, "started": 7}
    body = lock_body("edge-07", "r1", "me@ctl", 600, NOW, process=process)
    assert run_over(None, "r1", NOW) == "its lock is released"
    assert run_over(body, "r2", NOW) == "its lock is held by run r1 now"
    assert run_over(body, "r1", NOW + datetime.timedelta(hours=1)).startswith("its lock expired at")
    assert run_over(body, "r1", NOW) is None  # live, and nothing known about its process from here
    here = {"host": "ctl", "boot_id": "b", "pid_namespace": "p", "pid": 1, "started": 1}
    assert run_over(body, "r1", NOW, here, is_alive=lambda pid, started: True) is None
    assert "no longer runs" in run_over(body, "r1", NOW, here, is_alive=lambda pid, started: False)
    elsewhere = dict(here, host="other")
    assert run_over(body, "r1", NOW, elsewhere, is_alive=lambda pid, started: False) is None


class TidyHub:
    """A hub holding ``leases`` as tidy_locks sees it: a LIST, then DELETEs with a resourceVersion precondition
    (``moved``: names whose version changed since the LIST, as when a run took the lock over meanwhile)."""

    def __init__(self, leases, moved=(), status=None):
        self.leases, self.moved, self.status, self.deleted = leases, set(moved), status, []

    def list(self, resource, namespace, label_selector=None):
        if self.status and self.status != "no-delete":
            raise ApiError("no", status=self.status)
        assert label_selector == "app.kubernetes.io/managed-by=fleetops.registration,fleetops.registration/member"
        return self.leases

    def request(self, method, path, body=None, **kwargs):
        name = path.rsplit("/", 1)[1]
        if name in self.moved:
            raise ApiError("conflict", status=409)
        if self.status == "no-delete":
            raise ApiError("forbidden", status=403)
        self.deleted.append((method, name, body["preconditions"]["resourceVersion"], body.get("dryRun")))


def test_the_hub_tidy_deletes_the_locks_no_run_holds_in_the_version_it_read_and_keeps_the_others():
    """Issue 47 (seed 7's soak): a SIGKILLed run's lock stayed until it expired, as no later run needed its member."""
    here = {"host": "ctl", "boot_id": "b", "pid_namespace": "p", "pid": 1, "started": 1}

    def lease(member, holder, process, duration=600, acquired=NOW):
        body = lock_body(member, holder, "me@ctl", duration, acquired, process=process)
        body["metadata"]["resourceVersion"] = "v-" + member
        return body

    dead = lease("dead", "r1", dict(here, pid=4242, started=7))
    live_here = lease("running", "r2", dict(here, pid=4343, started=8))
    elsewhere = lease("elsewhere", "r3", dict(here, host="other", pid=4242, started=7))
    expired = lease("expired", "r4", dict(here, host="other"), duration=60, acquired=NOW - datetime.timedelta(hours=1))
    taken_meanwhile = lease("taken", "r5", dict(here, pid=4242, started=7))
    misnamed = lease("edge-1", "r6", dict(here, pid=4242, started=7))
    misnamed["metadata"]["name"] = "fleetops-member-edge-2"  # another member's name: not this collection's lock
    hub = TidyHub([dead, live_here, elsewhere, expired, taken_meanwhile, misnamed], moved=["fleetops-member-taken"])

    def is_alive(pid, started):
        return pid == 4343

    removed = tidy_locks(hub, "fleetops-system", now=NOW, here=here, is_alive=is_alive)
    assert [(item["member"], item["holder"]) for item in removed] == [("dead", "r1"), ("expired", "r4")]
    assert removed[0]["reason"] == "its run (process 4242 on ctl) no longer runs" and removed[0]["by"] == "me@ctl"
    assert tidied_message(removed[0]) == "removed the lock of dead left by run r1 (run by me@ctl): its run (process 4242 on ctl) no longer runs"
    assert removed[1]["reason"].startswith("its lock expired at 2026-11-24T16:01:00Z")
    assert [(name, version) for _method, name, version, _dry in hub.deleted] == [
        ("fleetops-member-dead", "v-dead"), ("fleetops-member-expired", "v-expired")]

    dry = TidyHub([dead])
    assert [item["member"] for item in tidy_locks(dry, "fleetops-system", dry_run=True, now=NOW, here=here, is_alive=is_alive)] == ["dead"]
    assert dry.deleted == [("DELETE", "fleetops-member-dead", "v-dead", ["All"])]
    # a credential that may not list Leases there, or no such namespace: nothing tidied, nothing failed
    assert tidy_locks(TidyHub([dead], status=403), "fleetops-system", now=NOW, here=here, is_alive=is_alive) == []
    # one that may list them but not delete them (an RBAC from before the tidy): the lock stays, the role goes on
    assert tidy_locks(TidyHub([dead], status="no-delete"), "fleetops-system", now=NOW, here=here, is_alive=is_alive) == []
