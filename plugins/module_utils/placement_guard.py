# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a hub a member's agent is about to be pointed at places every workload the agent manages on it now.

Fleet's agent uninstalls the release of a bundle its hub has no BundleDeployment for; KubeFleet's keeps the objects of
an AppliedWork whose Work its hub never had, unmanaged. So before an agent is re-pointed, each placement it serves must
have a counterpart on the target hub that selects the member:

- Rancher Fleet: a ``Bundle`` of the same namespace and name whose targets select the member's Cluster - Fleet
  v0.16.0's matcher (``internal/cmd/controller/target/matcher``): the first target (in order, customizations and the
  GitRepo's restrictions applied) whose criteria all hold - cluster name, cluster group, group selector, cluster
  selector - with ``doNotDeploy`` meaning not placed.
- KubeFleet: a ``ClusterResourcePlacement`` of the same name that selects the member - ``PickFixed`` by name,
  ``PickAll`` by its required cluster affinity's label selectors. What only the scheduler can decide (``PickN``, a
  property selector) is not proven, and so refused.

Pure decisions; hub_move_check.py reads the hubs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

BUNDLE_NAME_LABEL = "fleet.cattle.io/bundle-name"
BUNDLE_NAMESPACE_LABEL = "fleet.cattle.io/bundle-namespace"
# Fleet matches a target's clusterName against this label too (Rancher's display name).
DISPLAY_NAME_LABEL = "management.cattle.io/cluster-display-name"


def selector_matches(selector, labels):
    """Whether a metav1.LabelSelector selects ``labels``: None selects nothing, ``{}`` everything."""
    if selector is None:
        return False
    labels = labels or {}
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def fleet_cluster_groups(cluster_groups, labels):
    """``{group name: group labels}`` of the Fleet ClusterGroups (of the Cluster's namespace) that select ``labels``."""
    return dict((group["metadata"]["name"], group["metadata"].get("labels") or {}) for group in cluster_groups or []
                if selector_matches((group.get("spec") or {}).get("selector"), labels))


def uses_groups(bundles):
    """Whether a target (or restriction) of ``bundles`` selects by ClusterGroup: only then are the groups read."""
    return any(target.get("clusterGroup") or target.get("clusterGroupSelector") is not None
               for bundle in bundles for target in ((bundle.get("spec") or {}).get("targets") or []) +
               ((bundle.get("spec") or {}).get("targetRestrictions") or []))


def _criteria_hold(target, cluster_name, group, group_labels, labels):
    """Fleet's ClusterMatcher: every criterion the target sets holds; a target that sets none matches nothing."""
    checks = []
    if target.get("clusterName"):
        checks.append(target["clusterName"] in (cluster_name, labels.get(DISPLAY_NAME_LABEL)))
    if target.get("clusterGroup"):
        checks.append(target["clusterGroup"] == group)
    if target.get("clusterGroupSelector") is not None:
        checks.append(selector_matches(target["clusterGroupSelector"], group_labels))
    if target.get("clusterSelector") is not None:
        checks.append(selector_matches(target["clusterSelector"], labels))
    return bool(checks) and all(checks)


def _any_group_holds(target, cluster_name, groups, labels):
    if not groups:
        return _criteria_hold(target, cluster_name, "", {}, labels)
    return any(_criteria_hold(target, cluster_name, name, group_labels, labels) for name, group_labels in groups.items())


def fleet_bundle_target(bundle, cluster_name, labels, groups):
    """The target of ``bundle`` that places it on the Cluster (None: the bundle does not place it there)."""
    spec = bundle.get("spec") or {}
    targets, restrictions = spec.get("targets") or [], spec.get("targetRestrictions") or []
    customizations = len(targets) - len(restrictions) if restrictions else 0
    if restrictions and not any(_any_group_holds(item, cluster_name, groups, labels) for item in restrictions):
        return None
    placing = next((target for target in targets[customizations:] if _any_group_holds(target, cluster_name, groups, labels)), None)
    if placing is None or placing.get("doNotDeploy"):
        return None
    # fleet.yaml's targetCustomizations (the first targets of a GitRepo's bundle) can only hold a placed bundle back
    matching = [target for target in targets[:customizations] if _any_group_holds(target, cluster_name, groups, labels)]
    if spec.get("targetCustomizationMode") != "AllMatches":
        matching = matching[:1]
    return None if any(target.get("doNotDeploy") for target in matching) else placing


def fleet_unplaced(served, bundles, cluster_name, labels, groups, cluster_namespace=None):
    """``[{manager, name, why}]`` for each bundle the member's agent serves now (``served``: ``[{namespace, name}]``)
    that the target hub's ``bundles`` do not place on the Cluster ``cluster_name`` (of ``cluster_namespace``)
    carrying ``labels``."""
    found = dict(((item["metadata"].get("namespace"), item["metadata"]["name"]), item) for item in bundles or [])
    refused = []
    for item in served:
        bundle = found.get((item["namespace"], item["name"]))
        if cluster_namespace and item["namespace"] != cluster_namespace:
            why = ("the Bundle is not in the Cluster's namespace %s (a BundleNamespaceMapping), which the check does not "
                   "follow" % cluster_namespace)
        elif bundle is None:
            why = "the hub has no Bundle %s/%s" % (item["namespace"], item["name"])
        elif fleet_bundle_target(bundle, cluster_name, labels, groups) is None:
            why = "the hub's Bundle %s/%s has no target selecting the Cluster %s with labels %s" % (
                item["namespace"], item["name"], cluster_name, _labels_text(labels))
        else:
            continue
        refused.append({"manager": "rancher_fleet", "name": "%s/%s" % (item["namespace"], item["name"]), "why": why})
    return refused


def kubefleet_selects(placement, member, labels):
    """``(selects, why not)`` for a ClusterResourcePlacement and the MemberCluster ``member`` carrying ``labels``."""
    policy = (placement.get("spec") or {}).get("policy") or {}
    kind = policy.get("placementType") or "PickAll"
    if kind == "PickFixed":
        return (True, None) if member in (policy.get("clusterNames") or []) else (False, "its clusterNames leave %s out" % member)
    if kind != "PickAll":
        return False, "its policy %s leaves the choice to the hub's scheduler, so it cannot be proven beforehand" % kind
    required = (((policy.get("affinity") or {}).get("clusterAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("clusterSelectorTerms") or []
    if not terms:
        return True, None
    if any(term.get("propertySelector") for term in terms):
        return False, "its cluster affinity selects by cluster properties, which only the hub's scheduler can judge"
    if any(selector_matches(term.get("labelSelector") or {}, labels) for term in terms):
        return True, None
    return False, "its cluster affinity selects no MemberCluster with labels %s" % _labels_text(labels)


def kubefleet_unplaced(served, placements, member, labels):
    """``[{manager, name, why}]`` for each ClusterResourcePlacement name in ``served`` that the target hub's
    ``placements`` do not place on ``member`` carrying ``labels``."""
    found = dict((item["metadata"]["name"], item) for item in placements or [])
    refused = []
    for name in served:
        placement = found.get(name)
        if placement is None:
            why = "the hub has no ClusterResourcePlacement %s" % name
        else:
            selects, why = kubefleet_selects(placement, member, labels)
            if selects:
                continue
            why = "the hub's ClusterResourcePlacement %s: %s" % (name, why)
        refused.append({"manager": "kubefleet", "name": name, "why": why})
    return refused


FIX = ("Bring those placements to the hub (the same names, selecting the member) and run again, or set "
       "fleetops_allow_workload_removal: true (the module option allow_workload_removal) to go on and have them removed")


def listing(unplaced):
    """``manager name - why; ...`` of unplaced workloads."""
    return "; ".join("%s %s - %s" % (item["manager"], item["name"], item["why"]) for item in unplaced)


def removal_allowed(removed, hub="the hub"):
    """What a summary line adds for workloads ``removed`` (unplaced items) with fleetops_allow_workload_removal."""
    return "; removal allowed (fleetops_allow_workload_removal), %s does not place: %s" % (
        hub, ", ".join("%s %s" % (item["manager"], item["name"]) for item in removed))


def refusal(member, hub, unplaced):
    """The message refusing to re-point ``member``'s agents at ``hub`` (a host name) over ``unplaced``, with the fixes."""
    listed = listing(unplaced)
    return ("member %s: the agents would be pointed at %s, which does not place what they manage on the member now "
            "(Fleet's agent would remove such a workload, KubeFleet's would leave it unmanaged): %s. Nothing was "
            "changed. Bring those placements to %s (the same names, selecting the member), or run with -e "
            "fleetops_allow_workload_removal=true to move anyway and have them removed from the member"
            % (member, hub, listed, hub))


def _labels_text(labels):
    return ", ".join("%s=%s" % item for item in sorted((labels or {}).items())) or "(none)"
