"""A join never re-registers Fleet's agent with a hub that would take its workloads off the member (issue 45).

member1 joins (Rancher Fleet) and gets a Bundle's ConfigMap. Then its hub loses what it had of the member while the
agent cannot act (its Deployment scaled to 0): the Bundle and the member's Cluster are deleted, so the agent's credential
goes with the Cluster - a hub restored without its state, or one that lost the member. A plain join_cluster would
register the agent again with that hub, and Fleet's agent, registered, uninstalls every release its hub does not place.
The join refuses, naming the bundle, with nothing on the member changed (sampled every half second). With the Bundle
back on the hub, the next join re-registers the agent and the workload never leaves the member.
"""

import json
import threading
import time

import pytest
from kubernetes import client

import fleet_workloads as workloads
from kube_helpers import absent, unique, wait_for
from test_playbooks import members_restored_on_failure, playbook  # noqa: F401 pylint: disable=unused-import

pytestmark = [pytest.mark.lab, pytest.mark.usefixtures("members_restored_on_failure")]

MEMBER = "member1"
JOIN = ("join_cluster.yml", "--limit", "fleet-hub," + MEMBER, "-e", json.dumps({"fleetops_backends": ["rancher_fleet"]}))
AGENT_NS = "cattle-fleet-system"


class Sampler(threading.Thread):
    """Reads the placed ConfigMap on the member every half second; ``missing`` lists the moments it was not there."""

    def __init__(self, lab, placed):
        super().__init__(daemon=True)
        self.lab, self.placed, self.missing, self.samples = lab, placed, [], 0
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            if workloads.on_member(self.lab, MEMBER, self.placed)["configmap"] != self.placed.data:
                self.missing.append(time.strftime("%H:%M:%S"))
            self.samples += 1
            self.done.wait(0.5)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.join(30)


def _scale_agent(lab, replicas):
    """Scale the member's fleet-agent Deployment; at 0 wait until its pods (and so the agent's watches) are gone."""
    apps, core = client.AppsV1Api(lab.api_client(MEMBER)), client.CoreV1Api(lab.api_client(MEMBER))
    apps.patch_namespaced_deployment_scale("fleet-agent", AGENT_NS, {"spec": {"replicas": replicas}})
    if replicas == 0:
        wait_for(lambda: not core.list_namespaced_pod(AGENT_NS, label_selector="app=fleet-agent").items, 120,
                 "the fleet-agent pods to go")


def _lose_the_member(lab, placed):
    """The hub forgets the member and its Bundle while the member's agent is stopped, so it sees neither go (as with
    a hub restored without its state, which the agent's credential no longer opens)."""
    _scale_agent(lab, 0)
    workloads.remove(lab, placed)
    custom = client.CustomObjectsApi(lab.api_client("hub"))
    custom.delete_namespaced_custom_object("fleet.cattle.io", "v1alpha1", "fleet-default", "clusters", MEMBER)
    wait_for(lambda: absent(lambda: custom.get_namespaced_custom_object("fleet.cattle.io", "v1alpha1", "fleet-default", "clusters", MEMBER)),
             120, "the member's Cluster to go from the hub")


def test_a_join_refuses_to_register_an_agent_with_a_hub_that_does_not_place_its_workloads(lab_controllers, tmp_path):
    lab = lab_controllers
    playbook(lab, *JOIN, tmp_path=tmp_path)
    name = unique("guarded")
    placed = workloads.place_bundle(lab, name, {"env": "lab"})
    try:
        before = workloads.wait_on_member(lab, MEMBER, placed)
        _lose_the_member(lab, placed)
        try:
            with Sampler(lab, placed) as sampler:
                refused = playbook(lab, *JOIN, tmp_path=tmp_path, fails=True)
        finally:
            _scale_agent(lab, 1)  # it runs again, with a credential the hub no longer accepts
        assert "does not place what it deployed on the member" in refused.output, refused.output[-3000:]
        assert "rancher_fleet fleet-default/%s - the hub has no Bundle fleet-default/%s" % (name, name) in refused.output
        assert "fleetops_allow_workload_removal" in refused.output and "Nothing was changed" in refused.output
        assert not sampler.missing and sampler.samples > 5, (sampler.missing[:10], sampler.samples)
        assert workloads.on_member(lab, MEMBER, placed) == before

        placed = workloads.place_bundle(lab, name, {"env": "lab"})
        with Sampler(lab, placed) as sampler:
            playbook(lab, *JOIN, tmp_path=tmp_path)
            wait_for(lambda: workloads.applied_on_hub(lab, placed, MEMBER), 120, "the hub to report the bundle applied on the member")
        assert not sampler.missing and sampler.samples > 10, (sampler.missing[:10], sampler.samples)
        assert workloads.on_member(lab, MEMBER, placed)["releases"] == before["releases"]
    finally:
        workloads.remove(lab, placed)
        workloads.wait_gone_from_member(lab, MEMBER, placed)
        workloads.remove_from_member(lab, MEMBER, placed)
    playbook(lab, "leave_cluster.yml", "--limit", "fleet-hub," + MEMBER, tmp_path=tmp_path)
