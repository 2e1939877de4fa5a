# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection reports about Rancher Fleet's hub objects."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.cluster_identity import recorded_identity
from ansible_collections.fleetops.registration.plugins.module_utils.errors import FleetOpsError
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_managers import removed_text
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import condition
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import server_from_kubeconfig
from ansible_collections.fleetops.registration.plugins.module_utils.parsing import load_yaml, unb64
from ansible_collections.fleetops.registration.plugins.module_utils._deps import yaml
from ansible_collections.fleetops.registration.plugins.module_utils.times import contact_age_seconds
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.agent_settings import spec_view


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


def checked_in(obj):
    """The Cluster's agent has checked in (Fleet records when it last did)."""
    return bool((((obj or {}).get("status") or {}).get("agent") or {}).get("lastSeen"))


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
        "name", "namespace", "labels", "client_id", "last_seen", "checked_in", "ready", "ready_status", "ready_message", "state",
        "bundles_ready", "api_server_url", "deleting"))
    view["seen_age_seconds"] = contact_age_seconds(summary["last_seen"], now)
    view["cluster_namespace"] = summary["cluster_namespace"]
    view["agent_fields"] = spec_view(obj.get("spec"))
    problem = obj.get(NAMESPACE_PROBLEM)
    view["cluster_namespace_problem"] = list(problem) if problem else None
    return view


# Seconds after the agent's last check-in after which it counts as silent, unless the user gives stale_after.
DEFAULT_STALE_AFTER = 3600


def stale_problem(view, stale_after=None):
    """Why the agent's last check-in is too old, or unreadable (None when fresh, never checked in, or ``stale_after``
    is 0): Rancher Fleet's one staleness rule."""
    limit = DEFAULT_STALE_AFTER if stale_after is None else int(stale_after)
    age = (view or {}).get("seen_age_seconds")
    if not (view or {}).get("checked_in") or stale_after == 0:
        return None
    if age is None:
        return "the agent's last check-in time (%s) cannot be read" % view.get("last_seen")
    if age <= limit:
        return None
    return "the agent last checked in %ds ago, more than stale_after (%ds)" % (age, limit)


def host_view(obj, now, member_url=None):
    """The fleet_members inventory's view of one Cluster (``FleetManager.host_view``); ``member_url``: the member's API
    server URL the hub knows (an imported cluster's kubeconfig Secret)."""
    view = hub_view(obj, now)
    return {
        "manager": "rancher_fleet", "name": view["name"], "namespace": view["namespace"], "labels": view["labels"],
        "client_id": view["client_id"], "last_seen": view["last_seen"] or None, "heartbeat_age_seconds": view["seen_age_seconds"],
        "joined": view["checked_in"], "leaving": view["deleting"], "state": view["state"],
        "bundles_ready": view["bundles_ready"], "cluster_namespace": view["cluster_namespace"],
        "hub_url_used_by_agent": view["api_server_url"], "api_server_url": member_url, "identity": recorded_identity(obj),
    }


def host_variables(view):
    """The host variables only a Fleet Cluster gives: its client ID and namespace."""
    found = {}
    if view.get("client_id"):
        found["fleetops_fleet_client_id"] = view["client_id"]
    if view.get("namespace"):
        found["fleetops_fleet_namespace"] = view["namespace"]
    return found


def member_url_from_secret(secret):
    """The member API server URL in an imported Cluster's kubeconfig Secret (``apiServerURL`` key, else the kubeconfig's
    server); never anything else of it."""
    data = (secret or {}).get("data") or {}
    try:
        if data.get("apiServerURL"):
            return unb64(data["apiServerURL"]).strip() or None
        if data.get("value"):
            return server_from_kubeconfig(load_yaml(unb64(data["value"])))
    except (ValueError, TypeError, FleetOpsError, yaml.YAMLError):
        return None
    return None


# The status word of a member whose findings name these causes (findings.STATUS_CAUSES); else checked-in or waiting.
STATE_OF_CAUSE = {"leaving": "deleting", "silent": "silent"}


def status_row(view, cause):
    """One row of the fleet status table from a hub view and its findings' status cause (None: the hub has no Cluster
    for the member)."""
    if view is None:
        return None
    state = STATE_OF_CAUSE.get(cause) or ("namespace-" + view["cluster_namespace_problem"][0] if cause == "cluster_namespace"
                                          else "checked-in" if view["checked_in"] else "waiting")
    return {
        "state": state,
        "last_contact_age_seconds": view["seen_age_seconds"], "labels": view["labels"],
        "checked_in": view["checked_in"], "ready": view["ready"], "fleet_state": view["state"], "last_seen": view["last_seen"],
        "bundles_ready": view["bundles_ready"], "deleting": view["deleting"],
        "cluster_namespace_problem": view.get("cluster_namespace_problem"),
    }


# -- the roles' summaries (filter/summaries.py) -------------------------------------------------------------------------

# The member_join and member_leave roles register this manager's step results under these names.
JOIN_RESULTS = ("member_join__fleet_cluster", "member_join__fleet_agent")
LEAVE_RESULTS = {"agent": "member_leave__fleet_agent", "cluster": "member_leave__fleet_cluster", "tokens": "member_leave__fleet_tokens"}


def _summary_object(state, view):
    return "%s/%s" % (view.get("namespace") or state.get("namespace") or "fleet-default", state.get("name"))


SUMMARY_SHAPE = {"object": ("cluster", _summary_object), "view": "cluster", "contact": ("checked_in", "checked in"),
                 "health": ("ready", "ready"), "changed_agent": None,
                 "extra": lambda view: {"checked_in": bool(view.get("checked_in")), "last_seen": view.get("last_seen")}}


def _kept(agent_result):
    """What a leave could not remove: the agent namespace, with what it was kept for."""
    kept_for = agent_result.get("namespace_kept_for") or []
    return ["namespace %s (kept for %s)" % ((agent_result.get("release") or {}).get("namespace") or "cattle-fleet-system",
                                            ", ".join(kept_for))] if kept_for else []


def leave_workloads(agent_result, cluster_result):
    """What became of the releases Fleet's agent deployed for the Cluster's bundles: ``{'action', 'bundles',
    'releases', 'namespaces'}`` (keep: the releases and their namespaces stay on the member; remove: the agent
    uninstalled them). ``action`` is None when the agent's step did not run."""
    workloads = agent_result.get("workloads") or {}
    return {"action": workloads.get("action"), "bundles": cluster_result.get("bundle_deployments") or [],
            "releases": workloads.get("releases") or [], "namespaces": workloads.get("namespaces") or []}


def _kept_workloads(workloads):
    if workloads["action"] != "keep":
        return []
    return ["release %s" % r for r in workloads["releases"]] + ["namespace %s" % n for n in workloads["namespaces"]]


def leave_summary(results):
    """``(summary, line)`` of a leave from the role's step results (``LEAVE_RESULTS``)."""
    agent, cluster_result = results.get("agent") or {}, results.get("cluster") or {}
    workloads = leave_workloads(agent, cluster_result)
    removed_bundles = workloads["bundles"] if workloads["action"] == "remove" else []
    managed = agent.get("fleet_managed_releases") or []
    registrations = len(cluster_result.get("removed_registrations") or [])
    tokens = len((results.get("tokens") or {}).get("pruned") or [])
    summary = {"agent_removed": bool(agent.get("changed")), "agent_credential_removed": bool(agent.get("removed_credential")),
               "managed_agent_releases_removed": managed, "cluster_removed": bool(cluster_result.get("changed")),
               "removed_registrations": registrations, "removed_tokens": tokens, "workloads": workloads,
               "kept": _kept(agent) + _kept_workloads(workloads)}
    line = "rancher_fleet removed: " + removed_text([
        ("agent", agent.get("changed")), ("agent credential", agent.get("removed_credential")),
        ("Fleet-managed agent release " + ", ".join(managed), managed), ("Cluster", cluster_result.get("changed")),
        ("%d ClusterRegistration(s)" % registrations, registrations),
        ("%d registration token(s) of a failed join" % tokens, tokens),
        ("the releases of bundle(s) " + ", ".join(removed_bundles), removed_bundles)])
    return summary, line + ("; kept: %s" % ", ".join(summary["kept"]) if summary["kept"] else "")
