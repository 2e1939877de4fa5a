# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a hub a member's agent is about to be pointed at places every workload the agent manages on it now.

Fleet's agent uninstalls the release of a bundle its hub has no BundleDeployment for; KubeFleet's keeps the objects of
an AppliedWork whose Work its hub never had, unmanaged. So before an agent is re-pointed, each placement it serves must
have a counterpart on the target hub that selects the member:

- Rancher Fleet: a ``Bundle`` of the same namespace and name whose targets select the member's Cluster
  (``_rancher_fleet/targets.py``).
- KubeFleet: a ``ClusterResourcePlacement`` of the same name that selects the member (``_kubefleet/targets.py``).

What both share is here: label selectors, and how an unplaced workload is listed and refused. Pure decisions;
hub_move_check.py reads the hubs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


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


def labels_text(labels):
    return ", ".join("%s=%s" % item for item in sorted((labels or {}).items())) or "(none)"
