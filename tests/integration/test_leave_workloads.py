"""What a leave does to the workloads the fleet managers placed on the member (fleetops_leave_workloads, issue 34).

Both members join; a Rancher Fleet Bundle and a KubeFleet ClusterResourcePlacement, selecting them by the inventory's
label env=lab, put a ConfigMap on each. Then both leave in one run - member1 with fleetops_leave_workloads=remove (a host
variable of a second inventory source), member2 with the default (keep) - check mode first, which only predicts. Kept:
both workloads stay on member2, unmanaged, and its summary lists them. Removed: they are gone from member1. Neither
keeps anything of the agents. The members end as the other tests expect to find them: not joined, with nothing of this
test on them or on the hub.
"""

import time

import pytest
from kubernetes import client

import fleet_workloads as workloads
from kube_helpers import unique
from modrun import run_module
from test_playbooks import Hub, assert_left, playbook

pytestmark = pytest.mark.lab

REMOVING, KEEPING = "member1", "member2"


def _owned_by_applied_work(lab, member, placed):
    """The kept KubeFleet objects (the placement's Namespace and ConfigMap) that still name an AppliedWork as owner."""
    core = client.CoreV1Api(lab.api_client(member))
    objects = {"Namespace %s" % placed.namespace: core.read_namespace(placed.namespace),
               "ConfigMap %s/%s" % (placed.namespace, placed.name): core.read_namespaced_config_map(placed.name, placed.namespace)}
    return [what for what, obj in objects.items() if any(ref.kind == "AppliedWork" for ref in obj.metadata.owner_references or [])]


def _running(lab, member):
    """Issue 45: member_info's ``member.workloads`` per manager, what the agents run on ``member`` (read from it)."""
    result = run_module("member_info", {"kubeconfig": str(lab.kubeconfig), "context": member, "name": member,
                                        "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub"})
    assert not result.failed, result
    return dict((manager, state["member"]["workloads"]) for manager, state in result["managers"].items())


def _summary(run, member):
    """The leave's summary line for ``member`` (the play's last debug message)."""
    return next(line for line in run.output.splitlines() if '"msg": "%s: ' % member in line)


def test_a_leave_keeps_the_fleet_s_workloads_by_default_and_removes_them_when_asked(lab_controllers, tmp_path):
    lab, hub = lab_controllers, Hub(lab_controllers)
    members = [REMOVING, KEEPING]
    playbook(lab, "join_cluster.yml", "--limit", ",".join(["fleet-hub"] + members), tmp_path=tmp_path)
    removing = tmp_path / "removing.yml"
    removing.write_text("all:\n  hosts:\n    %s:\n      fleetops_leave_workloads: remove\n" % REMOVING)
    leave = ("leave_cluster.yml", "-i", str(removing), "--limit", ",".join(members))
    with workloads.placements(lab, unique("wl"), {"env": "lab"}, members=members) as placed:
        fleet, kubefleet = placed["rancher_fleet"], placed["kubefleet"]
        on = {(m, p.manager): workloads.wait_on_member(lab, m, p) for m in members for p in (fleet, kubefleet)}
        (release,), (work,) = on[KEEPING, "rancher_fleet"]["releases"], on[KEEPING, "kubefleet"]["applied_works"]
        kept = "kept: AppliedWork %s (Namespace %s, ConfigMap %s/%s)" % (work, kubefleet.name, kubefleet.name, kubefleet.name)
        kept_fleet = "kept: release %s/%s (bundle %s), namespace %s" % (fleet.namespace, release, fleet.name, fleet.namespace)
        removed = ("AppliedWork %s (Namespace" % work, "the releases of bundle(s) %s" % fleet.name)
        running = _running(lab, KEEPING)
        assert {"placement": fleet.name, "record": "release %s/%s" % (fleet.namespace, release)} in running["rancher_fleet"]
        (row,) = [row for row in running["kubefleet"] if row["placement"] == kubefleet.name]
        assert row["record"] == "AppliedWork %s" % work
        assert sorted(row["objects"]) == ["ConfigMap %s/%s" % (kubefleet.name, kubefleet.name), "Namespace %s" % kubefleet.name]

        predicted = playbook(lab, *leave, "--check", tmp_path=tmp_path)
        assert kept in _summary(predicted, KEEPING) and kept_fleet in _summary(predicted, KEEPING)
        assert all(text in _summary(predicted, REMOVING) for text in removed) and "kept:" not in _summary(predicted, REMOVING)
        assert all(hub.fleet_cluster(m) is not None and hub.member_cluster(m) is not None for m in members)
        assert all(workloads.on_member(lab, m, p) == on[m, p.manager] for m in members for p in (fleet, kubefleet))

        left = playbook(lab, *leave, tmp_path=tmp_path)
        assert kept in _summary(left, KEEPING) and kept_fleet in _summary(left, KEEPING)
        assert all(text in _summary(left, REMOVING) for text in removed) and "kept:" not in _summary(left, REMOVING)
        assert_left(hub, members)
        for one in (fleet, kubefleet):
            assert workloads.on_member(lab, KEEPING, one) == on[KEEPING, one.manager], "the kept %s workload changed" % one.manager
        # The member-agent chart carries the AppliedWork CRD (not in the lab's copy), so a real uninstall deletes every
        # AppliedWork: what the leave kept must not belong to it any more, and outlive it.
        owned = _owned_by_applied_work(lab, KEEPING, kubefleet)
        assert not owned, "kept objects still owned by their AppliedWork: %s" % owned
        custom = client.CustomObjectsApi(lab.api_client(KEEPING))
        custom.delete_cluster_custom_object("placement.kubernetes-fleet.io", "v1beta1", "appliedworks", work)
        time.sleep(5)  # the garbage collector acts within a second or two on an owner that is gone
        assert workloads.on_member(lab, KEEPING, kubefleet)["configmap"] == kubefleet.data, "a kept object went with its AppliedWork"
        assert workloads.on_member(lab, REMOVING, kubefleet) == {"configmap": None, "namespace": False, "applied_works": []}
        # Fleet's agent uninstalls the release and leaves the namespace it created for the bundle.
        assert workloads.on_member(lab, REMOVING, fleet) == {"configmap": None, "namespace": True, "releases": []}
