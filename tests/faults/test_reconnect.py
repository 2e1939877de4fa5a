"""A KubeFleet member agent that runs but is not heard from on the hub for a while is waited for, not restarted.

Found by make soak (seed 9461, round 40): after a hub restart the agent heartbeat once, and every next heartbeat
conflicted until its cache listed the hub again; a re-run 20 s later judged it silent (3 of the lab's 10 s periods) and
restarted it, so the run after the convergence was not changed=0. Here a ValidatingAdmissionPolicy on the hub refuses
the agent's heartbeats while its process goes on (it renews its Lease on the member); they are let through again once
the heartbeat is 70 s old, within the reconnection bound and after the one period a silent agent was given before.
"""

import threading
import time

import pytest
from kubernetes import client
from fault_helpers import LIMIT, MEMBER, agent_pids, recap_changed
from kube_helpers import ignore_404, wait_for

pytestmark = pytest.mark.lab

PERIOD = ("-e", "member_join_kubefleet_heartbeat_period_seconds=10")
HOLD = "fleetops-test-hold-heartbeats"
LET_THROUGH_AT_AGE = 70


def _hold_heartbeats(admission, username):
    """Refuse every status update of the InternalMemberClusters that ``username`` (the member agent) sends."""
    admission.create_validating_admission_policy({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": HOLD},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["cluster.kubernetes-fleet.io"], "apiVersions": ["*"], "operations": ["UPDATE"],
                "resources": ["internalmemberclusters/status"]}]},
            "matchConditions": [{"name": "member-agent", "expression": "request.userInfo.username == '%s'" % username}],
            "validations": [{"expression": "false", "message": "the test holds the member agent's heartbeats back"}],
        },
    })
    admission.create_validating_admission_policy_binding({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": HOLD},
        "spec": {"policyName": HOLD, "validationActions": ["Deny"]},
    })


def _let_through(admission):
    ignore_404(lambda: admission.delete_validating_admission_policy_binding(HOLD))
    ignore_404(lambda: admission.delete_validating_admission_policy(HOLD))


def test_a_running_member_agent_not_heard_from_for_a_while_is_waited_for_not_restarted(lab_controllers, play, sides):
    lab = lab_controllers
    play.converges("join_cluster.yml", *LIMIT, *PERIOD)
    identity = sides.member_cluster(MEMBER)["spec"]["identity"]
    admission = client.AdmissionregistrationV1Api(lab.api_client("hub"))
    running = agent_pids(lab, MEMBER, "member-agent")
    let_through_at, stop = [], threading.Event()

    def let_through_later():
        while not stop.is_set() and time.time() - sides.kubefleet_heartbeat(MEMBER) < LET_THROUGH_AT_AGE:
            time.sleep(1)
        _let_through(admission)
        let_through_at.append(time.time())

    _hold_heartbeats(admission, "system:serviceaccount:%s:%s" % (identity["namespace"], identity["name"]))
    try:
        wait_for(lambda: time.time() - sides.kubefleet_heartbeat(MEMBER) > 40, 120, "the held agent's heartbeat to go stale (3 periods)")
        started = time.time()
        later = threading.Thread(target=let_through_later, daemon=True)
        later.start()
        rerun = play.converges("join_cluster.yml", *LIMIT, *PERIOD)
        finished = time.time()
    finally:
        stop.set()
        _let_through(admission)
    assert let_through_at and started < let_through_at[0] < finished, "the re-run ended before the heartbeats were let through"
    assert agent_pids(lab, MEMBER, "member-agent") == running, "the re-run restarted a running agent it was about to hear from"
    assert "rollout restart" not in rerun and recap_changed(rerun, MEMBER) == 0, rerun[-3000:]
    wait_for(lambda: sides.kubefleet_heartbeat(MEMBER) > let_through_at[0], 60, "a heartbeat after they were let through")
    sides.assert_kubefleet_member_healthy(MEMBER)
