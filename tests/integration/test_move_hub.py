"""Moving members to a new hub (playbooks/move_hub.yml) in the lab with two hubs. First hub2 places none of the members'
workloads: the move is refused for every member before anything changes (sampled), naming each missing placement.
Then, with the same Fleet Bundle and KubeFleet placement on hub2, both members move from hub to hub2,
where the same Fleet Bundle and KubeFleet placement exist; their workloads never leave the members meanwhile (sampled
every half second), hub2 reports them applied, hub has nothing of them, and a second run changes nothing. Then the
move back to hub, with hub's URL wrong for the agents: the canary does not come up there, is moved back to hub2 and
the move stops (the other member untouched); with the right URL both move back, leaving the lab as the other tests
expect it (the members joined to hub)."""

import json
import threading
import time

import pytest
import yaml
from kubernetes import client

from fleet_workloads import applied_on_hub, placements, wait_on_member
from kube_helpers import read_or_none
from test_playbooks import playbook

pytestmark = pytest.mark.lab

MEMBERS = ("member1", "member2")
SETTINGS = {"fleetops_backends": ["rancher_fleet", "kubefleet"], "member_join_kubefleet_heartbeat_period_seconds": 15,
            "member_join_wait_timeout": 120, "fleetops_move_wait_timeout": 120}
BACK_TO_HUB = {"fleetops_new_hub": "fleet-hub", "member_join_hub_host": "fleet-hub2"}
LIMIT = ("--limit", "fleet-hub,fleet-hub2," + ",".join(MEMBERS))


def extra(**more):
    return "-e", json.dumps(dict(SETTINGS, **more))


class Sampler(threading.Thread):
    """Reads each placed ConfigMap on each member every half second while a move runs; ``missing`` lists the gaps."""

    def __init__(self, lab, placed):
        super().__init__(daemon=True)
        self.cores = dict((member, client.CoreV1Api(lab.api_client(member))) for member in MEMBERS)
        self.placed = placed
        self.missing, self.samples = [], 0
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            for member, core in self.cores.items():
                for one in self.placed:
                    if read_or_none(lambda c=core, p=one: c.read_namespaced_config_map(p.name, p.namespace)) is None:
                        self.missing.append((time.strftime("%H:%M:%S"), member, one.name))
            self.samples += 1
            self.done.wait(0.5)

    def stop(self):
        self.done.set()
        self.join(10)
        return self.missing


def hub_objects(lab, hub, member):
    """What ``hub`` has of ``member``: its Fleet Cluster, MemberCluster and Fleet BundleDeployments."""
    custom = client.CustomObjectsApi(lab.api_client(hub))
    cluster = read_or_none(lambda: custom.get_namespaced_custom_object("fleet.cattle.io", "v1alpha1", "fleet-default", "clusters", member))
    member_cluster = read_or_none(lambda: custom.get_cluster_custom_object("cluster.kubernetes-fleet.io", "v1beta1", "memberclusters", member))
    deployments = custom.list_cluster_custom_object("fleet.cattle.io", "v1alpha1", "bundledeployments",
                                                    label_selector="fleet.cattle.io/cluster=%s" % member)["items"]
    return [obj for obj in (cluster, member_cluster) if obj] + deployments


def prepare_hub2(lab):
    """hub2's Fleet clusters namespace, which the hub role makes (the Bundle goes there before the move)."""
    core = client.CoreV1Api(lab.api_client("hub2"))
    if read_or_none(lambda: core.read_namespace("fleet-default")) is None:
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="fleet-default")))


def refused_move(lab, on_hub, tmp_path):
    """A move to hub2, which places neither of hub's workloads: refused for
    every member before anything changes on any of them, naming each missing placement."""
    sampler = Sampler(lab, list(on_hub.values()))
    sampler.start()
    try:
        refused = playbook(lab, "move_hub.yml", *LIMIT, *extra(), tmp_path=tmp_path, fails=True)
    finally:
        gaps = sampler.stop()
    assert not gaps and sampler.samples > 2, (gaps[:10], sampler.samples)
    assert "Nothing was changed" in refused.output, refused.output[-3000:]
    for member in MEMBERS:
        assert "member %s: the agents would be pointed at fleet-hub2" % member in refused.output
        assert hub_objects(lab, "hub2", member) == [], member
        assert all(applied_on_hub(lab, one, member) for one in on_hub.values()), member
    for one in on_hub.values():
        assert "%s %s" % (one.manager, ("fleet-default/" if one.manager == "rancher_fleet" else "") + one.name) in refused.output
    return refused


def test_members_move_to_hub2_without_a_gap_and_back_with_a_canary_that_fails(lab_hub2, tmp_path):
    lab = lab_hub2.lab
    playbook(lab, "join_cluster.yml", "--limit", "fleet-hub," + ",".join(MEMBERS), *extra(), tmp_path=tmp_path)
    prepare_hub2(lab)
    labels = {"env": "lab"}
    with placements(lab, "moving", labels, members=MEMBERS) as on_hub:
        for member in MEMBERS:
            for one in on_hub.values():
                wait_on_member(lab, member, one)
        refused_move(lab, on_hub, tmp_path)
        with placements(lab, "moving", labels, members=MEMBERS, hub="hub2") as on_hub2:
            move_there_and_back(lab, on_hub, on_hub2, tmp_path)


def move_there_and_back(lab, on_hub, on_hub2, tmp_path):
    """Both members to hub2 with no gap, a re-run that changes nothing, a canary that fails back, and both back to hub."""
    sampler = Sampler(lab, list(on_hub.values()))
    sampler.start()
    try:
        moved = playbook(lab, "move_hub.yml", *LIMIT, *extra(), tmp_path=tmp_path)
    finally:
        gaps = sampler.stop()
    assert not gaps and sampler.samples > 20, (gaps[:10], sampler.samples)
    for member in MEMBERS:
        assert '"%s": "moved: kubefleet, rancher_fleet on the new hub' % member in moved.output
        assert all(applied_on_hub(lab, one, member) for one in on_hub2.values()), member
        assert hub_objects(lab, "hub", member) == [], member

    again = playbook(lab, "move_hub.yml", *LIMIT, *extra(), tmp_path=tmp_path)
    assert all(again.changed(member) == 0 for member in MEMBERS), again.recap
    assert '"member1": "moved: already on the new hub' in again.output

    # hub's URL wrong for the agents (a port nothing listens on): the canary cannot come up there
    wrong = tmp_path / "wrong-url.yml"
    wrong.write_text(yaml.safe_dump({"all": {"children": {"hub": {"hosts": {"fleet-hub": {
        "fleetops_api_server_url": "https://127.0.0.1:9"}}}}}}))
    failed = playbook(lab, "move_hub.yml", "-i", str(wrong), *LIMIT, *extra(**BACK_TO_HUB), tmp_path=tmp_path, fails=True)
    assert '"member1": "moved back to the old hub' in failed.output, failed.output[-3000:]
    assert '"member2": "untouched' in failed.output
    assert hub_objects(lab, "hub", "member1") == [] and hub_objects(lab, "hub", "member2") == []
    assert all(applied_on_hub(lab, one, "member1") for one in on_hub2.values())

    back = playbook(lab, "move_hub.yml", *LIMIT, *extra(**BACK_TO_HUB), tmp_path=tmp_path)
    for member in MEMBERS:
        assert '"%s": "moved: kubefleet, rancher_fleet on the new hub' % member in back.output
        assert all(applied_on_hub(lab, one, member) for one in on_hub.values()), member
        assert hub_objects(lab, "hub2", member) == [], member


def test_members_are_evacuated_from_a_hub_that_is_down_without_a_gap_and_the_old_hub_is_cleared_once_it_is_back(lab_hub2, tmp_path):
    """Issue 45 item 4: with hub's API server stopped, move_hub.yml -e fleetops_old_hub_lost=true judges what runs on
    each member (read from it) instead of hub's placements: refused while hub2 places none of them, nothing changed;
    with them on hub2 it moves both members there with no workload ever leaving a member, hub2 reports them applied,
    and each member's line says what stays on hub. With hub back, the plain move finds the members on both hubs and
    removes hub's objects; then both move back to hub, as the lab's other tests expect them."""
    lab = lab_hub2.lab
    playbook(lab, "join_cluster.yml", "--limit", "fleet-hub," + ",".join(MEMBERS), *extra(), tmp_path=tmp_path)
    prepare_hub2(lab)
    labels, lost = {"env": "lab"}, extra(fleetops_old_hub_lost=True)
    with placements(lab, "evacuated", labels, members=MEMBERS) as on_hub:
        for member in MEMBERS:
            for one in on_hub.values():
                wait_on_member(lab, member, one)
        sampler = Sampler(lab, list(on_hub.values()))
        lab.stop("hub-apiserver")
        try:
            sampler.start()
            refused = playbook(lab, "move_hub.yml", *LIMIT, *lost, tmp_path=tmp_path, fails=True)
            assert "Nothing was changed" in refused.output, refused.output[-3000:]
            assert all("%s %s" % (one.manager, ("fleet-default/" if one.manager == "rancher_fleet" else "") + one.name)
                       in refused.output for one in on_hub.values()), refused.output[-3000:]
            assert all(hub_objects(lab, "hub2", member) == [] for member in MEMBERS)
            # The sampler stops before the placements on hub2 go: their clean-up takes the (same) workloads off the members.
            with placements(lab, "evacuated", labels, members=MEMBERS, hub="hub2") as on_hub2:
                moved = playbook(lab, "move_hub.yml", *LIMIT, *lost, tmp_path=tmp_path)
                _evacuated(lab, moved, on_hub2, tmp_path)
                gaps = sampler.stop()
        finally:
            sampler.stop()
            lab.start("hub-apiserver")
        assert not gaps and sampler.samples > 20, (gaps[:10], sampler.samples)


def _evacuated(lab, moved, on_hub2, tmp_path):
    """After the evacuation: the members on hub2 with its placements applied and their objects still on hub; with hub
    back, a plain move clears those, then both members move back to hub."""
    for member in MEMBERS:
        assert ('"%s": "moved: kubefleet, rancher_fleet on the new hub, its placements applied there; the old hub not '
                'reached; left there: its kubefleet, rancher_fleet objects of the member' % member) in moved.output, moved.output[-3000:]
        assert all(applied_on_hub(lab, one, member) for one in on_hub2.values()), member
    lab.start("hub-apiserver")
    assert all(hub_objects(lab, "hub", member) != [] for member in MEMBERS)

    cleared = playbook(lab, "move_hub.yml", *LIMIT, *extra(), tmp_path=tmp_path)
    for member in MEMBERS:
        assert ('"%s": "moved: kubefleet, rancher_fleet on the new hub, its placements applied there; the old hub\'s '
                'objects removed"' % member) in cleared.output, cleared.output[-3000:]
        assert hub_objects(lab, "hub", member) == [], member
        assert all(applied_on_hub(lab, one, member) for one in on_hub2.values()), member

    back = playbook(lab, "move_hub.yml", *LIMIT, *extra(**BACK_TO_HUB), tmp_path=tmp_path)
    for member in MEMBERS:
        assert '"%s": "moved: kubefleet, rancher_fleet on the new hub' % member in back.output, back.output[-3000:]
        assert hub_objects(lab, "hub2", member) == [], member
