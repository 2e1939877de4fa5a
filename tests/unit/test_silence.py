"""An agent judged silent is given its manager's contact period to be heard from (silence.py): after a hub outage every
agent's last contact is old, and a run right after it must not re-register every member's agent."""

from ansible_collections.fleetops.registration.plugins.module_utils import silence
from ansible_collections.fleetops.registration.plugins.module_utils.registry import KUBEFLEET, RANCHER_FLEET
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import judge as kubefleet_judge
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import judge as fleet_judge


def _finding(cause, action="reregister"):
    return {"cause": cause, "evidence": cause, "action": action, "fix": ""}


def test_only_a_re_registration_for_silence_alone_is_waited_out():
    assert silence.silent_only([_finding("silent"), _finding("labels_drift", "relabel")])
    assert not silence.silent_only([_finding("silent"), _finding("credential_rejected")])
    assert not silence.silent_only([_finding("agent_missing", "install")])
    # KubeFleet: an agent whose token the hub accepts is restarted for silence, not registered again
    assert silence.silent_only([_finding("silent", "install"), _finding("chart_version", "upgrade")])
    assert not silence.silent_only([_finding("silent", "install"), _finding("agent_missing", "install")])
    assert not silence.silent_only([])


class Clock:
    def __init__(self):
        self.now, self.slept = 0.0, []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def test_the_wait_ends_at_the_first_newer_contact_and_gives_up_after_the_grace():
    clock = Clock()
    reads = iter([{"beat": "t0"}, {"beat": "t0"}, {"beat": "t1"}])
    heard = silence.heard_from(lambda: next(reads), lambda obj: obj["beat"], "t0", 65, clock=clock, sleep=clock.sleep)
    assert heard == {"beat": "t1"} and clock.slept == [2, 2]
    clock = Clock()
    assert silence.heard_from(lambda: {"beat": "t0"}, lambda obj: obj["beat"], "t0", 5, clock=clock, sleep=clock.sleep) is None
    assert clock.slept == [2, 2, 1] and clock.now == 5
    # an object gone, or with no contact recorded, is not a contact
    clock = Clock()
    assert silence.heard_from(lambda: None, lambda obj: obj["beat"], "t0", 3, clock=clock, sleep=clock.sleep) is None


def test_kubefleet_waits_one_heartbeat_period_and_rancher_fleet_its_first_check_in():
    assert KUBEFLEET.contact({"heartbeat": "2026-11-28T10:00:00Z", "heartbeat_period_seconds": 10}) == ("2026-11-28T10:00:00Z", 15)
    assert KUBEFLEET.contact({"heartbeat": None}) == (None, 65)
    # Fleet's agent checks in 15 s after its start, then every agentCheckinInterval (15 min by default)
    assert RANCHER_FLEET.contact({"last_seen": "2026-11-28T10:00:00Z"}) == ("2026-11-28T10:00:00Z", 20)


def _deployment(status="True", since="2026-11-28T10:00:00Z"):
    return {"status": {"conditions": [{"type": "Progressing", "status": "True", "lastTransitionTime": "2026-11-28T09:00:00Z"},
                                      {"type": "Available", "status": status, "lastTransitionTime": since}]}}


def test_an_agent_is_available_since_its_available_condition_turned_true():
    assert silence.available_since(_deployment()) == "2026-11-28T10:00:00Z"
    assert silence.available_since(_deployment("False")) is None
    assert silence.available_since({"status": {}}) is None
    assert silence.available_since(None) is None


def test_a_contact_older_than_the_agent_that_runs_now_was_an_earlier_agent_s():
    started = "2026-11-28T10:00:00Z"
    why = silence.unheard_since_start("2026-11-28T09:59:50Z", started)
    assert why and "09:59:50" in why and "available since 2026-11-28T10:00:00Z" in why
    # a contact after the start, or within the clock slack before it, is the agent's own
    assert silence.unheard_since_start("2026-11-28T10:00:20Z", started) is None
    assert silence.unheard_since_start("2026-11-28T09:59:56Z", started) is None
    # not known: not judged
    assert silence.unheard_since_start(None, started) is None
    assert silence.unheard_since_start("2026-11-28T09:00:00Z", None) is None
    assert silence.unheard_since_start("garbage", started) is None


def test_a_kubefleet_heartbeat_is_overdue_between_its_period_and_the_staleness_bound():
    def view(age, period=10, joined=True):
        return {"heartbeat_age_seconds": age, "heartbeat_period_seconds": period, "joined": joined}

    # within its period, its 5% jitter and the 5 s margin: due, not overdue
    assert KUBEFLEET.overdue(view(15)) is None
    assert KUBEFLEET.overdue(view(634, period=600)) is None and KUBEFLEET.overdue(view(636, period=600)) == 1165
    # missed: waited for until it would be silent (3 periods), one second past it so the next read judges it so
    assert KUBEFLEET.overdue(view(19)) == 12
    assert KUBEFLEET.overdue(view(30)) == 1
    # silent already (the silent rule's own wait applies), never joined, or no heartbeat time: not overdue
    assert KUBEFLEET.overdue(view(31)) is None
    assert KUBEFLEET.overdue(view(19, joined=None)) is None
    assert KUBEFLEET.overdue(view(None)) is None
    assert KUBEFLEET.overdue(None) is None
    # the default period (60 s) when the MemberCluster names none; the user's stale_after lowers the bound
    assert KUBEFLEET.overdue(view(70, period=None)) == 111
    assert KUBEFLEET.overdue(view(70, period=None), stale_after=100) == 31
    assert KUBEFLEET.overdue(view(70, period=None), stale_after=60) is None
    # Fleet's agent checks in every agentCheckinInterval (15 min by default), which the hub does not record: no wait
    assert RANCHER_FLEET.overdue({"last_seen": "2026-11-28T10:00:00Z", "joined": True}) is None


def test_repairs_are_the_causes_that_ask_for_a_re_registration_or_a_restart():
    assert silence.repairs([_finding("silent", "install"), _finding("labels_drift", "relabel"), _finding("credential_rejected")]) == [
        "silent", "credential_rejected"]
    assert silence.repairs([_finding("labels_drift", "relabel")]) == [] and silence.repairs(None) == []


def test_the_member_agent_s_own_heartbeat_record_counts_where_the_hub_agent_s_copy_lags():
    from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.views import with_newest_heartbeat

    def member(beat, kind="MemberCluster"):
        agents = [{"type": "MemberAgent", "lastReceivedHeartbeat": beat, "conditions": [{"type": "Joined", "status": "True"}]}]
        return {"kind": kind, "metadata": {"name": "m1"}, "status": {"agentStatus": agents}}

    copied, written = member("2026-11-29T10:00:00Z"), member("2026-11-29T10:00:30Z", "InternalMemberCluster")
    merged = with_newest_heartbeat(copied, written)
    assert merged["kind"] == "MemberCluster" and merged["status"]["agentStatus"][0]["lastReceivedHeartbeat"] == "2026-11-29T10:00:30Z"
    assert merged["status"]["agentStatus"][0]["conditions"] == copied["status"]["agentStatus"][0]["conditions"]
    assert copied["status"]["agentStatus"][0]["lastReceivedHeartbeat"] == "2026-11-29T10:00:00Z"  # a copy, not changed
    # the MemberCluster as it is when its own record is as new, the other has none, or there is no MemberCluster
    assert with_newest_heartbeat(written, copied) is written
    assert with_newest_heartbeat(copied, None) is copied
    assert with_newest_heartbeat(copied, member(None, "InternalMemberCluster")) is copied
    assert with_newest_heartbeat(None, written) is None
    # a MemberCluster the member agent never reported on keeps no heartbeat of its own
    bare = {"metadata": {"name": "m1"}, "status": {}}
    assert with_newest_heartbeat(bare, written) is bare


def test_an_agent_step_judges_silence_by_its_managers_rule_table_from_the_hub_view_alone():
    old = {"name": "m", "joined": True, "heartbeat": "2026-11-21T09:50:00Z", "heartbeat_age_seconds": 600,
           "heartbeat_period_seconds": 60, "leaving": False}
    assert "more than 3 x heartbeatPeriodSeconds" in silence.judged_silent(kubefleet_judge.RULES, old)
    assert silence.judged_silent(kubefleet_judge.RULES, dict(old, heartbeat_age_seconds=30)) is None
    assert silence.judged_silent(kubefleet_judge.RULES, dict(old, leaving=True)) is None  # a leaving member is not judged silent
    checked_in = {"name": "m", "checked_in": True, "last_seen": "2026-11-21T08:00:00Z", "seen_age_seconds": 7200, "deleting": False}
    assert "more than stale_after (3600s)" in silence.judged_silent(fleet_judge.RULES, checked_in)
    assert silence.judged_silent(fleet_judge.RULES, dict(checked_in, seen_age_seconds=60)) is None


def _lease(renewed, holder="member-agent-1_abc", duration=15):
    return {"spec": {"holderIdentity": holder, "renewTime": renewed, "leaseDurationSeconds": duration}}


def test_a_lease_renewed_within_its_duration_and_the_skew_is_held():
    from ansible_collections.fleetops.registration.plugins.module_utils import leases
    from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_time

    now = parse_time("2026-11-30T10:00:20Z")
    assert leases.held(_lease("2026-11-30T10:00:18.123456Z"), now)
    assert leases.held(_lease("2026-11-30T10:00:02Z"), now)  # 18 s: its 15 s and the 3 s skew
    assert not leases.held(_lease("2026-11-30T10:00:01Z"), now)  # a frozen holder stops renewing
    assert not leases.held(_lease("2026-11-30T09:59:45Z", duration=30), now) and leases.held(_lease("2026-11-30T09:59:45Z", duration=40), now)
    assert not leases.held(_lease("2026-11-30T10:00:18Z", holder=""), now)  # released
    assert not leases.held(_lease(None), now) and not leases.held(None, now)


class _Member:
    """A member client whose GET of the agent's Lease answers ``lease`` (or raises it)."""

    def __init__(self, lease):
        self.lease, self.asked = lease, []

    def get(self, resource, name, namespace=None):
        self.asked.append((resource.kind, name, namespace))
        if isinstance(self.lease, Exception):
            raise self.lease
        return self.lease


def test_a_silent_kubefleet_agent_that_renews_its_lease_is_given_until_four_minutes_from_its_heartbeat():
    from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
    from ansible_collections.fleetops.registration.plugins.module_utils.times import format_time, utcnow

    running = _Member(_lease(format_time(utcnow())))
    # round 40 of seed 9461: heard from once after the hub restart, then 32 s of conflicts
    assert KUBEFLEET.reconnect_grace(running, {"heartbeat_age_seconds": 32}) == 208
    assert running.asked == [("Lease", "136224848560.hub.fleet.azure.com", "kube-system")]
    assert KUBEFLEET.reconnect_grace(running, {"heartbeat_age_seconds": 240}) is None
    assert KUBEFLEET.reconnect_grace(running, {"heartbeat_age_seconds": None}) is None
    # a frozen agent's Lease is old, a stopped one's gone: its period alone, as before
    assert KUBEFLEET.reconnect_grace(_Member(_lease("2026-11-29T09:00:00Z")), {"heartbeat_age_seconds": 32}) is None
    assert KUBEFLEET.reconnect_grace(_Member(None), {"heartbeat_age_seconds": 32}) is None
    # a view credential that may not read the Lease: not known, no longer wait
    assert KUBEFLEET.reconnect_grace(_Member(ApiError("forbidden", status=403)), {"heartbeat_age_seconds": 32}) is None
    # Fleet's agent keeps no such record the collection reads
    assert RANCHER_FLEET.reconnect_grace(running, {"last_seen": None}) is None
