"""The hub preflight's pure rules: which APIs are missing and how the failure names them."""

from ansible_collections.fleetops.registration.plugins.module_utils import hub, registry


def test_missing_resources_when_group_version_absent_or_partial():
    assert hub.missing_resources(None, ["clusters", "clusterregistrations"]) == ["clusters", "clusterregistrations"]
    partial = {"resources": [{"name": "clusters"}, {"name": "clusters/status"}, {"name": "bundles"}]}
    assert hub.missing_resources(partial, ["clusters", "clusterregistrationtokens"]) == ["clusterregistrationtokens"]
    full = {"resources": [{"name": n} for n in registry.manager("kubefleet").hub_resources]}
    assert hub.missing_resources(full, registry.manager("kubefleet").hub_resources) == []


def test_describe_missing_names_each_api_with_its_group_and_backend():
    report = {
        "rancher_fleet": {"missing": ["clusterregistrationtokens"]},
        "kubefleet": {"missing": ["memberclusters", "internalmemberclusters"]},
    }
    text = hub.describe_missing(report)
    assert text == ("KubeFleet (kubefleet): memberclusters.cluster.kubernetes-fleet.io/v1beta1, "
                    "internalmemberclusters.cluster.kubernetes-fleet.io/v1beta1; "
                    "Rancher Fleet (rancher_fleet): clusterregistrationtokens.fleet.cattle.io/v1alpha1")
    assert "hub-agent chart" in hub.install_hints(report) and "fleet-crd" in hub.install_hints(report)
    assert hub.describe_missing({"kubefleet": {"missing": []}}) == ""
    assert hub.install_hints({"kubefleet": {"missing": []}}) == ""
    one_missing = {"kubefleet": {"missing": ["memberclusters"]}, "rancher_fleet": {"missing": []}}
    hint = hub.missing_api_hint(one_missing)
    assert "leave kubefleet out of backends" in hint and "fleetops_backends" in hint and "hub-agent chart" in hint


def test_deployment_available_counts_replicas():
    assert not hub.deployment_available(None)
    assert not hub.deployment_available({"spec": {"replicas": 2}, "status": {"availableReplicas": 1}})
    assert hub.deployment_available({"spec": {"replicas": 2}, "status": {"availableReplicas": 2}})
    assert hub.deployment_available({"spec": {}, "status": {"availableReplicas": 1}})
    assert not hub.deployment_available({"spec": {}, "status": {}})
