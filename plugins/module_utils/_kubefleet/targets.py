# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which KubeFleet ClusterResourcePlacements a hub places on a MemberCluster: ``PickFixed`` by name, ``PickAll`` by its
required cluster affinity's label selectors. What only the scheduler can decide (``PickN``, a property selector) is
not proven, and so refused. Pure; ``placement_guard`` holds what both managers share.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.placement_guard import labels_text, selector_matches


def selects(placement, member, labels):
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
    return False, "its cluster affinity selects no MemberCluster with labels %s" % labels_text(labels)


def unplaced(served, placements, member, labels):
    """``[{manager, name, why}]`` for each ClusterResourcePlacement name in ``served`` that the target hub's
    ``placements`` do not place on ``member`` carrying ``labels``."""
    found = dict((item["metadata"]["name"], item) for item in placements or [])
    refused = []
    for name in served:
        placement = found.get(name)
        if placement is None:
            why = "the hub has no ClusterResourcePlacement %s" % name
        else:
            placed, why = selects(placement, member, labels)
            if placed:
                continue
            why = "the hub's ClusterResourcePlacement %s: %s" % (name, why)
        refused.append({"manager": "kubefleet", "name": name, "why": why})
    return refused
