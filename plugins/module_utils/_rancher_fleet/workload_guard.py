# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Before Fleet's agent registers anew, the bundles it deployed on the member must be placed by the hub it registers with.

An agent that registers (a fresh install, a re-install for another hub or client ID, a credential rotation - also the
one a hub that lost the member forces -, an upgrade to another hub URL or CA) starts with its hub's BundleDeployments
for its Cluster; at start it uninstalls each release of its agent namespace whose BundleDeployment its hub lacks. So
the hub must carry, for every bundle release on the member (``workloads.bundle_releases``: the chart annotation
``fleet.cattle.io/bundle-id``, the BundleDeployment's name, which is its Bundle's), a Bundle of that name in the
Cluster's namespace whose targets select the Cluster (targets.py, Fleet's matcher). A hub rebuilt without its
GitRepos, or one that lost the member, would otherwise take every such workload off the member in one run. And the
hub's controller must have made the BundleDeployments of those bundles for the member's (predefined) Cluster before the
agent connects (``undeployed``): the agent's first clean-up does not wait for the ones still to come.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.helm import ReleasePlan
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import Resource
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.adoption import BUNDLE
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import targets
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import API_VERSION
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.workloads import BUNDLE_DEPLOYMENT, bundle_releases

CLUSTER_GROUP = Resource(API_VERSION, "ClusterGroup", "clustergroups")
HUB_KEYS = ("apiServerURL", "apiServerCA")


def registers_anew(action, current_values, values, rotating, reinstall):
    """Whether this run makes the agent register with a hub: a rotation or re-install, a fresh install (``action``, the
    Helm plan's, None when nothing changes), or an upgrade that gives it another hub URL or CA than the release it runs has."""
    if rotating or reinstall or action == ReleasePlan.INSTALL:
        return True
    if action != ReleasePlan.UPGRADE:
        return False
    current_values = current_values or {}
    return any((current_values.get(key) or "").strip() != (values.get(key) or "").strip() for key in HUB_KEYS)


def hub_unplaced(hub, namespace, served, cluster_name, labels):
    """``[{manager, name, why}]``: each bundle of ``served`` (``[{namespace, name}]``) that the hub does not place on the
    Cluster ``cluster_name`` of ``namespace`` carrying ``labels``. A GET per bundle of that namespace (Fleet places a
    Bundle on the Clusters of its own namespace; mappings are not followed), the ClusterGroups only when targets name them."""
    bundles = [bundle for bundle in (hub.get(BUNDLE, item["name"], namespace) for item in served
                                     if item["namespace"] == namespace) if bundle]
    groups = targets.cluster_groups(hub.list(CLUSTER_GROUP, namespace) if targets.uses_groups(bundles) else [], labels or {})
    return targets.unplaced(served, bundles, cluster_name, labels or {}, groups, namespace)


def served_bundles(member):
    """The names of the bundles whose releases Fleet's agent deployed on the member (one LIST of Helm's records there)."""
    return sorted(set(release["bundle"] for release in bundle_releases(member)))


def unplaced(hub, namespace, served, cluster, labels):
    """hub_unplaced for ``served`` (bundle names), the Cluster being the hub's ``cluster`` when it is predefined (its name
    and labels), else one Fleet will name, carrying ``labels``."""
    if not served:
        return []
    meta = (cluster or {}).get("metadata") or {}
    return hub_unplaced(hub, namespace, [{"namespace": namespace, "name": name} for name in served], meta.get("name") or "",
                        meta.get("labels") if cluster else labels)


def undeployed(hub, cluster, bundles):
    """Which of ``bundles`` (names) the hub's controller has made no BundleDeployment of for ``cluster`` yet: all of
    them while the Cluster has no namespace of its own. The agent, once it connects, uninstalls the release of each such
    bundle at its first clean-up, however soon the controller would have made it (Fleet v0.16.0
    ``internal/cmd/agent/deployer/cleanup``: the first clean-up runs with the first BundleDeployment it handles)."""
    cluster_namespace = ((cluster or {}).get("status") or {}).get("namespace")
    if not cluster_namespace:
        return sorted(bundles)
    deployed = set(item["metadata"]["name"] for item in hub.list(BUNDLE_DEPLOYMENT, cluster_namespace)
                   if not item["metadata"].get("deletionTimestamp"))
    return sorted(set(bundles) - deployed)
