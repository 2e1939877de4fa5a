# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection reports about Rancher Fleet's hub objects."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import condition
from ansible_collections.fleetops.registration.plugins.module_utils.times import age_seconds


def cluster_summary(obj):
    """One Cluster as ``kubectl get clusters.fleet.cattle.io`` shows it, and more."""
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    display = status.get("display") or {}
    agent = status.get("agent") or {}
    ready = condition(obj, "Ready")
    return {
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "labels": metadata.get("labels") or {},
        "client_id": spec.get("clientID"),
        "kube_config_secret": spec.get("kubeConfigSecret"),
        "paused": bool(spec.get("paused")),
        "bundles_ready": display.get("readyBundles"),
        "state": display.get("state"),
        "last_seen": agent.get("lastSeen"),
        "checked_in": bool(agent.get("lastSeen")),
        "agent_namespace": agent.get("namespace"),
        "cluster_namespace": status.get("namespace"),
        "api_server_url": status.get("apiServerURL"),
        "ready": ready.get("status") == "True",
        "ready_status": ready.get("status"),
        "ready_message": ready.get("message") or ready.get("reason"),
        "conditions": status.get("conditions") or [],
        "summary": status.get("summary") or {},
        "resource_counts": status.get("resourceCounts") or {},
        "created": metadata.get("creationTimestamp"),
        "deleting": bool(metadata.get("deletionTimestamp")),
    }


def registration_summary(obj):
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return {
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "client_id": spec.get("clientID"),
        "cluster_labels": spec.get("clusterLabels") or {},
        "cluster_name": status.get("clusterName"),
        "granted": bool(status.get("granted")),
        "token_name": (metadata.get("labels") or {}).get("fleet.cattle.io/registration-token"),
        "created": metadata.get("creationTimestamp"),
    }


# Set on a Cluster by the manager's read_hub: cluster_namespace.problem of its cluster namespace (absent: not read).
NAMESPACE_PROBLEM = "fleetops_cluster_namespace_problem"


def hub_view(obj, now=None):
    """The plain facts the hub knows of one member's Cluster (None when there is none)."""
    if not obj:
        return None
    summary = cluster_summary(obj)
    view = dict((key, summary[key]) for key in (
        "name", "namespace", "labels", "client_id", "last_seen", "checked_in", "ready", "ready_message", "state",
        "bundles_ready", "api_server_url", "deleting"))
    view["seen_age_seconds"] = age_seconds(summary["last_seen"], now)
    view["cluster_namespace"] = summary["cluster_namespace"]
    problem = obj.get(NAMESPACE_PROBLEM)
    view["cluster_namespace_problem"] = list(problem) if problem else None
    return view


# Seconds after the agent's last check-in after which it counts as silent, unless the user gives stale_after.
DEFAULT_STALE_AFTER = 3600


def stale_problem(view, stale_after=None):
    """Why the agent's last check-in is too old (None when fresh, never checked in, or ``stale_after`` is 0)."""
    limit = DEFAULT_STALE_AFTER if stale_after is None else int(stale_after)
    age = (view or {}).get("seen_age_seconds")
    if not (view or {}).get("checked_in") or age is None or stale_after == 0 or age <= limit:
        return None
    return "the agent last checked in %ds ago, more than stale_after (%ds)" % (age, limit)


def status_row(view):
    """One row of the fleet status table from a hub view (None: the hub has no Cluster for the member)."""
    if view is None:
        return None
    stale = stale_problem(view) is not None
    state = ("deleting" if view["deleting"] else "namespace-" + view["cluster_namespace_problem"][0]
             if view.get("cluster_namespace_problem") else "silent" if stale else "checked-in" if view["checked_in"] else "waiting")
    return {
        "state": state, "healthy": (bool(view["ready"]) and not stale) if view["checked_in"] else None,
        "last_contact_age_seconds": view["seen_age_seconds"], "labels": view["labels"],
        "checked_in": view["checked_in"], "ready": view["ready"], "fleet_state": view["state"], "last_seen": view["last_seen"],
        "bundles_ready": view["bundles_ready"], "deleting": view["deleting"],
        "cluster_namespace_problem": view.get("cluster_namespace_problem"),
    }
