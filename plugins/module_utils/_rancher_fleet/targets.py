# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Rancher Fleet Bundles a hub places on a Cluster: Fleet v0.16.0's matcher
(``internal/cmd/controller/target/matcher``) - the first target (in order, customizations and the GitRepo's
restrictions applied) whose criteria all hold - cluster name, cluster group, group selector, cluster selector - with
``doNotDeploy`` meaning not placed. Pure; ``placement_guard`` holds what both managers share.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.placement_guard import labels_text, selector_matches

BUNDLE_NAME_LABEL = "fleet.cattle.io/bundle-name"
BUNDLE_NAMESPACE_LABEL = "fleet.cattle.io/bundle-namespace"
# Fleet matches a target's clusterName against this label too (Rancher's display name).
DISPLAY_NAME_LABEL = "management.cattle.io/cluster-display-name"


def cluster_groups(cluster_groups, labels):
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


def bundle_target(bundle, cluster_name, labels, groups):
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


def unplaced(served, bundles, cluster_name, labels, groups, cluster_namespace=None):
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
        elif bundle_target(bundle, cluster_name, labels, groups) is None:
            why = "the hub's Bundle %s/%s has no target selecting the Cluster %s with labels %s" % (
                item["namespace"], item["name"], cluster_name, labels_text(labels))
        else:
            continue
        refused.append({"manager": "rancher_fleet", "name": "%s/%s" % (item["namespace"], item["name"]), "why": why})
    return refused
