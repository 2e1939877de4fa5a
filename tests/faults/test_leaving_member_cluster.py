"""A MemberCluster deleted on the hub after its member agent's Deployment was deleted: found by make soak (seed 3187,
round 7, a MemberCluster deleted and the run killed, whose own fault deletes the agent Deployment). KubeFleet's hub
agent keeps the MemberCluster until the member agent acknowledges the leave, and force-deletes it only after 15
minutes; every join in between failed "no member agent runs to acknowledge it". The join now makes the Deployment
again from the agent's own Helm release, lets the agent acknowledge the leave, and joins the member again in one run.
"""

import time

import pytest
from kubernetes import client
from fault_helpers import KUBEFLEET, LIMIT, MEMBER, agent_pids, assert_joined_since
from kube_helpers import ignore_404, wait_for

pytestmark = pytest.mark.lab

AGENT = ("member-agent", "fleet-system")


def _revisions(sides):
    """The agent release's revisions Helm keeps (its records beside the token, kubefleet_member_agent's default)."""
    records = sides.core(MEMBER).list_namespaced_secret("fleet-hub-credentials", label_selector="owner=helm,name=member-agent").items
    return sorted(int(record.metadata.labels["version"]) for record in records)


def _leaving(sides):
    member_cluster = sides.member_cluster(MEMBER)
    return bool(member_cluster and member_cluster["metadata"].get("deletionTimestamp"))


def test_a_member_cluster_leaving_after_its_agent_deployment_was_deleted_is_let_go_and_joined_again_in_one_run(lab_controllers, play, sides):
    lab = lab_controllers
    play.converges("join_cluster.yml", *LIMIT)
    apps = client.AppsV1Api(lab.api_client(MEMBER))
    before, revisions = sides.member_cluster(MEMBER)["metadata"]["uid"], _revisions(sides)
    apps.delete_namespaced_deployment(*AGENT)
    wait_for(lambda: not agent_pids(lab, MEMBER, "member-agent"), 120, "the member agent to stop")
    sides.hub_custom.delete_cluster_custom_object(*KUBEFLEET, "memberclusters", MEMBER)
    try:
        time.sleep(3)
        assert _leaving(sides), "the MemberCluster went at once, without its agent's acknowledgement: no fault"
        fault_at = time.time()
        rerun = play.converges("join_cluster.yml", *LIMIT)
    finally:
        if _leaving(sides):  # the hub agent would keep it 15 minutes: let the next test find no leave in progress
            ignore_404(lambda: sides.hub_custom.patch_cluster_custom_object(
                *KUBEFLEET, "memberclusters", MEMBER, {"metadata": {"finalizers": None}}))
    assert sides.member_cluster(MEMBER)["metadata"]["uid"] != before, "the MemberCluster was not made again"
    deployment = apps.read_namespaced_deployment(*AGENT)
    assert deployment.metadata.creation_timestamp.timestamp() > fault_at - 2 and (deployment.status.available_replicas or 0) > 0
    # made again by one Helm revision (a rollback to the newest), the release left as it was otherwise
    assert _revisions(sides)[-1] == revisions[-1] + 1, (revisions, _revisions(sides))
    assert_joined_since(sides, rerun, fault_at)
