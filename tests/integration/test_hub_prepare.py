"""hub_prepare against the lab: the real hub serves both APIs, a member serves neither."""

import uuid

import pytest
from kubernetes import client

from modrun import run_module
from kube_helpers import ignore_404, read_or_none
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import EXPIRES_ANNOTATION as EXPIRES

pytestmark = pytest.mark.lab


def read_namespace(core, name):
    return read_or_none(lambda: core.read_namespace(name))


@pytest.fixture
def namespace(lab):
    core = client.CoreV1Api(lab.api_client("hub"))
    name = "prep-%s" % uuid.uuid4().hex[:6]
    yield name
    ignore_404(lambda: core.delete_namespace(name))


def test_creates_missing_namespaces_once_and_respects_check_mode(lab_controllers, namespace):
    lab = lab_controllers
    core = client.CoreV1Api(lab.api_client("hub"))
    # the collection's own namespace (hub_namespace, default fleetops-system) is created like the others
    args = dict(kubeconfig=str(lab.kubeconfig), context="hub", hub_namespace=namespace, namespaces=["fleet-system"])

    predicted = run_module("hub_prepare", args, check=True, diff=True)
    assert not predicted.failed, predicted.get("msg")
    assert predicted.changed and predicted["created_namespaces"] == [namespace]
    assert predicted["diff"] == {"before": {"namespaces": ["fleet-system"]}, "after": {"namespaces": ["fleet-system", namespace]}}
    assert read_namespace(core, namespace) is None

    result = run_module("hub_prepare", args)
    assert not result.failed, result.get("msg")
    assert result.changed and result["created_namespaces"] == [namespace]
    assert result["apis"]["rancher_fleet"] == {"group_version": "fleet.cattle.io/v1alpha1", "served": True, "missing": []}
    assert result["apis"]["kubefleet"]["served"] is True
    assert result["controllers"]["rancher_fleet"]["available"] is True
    assert result["controllers"]["kubefleet"]["available"] is True
    created = read_namespace(core, namespace)
    assert created.metadata.labels["app.kubernetes.io/managed-by"] == "fleetops.registration"

    again = run_module("hub_prepare", args)
    assert not again.failed and not again.changed and again["created_namespaces"] == []


def test_a_cluster_without_the_apis_fails_naming_each_missing_one_and_creates_nothing(lab, namespace):
    member = lab.members[0]
    core = client.CoreV1Api(lab.api_client(member))
    result = run_module("hub_prepare", dict(kubeconfig=str(lab.kubeconfig), context=member, namespaces=[namespace]))
    assert result.failed
    for api in ("clusters.fleet.cattle.io/v1alpha1", "clusterregistrationtokens.fleet.cattle.io/v1alpha1",
                "memberclusters.cluster.kubernetes-fleet.io/v1beta1"):
        assert api in result["msg"], result["msg"]
    assert "hub-agent chart" in result["msg"]
    assert "leave kubefleet and rancher_fleet out of backends" in result["msg"] and "fleetops_backends" in result["msg"]
    assert result["apis"]["kubefleet"]["served"] is False
    assert read_namespace(core, namespace) is None

    only_fleet = run_module("hub_prepare", dict(kubeconfig=str(lab.kubeconfig), context=member, backends=["rancher_fleet"]))
    assert only_fleet.failed and "memberclusters" not in only_fleet["msg"] and "clusters.fleet.cattle.io" in only_fleet["msg"]


def test_tidy_removes_only_the_collections_expired_tokens(lab_controllers, namespace):
    lab = lab_controllers
    custom = client.CustomObjectsApi(lab.api_client("hub"))
    args = dict(kubeconfig=str(lab.kubeconfig), context="hub", backends=["rancher_fleet"],
                backend_namespaces={"rancher_fleet": namespace}, tidy=True)
    assert not run_module("hub_prepare", args).failed  # creates the namespace; nothing to tidy yet
    ours = {"app.kubernetes.io/managed-by": "fleetops.registration"}
    past, future = "2020-01-01T00:00:00Z", "2099-01-01T00:00:00Z"
    for name, labels, expires in (("ours-expired", ours, past), ("ours-current", ours, future), ("users-own", {}, past)):
        custom.create_namespaced_custom_object("fleet.cattle.io", "v1alpha1", namespace, "clusterregistrationtokens", {
            "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "ClusterRegistrationToken",
            "metadata": {"name": name, "labels": labels, "annotations": {EXPIRES: expires}}, "spec": {}})

    def names():
        items = custom.list_namespaced_custom_object("fleet.cattle.io", "v1alpha1", namespace, "clusterregistrationtokens")["items"]
        return sorted(item["metadata"]["name"] for item in items)

    predicted = run_module("hub_prepare", args, check=True)
    assert predicted.changed and [t["name"] for t in predicted["tidied"]["rancher_fleet"]] == ["ours-expired"]
    assert names() == ["ours-current", "ours-expired", "users-own"]
    tidied = run_module("hub_prepare", args)
    assert tidied.changed and "expired at 2020-01-01" in tidied["tidied"]["rancher_fleet"][0]["reason"]
    assert names() == ["ours-current", "users-own"]
    assert not run_module("hub_prepare", args).changed
