"""Many clusters in one call (the ``clusters`` option of fleet_cluster and kubefleet_member_cluster) and the
predefine_clusters playbook that drives it from an inventory group, against the lab's hub.

A batch must behave like the same tasks one by one (check mode, diff, a re-run changes nothing, relabelling changes
only what drifted), stop at a bad item with a message naming it, and converge when re-run after the fix.
"""

import pytest
import yaml
from kubernetes import client

from modrun import run_module
from kube_helpers import ignore_404, unique
from rancher_fleet_lab import hub, hub_args, hub_ns, ok  # noqa: F401 pylint: disable=unused-import
from test_playbooks import playbook

pytestmark = pytest.mark.lab

KUBEFLEET = ("cluster.kubernetes-fleet.io", "v1beta1")


def clusters_of(hub, namespace):  # pylint: disable=redefined-outer-name
    return dict((c["metadata"]["name"], c) for c in hub.items("clusters", namespace))


def test_fleet_cluster_batch_creates_relabels_and_stops_at_a_bad_item(lab, hub, hub_ns):  # pylint: disable=redefined-outer-name
    items = [{"name": "edge-%d" % i, "labels": {"site": "s%d" % i}} for i in range(5)]
    args = dict(hub_args(lab), namespace=hub_ns, clusters=items)

    predicted = ok(run_module("fleet_cluster", args, check=True, diff=True))
    assert predicted.changed and not clusters_of(hub, hub_ns)
    assert [d["before_header"] for d in predicted["diff"]] == [i["name"] for i in items]

    made = ok(run_module("fleet_cluster", args))
    assert made.changed and [r["name"] for r in made["clusters"]] == [i["name"] for i in items]
    live = clusters_of(hub, hub_ns)
    assert sorted(live) == sorted(i["name"] for i in items)
    assert all(live[i["name"]]["metadata"]["labels"]["site"] == i["labels"]["site"] for i in items)
    assert len(set(c["spec"]["clientID"] for c in live.values())) == 5
    assert [r["client_id"] for r in made["clusters"]] == [live[i["name"]]["spec"]["clientID"] for i in items]

    assert not ok(run_module("fleet_cluster", args)).changed

    relabel = [dict(items[0], labels={"site": "moved"})] + items[1:]
    moved = ok(run_module("fleet_cluster", dict(args, clusters=relabel)))
    assert [r["changed"] for r in moved["clusters"]] == [True, False, False, False, False]
    assert moved["clusters"][0]["label_changes"]["changed"] == {"site": "moved"}

    taken = live["edge-1"]["spec"]["clientID"]
    bad = [{"name": "edge-new"}, {"name": "edge-clash", "client_id": taken}, {"name": "edge-after"}]
    failed = run_module("fleet_cluster", dict(args, clusters=bad))
    assert failed.failed and failed.changed
    assert "clusters[1] (edge-clash)" in failed["msg"] and "client_id" in failed["msg"] and "edge-new" in failed["msg"]
    assert "edge-new" in clusters_of(hub, hub_ns) and "edge-clash" not in clusters_of(hub, hub_ns)

    fixed = ok(run_module("fleet_cluster", dict(args, clusters=[bad[0], {"name": "edge-clash"}, bad[2]])))
    assert [r["name"] for r in fixed["clusters"] if r["changed"]] in (["edge-clash"], ["edge-clash", "edge-after"])
    assert not ok(run_module("fleet_cluster", dict(args, clusters=[bad[0], {"name": "edge-clash"}, bad[2]]))).changed

    one_id = run_module("fleet_cluster", dict(args, clusters=[{"name": "p", "client_id": "x1"}, {"name": "q", "client_id": "x1"}]))
    assert one_id.failed and "clusters[1].client_id" in one_id["msg"] and not one_id.changed

    twice = run_module("fleet_cluster", dict(args, clusters=[{"name": "a"}, {"name": "a"}]))
    assert twice.failed and "clusters[1].name" in twice["msg"] and not twice.changed

    # Fleet's finalizer holds a deleted Cluster for a moment: without wait the module only asks for the deletion.
    removed = ok(run_module("fleet_cluster", dict(args, clusters=[{"name": "edge-new", "state": "absent"}], wait=True)))
    assert removed.changed and "edge-new" not in clusters_of(hub, hub_ns)


def member_clusters(lab, prefix):
    custom = client.CustomObjectsApi(lab.api_client("hub"))
    items = custom.list_cluster_custom_object(KUBEFLEET[0], KUBEFLEET[1], "memberclusters")["items"]
    return dict((m["metadata"]["name"], m) for m in items if m["metadata"]["name"].startswith(prefix))


def delete_member_clusters(lab, names):
    custom = client.CustomObjectsApi(lab.api_client("hub"))
    core = client.CoreV1Api(lab.api_client("hub"))
    for name in names:
        ignore_404(lambda: custom.patch_cluster_custom_object(KUBEFLEET[0], KUBEFLEET[1], "memberclusters", name,
                                                              {"metadata": {"finalizers": None}}))
        ignore_404(lambda: custom.delete_cluster_custom_object(KUBEFLEET[0], KUBEFLEET[1], "memberclusters", name))
        ignore_404(lambda: core.delete_namespace("fleet-member-" + name))


@pytest.fixture
def prefix(lab):
    name = unique("kfb")
    yield name
    delete_member_clusters(lab, list(member_clusters(lab, name)))


def test_member_cluster_batch_predefines_and_relabels(lab, prefix):  # pylint: disable=redefined-outer-name
    items = [{"name": "%s-%d" % (prefix, i), "labels": {"ring": str(i)}} for i in range(3)]
    args = dict(hub_args(lab), clusters=items, validate_identity=False, wait=False)

    assert ok(run_module("kubefleet_member_cluster", args, check=True)).changed
    assert not member_clusters(lab, prefix)

    made = ok(run_module("kubefleet_member_cluster", args))
    assert made.changed and all(r["changed"] for r in made["clusters"])
    live = member_clusters(lab, prefix)
    assert sorted(live) == [i["name"] for i in items]
    assert [live[i["name"]]["metadata"]["labels"]["ring"] for i in items] == ["0", "1", "2"]

    assert not ok(run_module("kubefleet_member_cluster", args)).changed
    moved = ok(run_module("kubefleet_member_cluster", dict(args, clusters=items[:2] + [dict(items[2], labels={"ring": "x"})])))
    assert [r["changed"] for r in moved["clusters"]] == [False, False, True]

    missing = run_module("kubefleet_member_cluster", dict(args, clusters=[{"name": prefix + "-9"}], validate_identity=True))
    assert missing.failed and "clusters[0] (%s-9)" % prefix in missing["msg"] and "kubefleet_member_identity" in missing["msg"]


def test_predefine_clusters_playbook_from_an_inventory_group(lab, hub, tmp_path):  # pylint: disable=redefined-outer-name
    group = unique("pre")
    names = ["%s-%d" % (group, i) for i in range(3)]
    inventory = tmp_path / "predefined.yml"

    def write(labels):
        hosts = dict((name, {"fleetops_labels": labels}) for name in names)
        inventory.write_text(yaml.safe_dump({"predefined": {"hosts": hosts}}))

    write("tier=edge")
    try:
        first = playbook(lab, "predefine_clusters.yml", "-i", str(inventory), tmp_path=tmp_path)
        assert first.changed("fleet-hub") >= 2
        fleet = clusters_of(hub, "fleet-default")
        assert all(fleet[name]["metadata"]["labels"]["tier"] == "edge" for name in names)
        kf = member_clusters(lab, group)
        assert sorted(kf) == names and all(m["metadata"]["labels"]["tier"] == "edge" for m in kf.values())

        assert playbook(lab, "predefine_clusters.yml", "-i", str(inventory), tmp_path=tmp_path).changed("fleet-hub") == 0

        write({"tier": "core"})
        assert playbook(lab, "predefine_clusters.yml", "-i", str(inventory), tmp_path=tmp_path).changed("fleet-hub") == 2
        assert all(m["metadata"]["labels"]["tier"] == "core" for m in member_clusters(lab, group).values())
    finally:
        for name in names:
            ignore_404(lambda: hub.custom.delete_namespaced_custom_object(
                "fleet.cattle.io", "v1alpha1", "fleet-default", "clusters", name))
        delete_member_clusters(lab, names)


def test_fleet_cluster_batch_works_with_a_credential_that_may_not_list_namespaces(lab, hub, hub_ns):  # pylint: disable=redefined-outer-name
    """Fleet's cluster namespaces are only read to spot a blocked registration: a credential that may manage Clusters
    but not list namespaces gets what the one-cluster path gives it (no namespace check), not a failed batch."""
    user = unique("fo-clusters-only")
    rbac = client.RbacAuthorizationV1Api(lab.api_client("hub"))
    rbac.create_namespaced_role(hub_ns, client.V1Role(metadata=client.V1ObjectMeta(name=user), rules=[
        client.V1PolicyRule(api_groups=["fleet.cattle.io"], resources=["clusters"], verbs=["*"])]))
    rbac.create_namespaced_role_binding(hub_ns, client.V1RoleBinding(
        metadata=client.V1ObjectMeta(name=user), subjects=[client.RbacV1Subject(kind="User", name=user)],
        role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name=user)))
    args = dict(hub_args(lab), namespace=hub_ns, impersonate_user=user,
                clusters=[{"name": "narrow-%d" % i, "labels": {"site": "s%d" % i}} for i in range(3)])
    made = ok(run_module("fleet_cluster", args))
    assert made.changed and sorted(clusters_of(hub, hub_ns)) == ["narrow-0", "narrow-1", "narrow-2"]
    assert not ok(run_module("fleet_cluster", args)).changed
