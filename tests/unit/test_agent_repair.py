"""Each cause of an agent that does not serve has a repair (agent_repair.repair_plan), and the rule tables send a member
with such an agent to the agent step (action install) instead of calling it healthy."""

import datetime

from ansible_collections.fleetops.registration.plugins.module_utils import agent_repair, diagnosis, times
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.manager import MANAGER as KUBEFLEET
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.manager import MANAGER as FLEET

NOW = datetime.datetime(2026, 11, 21, 10, 0, tzinfo=datetime.timezone.utc)
RESTART = {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-21T10:00:00Z"}}}}}


def deployment(replicas=1, available=1, deadline=False, unavailable_since="2026-11-21T09:50:00Z"):
    status = {"availableReplicas": available, "updatedReplicas": 1, "replicas": 1, "observedGeneration": 2,
              "conditions": [{"type": "Available", "status": "True" if available else "False",
                              "lastTransitionTime": unavailable_since}]}
    if deadline:
        status["conditions"].append({"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"})
    return {"metadata": {"generation": 2}, "spec": {"replicas": replicas}, "status": status}


def test_an_agent_scaled_to_0_gets_its_replica_back_even_while_a_helm_change_rolls_it():
    for rolling in (False, True):
        patch, why = agent_repair.repair_plan(deployment(replicas=0, available=0), rolling=rolling, now=NOW)
        assert patch == {"spec": {"replicas": 1}} and "scaled to 0" in why


def test_a_silent_or_stuck_agent_is_restarted_unless_this_run_rolls_it_anyway():
    assert agent_repair.repair_plan(deployment(), silent="last heartbeat 600s old", now=NOW) == (
        RESTART, "the agent was restarted (rollout restart): last heartbeat 600s old")
    patch, why = agent_repair.repair_plan(deployment(available=0), now=NOW)
    assert patch == RESTART and "no available replica" in why
    assert agent_repair.repair_plan(deployment(deadline=True), now=NOW)[0] == RESTART
    assert agent_repair.repair_plan(deployment(), silent="stale", rolling=True) == (None, None)
    assert agent_repair.repair_plan(deployment(available=0), rolling=True) == (None, None)


def test_an_agent_that_is_still_starting_is_not_restarted():
    """Installed a minute ago without waiting (wait=false, or a run that died): no replica yet is a start, not a fault."""
    starting = deployment(available=0, unavailable_since="2026-11-21T09:59:00Z")
    assert agent_repair.repair_plan(starting, now=NOW) == (None, None)
    assert agent_repair.repair_plan(deployment(available=0, unavailable_since=None), now=NOW) == (None, None)
    assert agent_repair.repair_plan(deployment(available=0), now=NOW)[0] == RESTART  # ten minutes without one


def test_a_serving_missing_or_leaving_agent_needs_no_repair():
    assert agent_repair.repair_plan(deployment()) == (None, None)
    assert agent_repair.repair_plan(None, silent="stale") == (None, None)
    leaving = dict(deployment(replicas=0), metadata={"deletionTimestamp": "2026-11-21T09:00:00Z"})
    assert agent_repair.repair_plan(leaving) == (None, None)


def test_only_a_scaled_down_or_stuck_rollout_calls_for_the_agent_step():
    assert agent_repair.needs_rollout(diagnosis.rollout_problem(deployment(replicas=0, available=0)))
    assert agent_repair.needs_rollout(diagnosis.rollout_problem(deployment(available=0)))
    assert not agent_repair.needs_rollout(diagnosis.rollout_problem(dict(deployment(), status=dict(
        deployment()["status"], updatedReplicas=0))))  # a rollout under way is left to finish
    assert not agent_repair.needs_rollout(None)


KF_HUB = {"name": "east-1", "labels": {}, "identity": {"kind": "ServiceAccount", "name": "a", "namespace": "fleet-system"},
          "joined": True, "healthy": True, "ready_to_join": True, "heartbeat_period_seconds": 60, "leaving": False,
          "heartbeat": "2026-11-21T09:59:30Z", "heartbeat_age_seconds": 30, "quarantined": False}
KF_MEMBER = {"release": {"status": "deployed"},
             "credential": {"name": "s", "namespace": "n", "present": True, "accepted": True, "username": None,
                            "issued": times.format_time(times.utcnow()),
                            "expires": times.format_time(times.utcnow() + datetime.timedelta(days=30)), "age_seconds": 3600},
             "deployment": {"name": "member-agent", "namespace": "fleet-system", "present": True, "rollout_problem": None}}


def test_kubefleet_sends_an_agent_scaled_to_0_to_the_agent_step_while_its_heartbeat_is_still_fresh():
    assert KUBEFLEET.decide("east-1", KF_HUB, KF_MEMBER, {}).action == "none"
    member = dict(KF_MEMBER, deployment=dict(KF_MEMBER["deployment"], rollout_problem="the agent Deployment is scaled to 0 replicas"))
    state = KUBEFLEET.decide("east-1", KF_HUB, member, {})
    assert (state.action, state.reasons, state.healthy) == ("install", ["the agent Deployment is scaled to 0 replicas"], False)
    rolling = dict(KF_MEMBER, deployment=dict(KF_MEMBER["deployment"], rollout_problem="the agent Deployment's rollout is not complete"))
    assert KUBEFLEET.decide("east-1", KF_HUB, rolling, {}).action == "none"


def test_rancher_fleet_sends_an_agent_scaled_to_0_to_the_agent_step_before_it_goes_stale():
    hub = {"name": "east-1", "checked_in": True, "seen_age_seconds": 20, "deleting": False, "labels": {}}
    member = {"release": {"status": "deployed"}, "deployment": True, "credential": True, "credential_usable": True,
              "credential_accepted": True}
    assert FLEET.decide("east-1", hub, member, {"labels": None}).action == "none"
    scaled = dict(member, deployment_problem="the agent Deployment is scaled to 0 replicas")
    state = FLEET.decide("east-1", hub, scaled, {"labels": None})
    assert (state.action, state.reasons) == ("install", ["the agent Deployment is scaled to 0 replicas"])


def test_the_agent_unavailable_fix_says_what_a_rerun_does_and_what_it_cannot():
    member = dict(KF_MEMBER, deployment=dict(KF_MEMBER["deployment"], rollout_problem="the agent Deployment is scaled to 0 replicas"))
    state = KUBEFLEET.decide("east-1", dict(KF_HUB), member, {"now": NOW})
    found = diagnosis.diagnose(KUBEFLEET, None, state, NOW)
    assert state.action == "install" and [f["cause"] for f in found] == ["agent_unavailable"]
    assert found[0]["fix"].startswith("A re-run restores its replica (the agent charts set none")
    stuck = dict(KF_MEMBER, deployment=dict(KF_MEMBER["deployment"], rollout_problem="the agent Deployment has no available replica"))
    found = diagnosis.diagnose(KUBEFLEET, None, KUBEFLEET.decide("east-1", dict(KF_HUB), stuck, {"now": NOW}), NOW)
    assert "fails naming the cause" in found[0]["fix"]


def test_the_join_summary_says_re_registered_only_when_the_agent_step_changed_something():
    from ansible_collections.fleetops.registration.plugins.plugin_utils.summaries import join_summary
    state = {"action": "reregister", "reasons": ["the member agent's last heartbeat is 600s old"], "hub": {"joined": True},
             "member": {}, "diagnosis": []}
    info = {"name": "edge-07", "managers": {"kubefleet": state}}
    unchanged = join_summary(info, {"member_join__kf_agent": {"changed": False, "member": {"joined": True, "healthy": True}}})
    assert "agent unchanged" in unchanged["line"] and "re-registered" not in unchanged["line"]
    changed = join_summary(info, {"member_join__kf_agent": {"changed": True, "member": {"joined": True, "healthy": True}}})
    assert "agent re-registered (the member agent's last heartbeat is 600s old), joined, healthy" in changed["line"]
