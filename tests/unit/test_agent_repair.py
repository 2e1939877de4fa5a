"""Each cause of an agent that does not serve has a repair (agent_repair.repair_plan), and the rule tables send a member
with such an agent to the agent step (action install) instead of calling it healthy."""

import datetime

from ansible_collections.fleetops.registration.plugins.module_utils import agent_repair, diagnosis

NOW = datetime.datetime(2026, 11, 21, 10, 0, tzinfo=datetime.timezone.utc)
RESTART = {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-21T10:00:00Z"}}}}}


def deployment(replicas=1, available=1, deadline=False):
    status = {"availableReplicas": available, "updatedReplicas": 1, "replicas": 1, "observedGeneration": 2}
    if deadline:
        status["conditions"] = [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]
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
