"""Agent upgrades in waves (playbooks/upgrade_agents.yml) on the lab's two members. KubeFleet only: a change whose new
agent never starts stops at the canary, which is rolled back to the revision it ran and is healthy again, while the
second member is not touched; then a good change rolls out to both. Both managers: a bad image registry stops at the
canary, whose agents are both rolled back - Fleet's own through its Cluster's agent fields, which Fleet redeploys it
from - and then a changed image repository reaches every member."""

import json
import time

import pytest
from kubernetes import client

from kube_helpers import wait_for
from test_playbooks import Hub, condition, playbook

pytestmark = pytest.mark.lab

MEMBERS = ("member1", "member2")
KUBEFLEET_ONLY = {"fleetops_backends": ["kubefleet"], "member_join_kubefleet_heartbeat_period_seconds": 15}


def extra(**more):
    return "-e", json.dumps(dict(KUBEFLEET_ONLY, **more))


def history(lab, member):
    """``[(revision, status, description)]`` of the member-agent release."""
    proc = lab.run_helm(member, "history", "member-agent", "--namespace", "fleet-hub-credentials", "--output", "json")
    return [(item["revision"], item["status"], item["description"]) for item in json.loads(proc.stdout)]


def user_values(lab, member):
    proc = lab.run_helm(member, "get", "values", "member-agent", "--namespace", "fleet-hub-credentials", "--output", "json")
    return json.loads(proc.stdout)


def test_a_broken_canary_is_rolled_back_and_stops_the_wave_then_a_good_change_rolls_out(lab_controllers, tmp_path):
    lab, hub = lab_controllers, Hub(lab_controllers)
    limit = ("--limit", "fleet-hub," + ",".join(MEMBERS))
    playbook(lab, "leave_cluster.yml", *limit, *extra(), tmp_path=tmp_path)
    playbook(lab, "join_cluster.yml", *limit, *extra(), tmp_path=tmp_path)
    try:
        before = dict((member, (history(lab, member), user_values(lab, member))) for member in MEMBERS)

        # A setting the new agent dies of (klog refuses --v=not-a-number): its pod never becomes ready, while the old
        # agent pod keeps running and heartbeating - only the rollout wait tells the upgrade failed.
        started = time.monotonic()
        broken = playbook(lab, "upgrade_agents.yml", *extra(member_join_kubefleet_agent_values={"logVerbosity": "not-a-number"},
                                                            member_join_wait_timeout=45), tmp_path=tmp_path, fails=True)
        broken_seconds = time.monotonic() - started
        assert set(broken.recap) == {"member1"}, broken.recap  # the canary batch only: member2 was never in a batch
        assert broken.recap["member1"]["failed"] == 1
        assert "to roll out its new pods" in broken.output
        revisions = history(lab, "member1")
        assert revisions[-1][1] == "deployed" and revisions[-1][2] == "Rollback to %d" % before["member1"][0][-1][0], revisions
        assert user_values(lab, "member1") == before["member1"][1]
        assert condition(hub.member_cluster("member1"), "Joined") == "True"
        assert (history(lab, "member2"), user_values(lab, "member2")) == before["member2"]
        assert '"member1": "rolled back: kubefleet rolled back' in broken.output
        assert '"member2": "untouched' in broken.output

        good = playbook(lab, "upgrade_agents.yml", *extra(member_join_kubefleet_agent_values={"logVerbosity": 3}), tmp_path=tmp_path)
        assert set(good.recap) == set(MEMBERS) and all(good.changed(member) > 0 for member in MEMBERS), good.recap
        for member in MEMBERS:
            assert user_values(lab, member)["logVerbosity"] == 3
            assert history(lab, member)[-1][1] == "deployed"
            assert condition(hub.member_cluster(member), "Joined") == "True"
            assert '"%s": "upgraded: kubefleet upgraded' % member in good.output
        print("broken canary wave: %.0f s" % broken_seconds)
    finally:
        playbook(lab, "leave_cluster.yml", *limit, *extra(), tmp_path=tmp_path)


BOTH = {"fleetops_backends": ["rancher_fleet", "kubefleet"], "member_join_kubefleet_heartbeat_period_seconds": 15}
BAD_REGISTRY = "registry.invalid/nowhere"  # the lab has no member-agent image under this path: it cannot be pulled
MIRROR = "mirror.invalid:5000/azure/fleet/member-agent"  # the lab's member-agent image, from a mirror it can pull


def fleet_agent_adopted(lab, member):
    """The fleet-agent Deployment once Fleet deploys it as its own release (manageAgent) and it has rolled out, else None."""
    deployment = client.AppsV1Api(lab.api_client(member)).read_namespaced_deployment("fleet-agent", "cattle-fleet-system")
    status = deployment.status
    adopted = (deployment.metadata.annotations or {}).get("meta.helm.sh/release-name") == "fleet-agent-" + member
    rolled_out = (status.observed_generation or 0) >= deployment.metadata.generation and status.updated_replicas == status.replicas \
        and status.available_replicas == status.replicas and not status.unavailable_replicas
    return deployment if adopted and rolled_out else None


def images(deployment):
    return [c.image for c in deployment.spec.template.spec.containers]


def test_a_bad_registry_rolls_back_both_agents_at_the_canary_then_an_image_change_reaches_every_member(lab_controllers, tmp_path):
    lab, hub = lab_controllers, Hub(lab_controllers)
    limit = ("--limit", "fleet-hub," + ",".join(MEMBERS))
    both = ("-e", json.dumps(BOTH))
    playbook(lab, "leave_cluster.yml", *limit, *both, tmp_path=tmp_path)
    playbook(lab, "join_cluster.yml", *limit, *both, tmp_path=tmp_path)
    try:
        wait_for(lambda: fleet_agent_adopted(lab, "member1"), 180, "Fleet to adopt member1's agent")
        spec_before = hub.fleet_cluster("member1")["spec"]
        assert "privateRepoURL" not in spec_before
        kubefleet_before = history(lab, "member1")

        broken = playbook(lab, "upgrade_agents.yml", "-e", json.dumps(dict(
            BOTH, fleetops_agent={"image_registry": BAD_REGISTRY}, member_join_wait_timeout=45,
            member_join_rollback_wait_timeout=180)), tmp_path=tmp_path, fails=True)
        assert set(broken.recap) == {"member1"} and broken.recap["member1"]["failed"] == 1, broken.recap
        assert "to roll out its new pods" in broken.output
        # KubeFleet: Helm's rollback; Rancher Fleet: the Cluster's agent fields as before, and Fleet's redeploy, observed
        assert history(lab, "member1")[-1][2] == "Rollback to %d" % kubefleet_before[-1][0]
        cluster = hub.fleet_cluster("member1")
        assert "privateRepoURL" not in cluster["spec"], cluster["spec"]
        assert "fleetops.io/agent-fields-before" not in (cluster["metadata"].get("annotations") or {})
        agent = fleet_agent_adopted(lab, "member1")
        assert agent is not None and not [i for i in images(agent) if i.startswith(BAD_REGISTRY)], images(agent)
        line = next(text for text in broken.output.splitlines() if '"member1": ' in text and "rolled back" in text)
        assert line.strip().startswith('"member1": "rolled back: rancher_fleet rolled back (the Cluster\'s privateRepoURL '
                                       'restored, the agent redeployed by Fleet)'), line
        assert "kubefleet rolled back" in line
        assert '"member2": "untouched' in broken.output and "privateRepoURL" not in hub.fleet_cluster("member2")["spec"]

        # A changed image repository is compared like any chart value, so the next wave applies it (it was "unchanged").
        good = playbook(lab, "upgrade_agents.yml", "-e", json.dumps(dict(BOTH, member_join_kubefleet_agent_image_repository=MIRROR)),
                        tmp_path=tmp_path)
        assert set(good.recap) == set(MEMBERS), good.recap
        apps = dict((member, client.AppsV1Api(lab.api_client(member))) for member in MEMBERS)
        for member in MEMBERS:
            assert user_values(lab, member)["image"]["repository"] == MIRROR
            deployment = apps[member].read_namespaced_deployment("member-agent", "fleet-system")
            assert any(image.startswith(MIRROR + ":") for image in images(deployment)), images(deployment)
            assert '"%s": "upgraded: ' % member in good.output and "kubefleet upgraded" in good.output
            assert condition(hub.member_cluster(member), "Joined") == "True"
            assert "privateRepoURL" not in hub.fleet_cluster(member)["spec"]  # the good wave leaves the good setting
    finally:
        playbook(lab, "leave_cluster.yml", *limit, *both, tmp_path=tmp_path)
