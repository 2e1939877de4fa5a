"""The workload guard's rules: which placements a target hub would keep on a member, by each fleet manager's matching."""

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import hub_move, placement_guard as guard
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import targets as kubefleet_targets
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import targets as fleet_targets
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.workloads import placement_rows as fleet_placements
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import workload_guard as fleet_guard

LABELS = {"env": "prod", "region": "eu"}


def bundle(name, targets, namespace="fleet-default", **spec):
    return {"metadata": {"name": name, "namespace": namespace}, "spec": dict(spec, targets=targets)}


def crp(name, policy=None):
    return {"metadata": {"name": name}, "spec": {"policy": policy} if policy is not None else {}}


def pick_all(*selectors):
    terms = [{"labelSelector": selector} for selector in selectors]
    return {"placementType": "PickAll",
            "affinity": {"clusterAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"clusterSelectorTerms": terms}}}}


@pytest.mark.parametrize("selector, selects", [
    (None, False),
    ({}, True),
    ({"matchLabels": {"env": "prod"}}, True),
    ({"matchLabels": {"env": "dev"}}, False),
    ({"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu", "us"]}]}, True),
    ({"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["eu"]}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}, True),
    ({"matchExpressions": [{"key": "env", "operator": "Exists"}]}, True),
    ({"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}, False),
    ({"matchExpressions": [{"key": "env", "operator": "Gt", "values": ["1"]}]}, False),
    ({"matchLabels": {"env": "prod"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]}, False),
])
def test_a_label_selector_selects_as_kubernetes_does(selector, selects):
    assert guard.selector_matches(selector, LABELS) is selects


@pytest.mark.parametrize("target, placed", [
    ({"clusterSelector": {"matchLabels": {"env": "prod"}}}, True),
    ({"clusterSelector": {"matchLabels": {"env": "dev"}}}, False),
    ({"clusterName": "member1"}, True),
    ({"clusterName": "member2"}, False),
    ({"clusterName": "member1", "clusterSelector": {"matchLabels": {"env": "dev"}}}, False),  # every criterion holds
    ({"name": "no criteria"}, False),                                                         # a target selecting nothing
    ({"clusterSelector": {}}, True),
    ({"clusterSelector": {"matchLabels": {"env": "prod"}}, "doNotDeploy": True}, False),
    ({"clusterGroup": "prod-eu"}, True),
    ({"clusterGroup": "other"}, False),
    ({"clusterGroupSelector": {"matchLabels": {"tier": "gold"}}}, True),
    ({"clusterGroupSelector": {"matchLabels": {"tier": "silver"}}}, False),
])
def test_a_fleet_target_places_a_bundle_by_all_of_its_criteria(target, placed):
    groups = fleet_targets.cluster_groups([
        {"metadata": {"name": "prod-eu", "labels": {"tier": "gold"}}, "spec": {"selector": {"matchLabels": {"env": "prod"}}}},
        {"metadata": {"name": "dev", "labels": {"tier": "silver"}}, "spec": {"selector": {"matchLabels": {"env": "dev"}}}},
        {"metadata": {"name": "no-selector"}, "spec": {}},
    ], LABELS)
    assert groups == {"prod-eu": {"tier": "gold"}}
    assert (fleet_targets.bundle_target(bundle("web", [target]), "member1", LABELS, groups) is not None) is placed


def test_the_first_matching_fleet_target_decides_and_restrictions_and_customizations_are_applied():
    first_holds_back = bundle("web", [{"clusterName": "member1", "doNotDeploy": True}, {"clusterSelector": {}}])
    assert fleet_targets.bundle_target(first_holds_back, "member1", LABELS, {}) is None
    # a GitRepo's bundle: the first len(targets) - len(restrictions) targets are fleet.yaml customizations
    restricted = bundle("web", [{"clusterSelector": {}}], targetRestrictions=[{"clusterSelector": {"matchLabels": {"env": "dev"}}}])
    assert fleet_targets.bundle_target(restricted, "member1", LABELS, {}) is None
    customized = bundle("web", [{"clusterName": "member1", "doNotDeploy": True}, {"clusterSelector": {}}],
                        targetRestrictions=[{"clusterSelector": {}}])
    assert fleet_targets.bundle_target(customized, "member1", LABELS, {}) is None
    only_adjusts = bundle("web", [{"clusterName": "member1"}, {"clusterSelector": {}}], targetRestrictions=[{"clusterSelector": {}}])
    assert fleet_targets.bundle_target(only_adjusts, "member1", LABELS, {}) == {"clusterSelector": {}}
    first_match = bundle("web", [{"clusterName": "member1"}, {"clusterSelector": {}, "doNotDeploy": True}, {"clusterSelector": {}}],
                         targetRestrictions=[{"clusterSelector": {}}])
    assert fleet_targets.bundle_target(first_match, "member1", LABELS, {}) is not None
    first_match["spec"]["targetCustomizationMode"] = "AllMatches"
    assert fleet_targets.bundle_target(first_match, "member1", LABELS, {}) is None


def test_a_fleet_bundle_missing_or_not_selecting_the_member_is_named_with_why():
    served = [{"namespace": "fleet-default", "name": "web"}, {"namespace": "fleet-default", "name": "db"},
              {"namespace": "team-a", "name": "web"}]
    bundles = [bundle("web", [{"clusterSelector": {"matchLabels": {"env": "prod"}}}]),
               bundle("db", [{"clusterSelector": {"matchLabels": {"env": "dev"}}}])]
    unplaced = fleet_targets.unplaced(served, bundles, "member1", LABELS, {})
    assert [(item["manager"], item["name"]) for item in unplaced] == [("rancher_fleet", "fleet-default/db"),
                                                                      ("rancher_fleet", "team-a/web")]
    assert "no target selecting the Cluster member1 with labels env=prod, region=eu" in unplaced[0]["why"]
    assert unplaced[1]["why"] == "the hub has no Bundle team-a/web"
    mapped = fleet_targets.unplaced(served, bundles + [bundle("web", [{"clusterSelector": {}}], namespace="team-a")],
                                    "member1", LABELS, {}, cluster_namespace="fleet-default")
    assert [item["name"] for item in mapped] == ["fleet-default/db", "team-a/web"]
    assert "BundleNamespaceMapping" in mapped[1]["why"]


def test_what_the_fleet_agent_serves_is_read_from_its_bundle_deployments_labels():
    deployments = [{"metadata": {"name": "web", "namespace": "cluster-ns", "labels": {
        fleet_targets.BUNDLE_NAME_LABEL: "web", fleet_targets.BUNDLE_NAMESPACE_LABEL: "team-a"}}, "spec": {}, "status": {}}]
    assert fleet_placements(deployments)[0]["bundle"] == {"namespace": "team-a", "name": "web"}


@pytest.mark.parametrize("policy, selects, why", [
    (None, True, None),                                   # no policy: PickAll of every member
    ({"placementType": "PickAll"}, True, None),
    (pick_all({"matchLabels": {"env": "prod"}}), True, None),
    (pick_all({"matchLabels": {"env": "dev"}}, {"matchLabels": {"region": "eu"}}), True, None),  # terms are ORed
    (pick_all({"matchLabels": {"env": "dev"}}), False, "selects no MemberCluster with labels env=prod, region=eu"),
    ({"placementType": "PickFixed", "clusterNames": ["member1"]}, True, None),
    ({"placementType": "PickFixed", "clusterNames": ["member2"]}, False, "clusterNames leave member1 out"),
    ({"placementType": "PickN", "numberOfClusters": 3}, False, "cannot be proven beforehand"),
])
def test_a_kubefleet_placement_selects_the_member_by_its_policy(policy, selects, why):
    found, reason = kubefleet_targets.selects(crp("web", policy), "member1", LABELS)
    assert found is selects
    assert (why is None and reason is None) or why in reason


def test_a_kubefleet_property_selector_is_not_proven():
    policy = pick_all({})
    policy["affinity"]["clusterAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["clusterSelectorTerms"] = [
        {"propertySelector": {"matchExpressions": [{"name": "cpu", "operator": "Gt", "values": ["4"]}]}}]
    assert kubefleet_targets.selects(crp("web", policy), "member1", LABELS)[0] is False


def test_kubefleet_placements_missing_or_not_selecting_are_named():
    unplaced = kubefleet_targets.unplaced(["web", "db", "cache"], [crp("web"), crp("db", pick_all({"matchLabels": {"env": "dev"}}))],
                                          "member1", LABELS)
    assert [(item["name"], item["why"].split(":")[0]) for item in unplaced] == [
        ("db", "the hub's ClusterResourcePlacement db"), ("cache", "the hub has no ClusterResourcePlacement cache")]


def test_the_refusal_names_the_member_each_workload_and_both_fixes():
    text = guard.refusal("member1", "hub-west", [{"manager": "kubefleet", "name": "web", "why": "the hub has no ClusterResourcePlacement web"}])
    assert text.startswith("member member1: the agents would be pointed at hub-west")
    assert "kubefleet web - the hub has no ClusterResourcePlacement web" in text
    assert "Nothing was changed" in text and "fleetops_allow_workload_removal=true" in text


def test_a_move_summary_names_the_workloads_whose_removal_was_allowed():
    before = {"phase": "move", "join": ["kubefleet"]}
    removed = [{"manager": "kubefleet", "name": "web", "why": "x"}]
    outcome = hub_move.member_outcome(before, removed=removed)
    assert outcome["outcome"] == "moved" and outcome["removal_allowed"] == removed
    assert outcome["line"].endswith("removal allowed (fleetops_allow_workload_removal), the new hub does not place: kubefleet web")
    assert "removal allowed" not in hub_move.member_outcome(before)["line"]


@pytest.mark.parametrize("action, current, rotating, reinstall, anew", [
    (None, {}, False, False, False),                                                 # nothing changes
    (None, {}, True, False, True),                                                   # a credential rotation
    ("upgrade", {}, False, True, True),                                              # re-installed for another hub
    ("install", None, False, False, True),                                           # a first install
    ("upgrade", {"apiServerURL": "https://hub:6443", "apiServerCA": "CA"}, False, False, False),  # same hub, other values
    ("upgrade", {"apiServerURL": "https://old:6443", "apiServerCA": "CA"}, False, False, True),   # another hub URL
    ("upgrade", {"apiServerURL": "https://hub:6443", "apiServerCA": "OLD"}, False, False, True),  # another hub CA
])
def test_a_fleet_agent_registers_anew_on_install_rotation_reinstall_or_another_hub(action, current, rotating, reinstall, anew):
    values = {"apiServerURL": "https://hub:6443", "apiServerCA": "CA\n"}
    assert fleet_guard.registers_anew(action, current, values, rotating, reinstall) is anew


class FakeHub:
    """The two reads hub_unplaced makes: GET of a Bundle, LIST of ClusterGroups (counted)."""

    def __init__(self, bundles, groups=()):
        self.bundles, self.groups, self.calls = dict(((b["metadata"]["namespace"], b["metadata"]["name"]), b) for b in bundles), list(groups), []

    def get(self, resource, name, namespace=None):
        self.calls.append(("get", resource.plural, namespace, name))
        return self.bundles.get((namespace, name))

    def list(self, resource, namespace=None, **_):
        self.calls.append(("list", resource.plural, namespace))
        return self.groups


def test_the_fleet_hub_side_reads_only_the_served_bundles_of_the_cluster_s_namespace_and_groups_only_when_named():
    hub = FakeHub([bundle("web", [{"clusterSelector": {"matchLabels": {"env": "prod"}}}])])
    served = [{"namespace": "fleet-default", "name": "web"}, {"namespace": "team-a", "name": "db"}]
    unplaced = fleet_guard.hub_unplaced(hub, "fleet-default", served, "member1", LABELS)
    assert [item["name"] for item in unplaced] == ["team-a/db"]
    assert hub.calls == [("get", "bundles", "fleet-default", "web")]
    grouped = FakeHub([bundle("web", [{"clusterGroup": "prod-eu"}])],
                      [{"metadata": {"name": "prod-eu"}, "spec": {"selector": {"matchLabels": {"env": "prod"}}}}])
    assert fleet_guard.hub_unplaced(grouped, "fleet-default", served[:1], "member1", LABELS) == []
    assert grouped.calls[-1] == ("list", "clustergroups", "fleet-default")


class FakeDeployments:
    """The one read undeployed makes: LIST of a cluster namespace's BundleDeployments (counted)."""

    def __init__(self, deployments):
        self.deployments, self.calls = deployments, []

    def list(self, resource, namespace=None, **_):
        self.calls.append(("list", resource.plural, namespace))
        return [item for item in self.deployments if item["metadata"]["namespace"] == namespace]


def deployment(name, namespace="cluster-fleet-default-member1-1a2b3c", **meta):
    return {"metadata": dict({"name": name, "namespace": namespace}, **meta)}


def test_a_bundle_is_deployed_to_a_cluster_once_its_namespace_holds_a_live_bundle_deployment_of_it():
    cluster = {"metadata": {"name": "member1", "namespace": "fleet-default"},
               "status": {"namespace": "cluster-fleet-default-member1-1a2b3c"}}
    hub = FakeDeployments([deployment("web"), deployment("db", deletionTimestamp="2026-11-28T09:00:00Z"),
                           deployment("cache", namespace="cluster-fleet-default-member2-4d5e6f")])
    assert fleet_guard.undeployed(hub, cluster, ["web", "db", "cache"]) == ["cache", "db"]
    assert hub.calls == [("list", "bundledeployments", "cluster-fleet-default-member1-1a2b3c")]
    assert fleet_guard.undeployed(hub, cluster, ["web"]) == []


def test_a_cluster_without_its_namespace_yet_has_none_of_the_bundles_deployed_and_is_not_read():
    hub = FakeDeployments([deployment("web")])
    assert fleet_guard.undeployed(hub, {"metadata": {"name": "member1"}, "status": {}}, ["web", "db"]) == ["db", "web"]
    assert fleet_guard.undeployed(hub, None, ["web"]) == ["web"]
    assert hub.calls == []


def test_a_member_serving_no_bundle_needs_no_read_of_the_hub():
    hub = FakeHub([])
    assert fleet_guard.unplaced(hub, "fleet-default", [], None, LABELS) == []
    assert hub.calls == []
