"""A join never re-registers Fleet's agent with a hub that would take its workloads off the member (issue 45).

member1 joins (Rancher Fleet) and gets two Bundles' ConfigMaps. Then its hub loses what it had of the member while the
agent cannot act (its Deployment scaled to 0): one Bundle and the member's Cluster are deleted, so the agent's
credential goes with the Cluster - a hub restored without part of its state, or one that lost the member. A plain
join_cluster would register the agent again with that hub, and Fleet's agent, registered, uninstalls every release its
hub does not place. The join refuses, naming that one bundle (not the other), with nothing on the member changed
(sampled every half second). With fleetops_allow_workload_removal the next join re-registers the agent: exactly the
named workload leaves the member, the summary says so, and the one the hub places never leaves it.

A hub that places the member's bundles must also have made their BundleDeployments for the member's new Cluster before
the agent registers: Fleet's agent uninstalls, at its first clean-up, each bundle release it finds no BundleDeployment
of. With the hub's fleet-controller (which makes them) stopped, the join waits for them and fails with nothing changed;
once the controller runs, the next join registers the agent and the workload never leaves the member.
"""

import json

import pytest
from kubernetes import client

import fleet_workloads as workloads
from kube_helpers import absent, unique, wait_for
from test_playbooks import members_restored_on_failure, playbook  # noqa: F401 pylint: disable=unused-import

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("members_restored_on_failure")]

MEMBER = "member1"
JOIN = ("join_cluster.yml", "--limit", "fleet-hub," + MEMBER, "-e", json.dumps({"fleetops_backends": ["rancher_fleet"]}))
AGENT_NS = "cattle-fleet-system"
FLEET = ("fleet.cattle.io", "v1alpha1")
# The container of Fleet's controller that makes BundleDeployments (agentmanagement, which makes a Cluster's namespace
# and a token's values, runs beside it).
BUNDLE_CONTROLLER = "hub/cattle-fleet-system/fleet-controller-*/fleet-controller"


def _sampler(lab, placed):
    """Reads the placed ConfigMap on the member every half second; ``missing`` lists the moments it was not there."""
    return workloads.Sampler(lab, [MEMBER], [placed])


def _scale_agent(lab, replicas):
    """Scale the member's fleet-agent Deployment; at 0 wait until its pods (and so the agent's watches) are gone."""
    apps, core = client.AppsV1Api(lab.api_client(MEMBER)), client.CoreV1Api(lab.api_client(MEMBER))
    apps.patch_namespaced_deployment_scale("fleet-agent", AGENT_NS, {"spec": {"replicas": replicas}})
    if replicas == 0:
        wait_for(lambda: not core.list_namespaced_pod(AGENT_NS, label_selector="app=fleet-agent").items, 120,
                 "the fleet-agent pods to go")


def _lose_the_member(lab, placed=None):
    """The hub forgets the member (and its Bundle ``placed``) while the member's agent is stopped, so it sees neither go
    (as with a hub restored without its state, which the agent's credential no longer opens)."""
    _scale_agent(lab, 0)
    if placed is not None:
        workloads.remove(lab, placed)
    custom = client.CustomObjectsApi(lab.api_client("hub"))
    cluster = custom.get_namespaced_custom_object(*FLEET, "fleet-default", "clusters", MEMBER)
    custom.delete_namespaced_custom_object(*FLEET, "fleet-default", "clusters", MEMBER)
    wait_for(lambda: absent(lambda: custom.get_namespaced_custom_object(*FLEET, "fleet-default", "clusters", MEMBER)),
             120, "the member's Cluster to go from the hub")
    core = client.CoreV1Api(lab.api_client("hub"))
    wait_for(lambda: absent(lambda: core.read_namespace(cluster["status"]["namespace"])), 120,
             "the member's Cluster namespace (and its BundleDeployments) to go from the hub")


def test_a_join_refuses_to_register_an_agent_with_a_hub_that_does_not_place_its_workloads(lab_controllers, tmp_path):
    lab = lab_controllers
    playbook(lab, *JOIN, tmp_path=tmp_path)
    name = unique("guarded")
    kept, placed = workloads.place_bundle(lab, unique("kept"), {"env": "lab"}), workloads.place_bundle(lab, name, {"env": "lab"})
    try:
        before = workloads.wait_on_member(lab, MEMBER, placed)
        kept_before = workloads.wait_on_member(lab, MEMBER, kept)
        _lose_the_member(lab, placed)
        try:
            with _sampler(lab, placed) as sampler, _sampler(lab, kept) as kept_sampler:
                refused = playbook(lab, *JOIN, tmp_path=tmp_path, fails=True)
        finally:
            _scale_agent(lab, 1)  # it runs again, with a credential the hub no longer accepts
        assert "does not place what it deployed on the member" in refused.output, refused.output[-3000:]
        assert "rancher_fleet fleet-default/%s - the hub has no Bundle fleet-default/%s" % (name, name) in refused.output
        assert kept.name not in refused.output
        assert "fleetops_allow_workload_removal" in refused.output and "Nothing was changed" in refused.output
        for samples in (sampler, kept_sampler):
            assert not samples.missing and samples.samples > 5, (samples.missing[:10], samples.samples)
        assert workloads.on_member(lab, MEMBER, placed) == before

        with _sampler(lab, kept) as kept_sampler:
            allowed = playbook(lab, *(JOIN + ("-e", "fleetops_allow_workload_removal=true")), tmp_path=tmp_path)
            workloads.wait_gone_from_member(lab, MEMBER, placed)
            wait_for(lambda: workloads.applied_on_hub(lab, kept, MEMBER), 120, "the hub to report the kept bundle applied")
        assert ("removal allowed (fleetops_allow_workload_removal), the hub does not place: rancher_fleet fleet-default/%s"
                % name) in allowed.output, allowed.output[-3000:]
        assert not kept_sampler.missing and kept_sampler.samples > 10, (kept_sampler.missing[:10], kept_sampler.samples)
        assert workloads.on_member(lab, MEMBER, kept)["releases"] == kept_before["releases"]
    finally:
        for bundle in (placed, kept):
            workloads.remove(lab, bundle)
            workloads.wait_gone_from_member(lab, MEMBER, bundle)
            workloads.remove_from_member(lab, MEMBER, bundle)
    playbook(lab, "leave_cluster.yml", "--limit", "fleet-hub," + MEMBER, tmp_path=tmp_path)


def test_a_join_registers_the_agent_only_once_the_hub_has_deployed_its_bundles_to_the_member_s_new_cluster(lab_controllers, tmp_path):
    lab = lab_controllers
    playbook(lab, *JOIN, tmp_path=tmp_path)
    placed = workloads.place_bundle(lab, unique("deployed"), {"env": "lab"})
    apps = client.AppsV1Api(lab.api_client(MEMBER))
    try:
        before = workloads.wait_on_member(lab, MEMBER, placed)
        _lose_the_member(lab)
        agent_release = [r for r in workloads.helm_releases(lab, MEMBER, AGENT_NS) if r == "fleet-agent"]
        with _sampler(lab, placed) as sampler:
            lab.freeze(BUNDLE_CONTROLLER)
            try:
                held = playbook(lab, *(JOIN + ("-e", "member_join_wait_timeout=20")), tmp_path=tmp_path, fails=True)
                assert apps.read_namespaced_deployment("fleet-agent", AGENT_NS).spec.replicas == 0, \
                    "the agent was started before the hub deployed the member's bundles"
            finally:
                lab.thaw(BUNDLE_CONTROLLER)
            assert "waiting for the hub to deploy %s to Cluster fleet-default/%s before the agent connects" % (placed.name, MEMBER) \
                in held.output, held.output[-3000:]
            assert "still no BundleDeployment of %s" % placed.name in held.output and "Nothing was changed" in held.output
            assert workloads.helm_releases(lab, MEMBER, AGENT_NS).count("fleet-agent") == len(agent_release) == 1

            joined = playbook(lab, *JOIN, tmp_path=tmp_path)
            assert "%s: rancher_fleet fleet-default/%s: agent" % (MEMBER, MEMBER) in joined.output, joined.output[-3000:]
            wait_for(lambda: workloads.applied_on_hub(lab, placed, MEMBER), 120, "the hub to report the bundle applied")
        assert not sampler.missing and sampler.samples > 20, (sampler.missing[:10], sampler.samples)
        assert workloads.on_member(lab, MEMBER, placed) == before
    finally:
        workloads.remove(lab, placed)
        workloads.remove_from_member(lab, MEMBER, placed)  # also when the agent does not run (the test failed)
    playbook(lab, "leave_cluster.yml", "--limit", "fleet-hub," + MEMBER, tmp_path=tmp_path)
