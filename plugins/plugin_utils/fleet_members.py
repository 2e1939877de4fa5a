# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet_members inventory's pure mapping: hub objects in, hosts with their variables and groups out.

No API access here (the inventory plugin reads the hub), so every rule is unit-tested with plain dicts:
which objects become one host, what each host's variables say, and which groups it joins.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import registry
from ansible_collections.fleetops.registration.plugins.module_utils.cluster_identity import recorded_identity
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import kubeconfig_entries
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_time
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.views import member_agent_status, member_healthy

RANCHER_FLEET = "rancher_fleet"
KUBEFLEET = "kubefleet"
MANAGERS = (RANCHER_FLEET, KUBEFLEET)
MEMBERS_GROUP = "members"
HUB_GROUP = "hub"
# A host's health, worst first: the first that applies is its fleetops_health and its group.
HEALTH_STATES = ("leaving", "not_joined", "stale", "unhealthy", "healthy")
# None: the manager's own staleness rule (FleetManager.stale_problem) - Rancher Fleet 3600 s after the last check-in,
# KubeFleet three heartbeat periods - the same that fleet_status and member_info apply.
DEFAULT_STALE_AFTER = {RANCHER_FLEET: None, KUBEFLEET: None}
# The one RFC 3339 parser (module_utils/times): fractions and any offset, aware UTC, None for garbage.
parse_timestamp = parse_time


def age_seconds(timestamp, now):
    """Whole seconds from ``timestamp`` to ``now`` (None without a timestamp)."""
    when = parse_timestamp(timestamp)
    return None if when is None else max(0, int((now - when).total_seconds()))


def condition_status(conditions, cond_type):
    """True, False or None (unknown or absent) for the condition ``cond_type``."""
    for cond in conditions or []:
        if cond.get("type") == cond_type:
            return {"True": True, "False": False}.get(cond.get("status"))
    return None


def _stale(manager_name, obj, now, stale_after, joined, age):
    """The manager's own staleness rule (a joined member whose last contact does not parse counts as stale)."""
    manager = registry.manager(manager_name)
    return joined and (age is None or manager.stale_problem(manager.hub_view(obj, now), stale_after) is not None)


def fleet_view(obj, now, stale_after, member_url=None):
    """A Rancher Fleet ``Cluster`` as one manager's view of a member."""
    metadata = obj.get("metadata") or {}
    status = obj.get("status") or {}
    last_seen = (status.get("agent") or {}).get("lastSeen") or None
    age = age_seconds(last_seen, now)
    joined = last_seen is not None
    return {
        "manager": RANCHER_FLEET,
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "labels": metadata.get("labels") or {},
        "client_id": (obj.get("spec") or {}).get("clientID"),
        "last_seen": last_seen,
        "heartbeat_age_seconds": age,
        "joined": joined,
        "healthy": condition_status(status.get("conditions"), "Ready"),
        "stale": _stale(RANCHER_FLEET, obj, now, stale_after, joined, age),
        "leaving": bool(metadata.get("deletionTimestamp")),
        "state": (status.get("display") or {}).get("state"),
        "bundles_ready": (status.get("display") or {}).get("readyBundles"),
        "cluster_namespace": status.get("namespace"),
        "hub_url_used_by_agent": status.get("apiServerURL"),
        "api_server_url": member_url,
        "identity": recorded_identity(obj),
    }


def kubefleet_view(obj, now, stale_after):
    """A KubeFleet ``MemberCluster`` as one manager's view of a member."""
    metadata = obj.get("metadata") or {}
    status = obj.get("status") or {}
    heartbeat = member_agent_status(obj).get("lastReceivedHeartbeat") or None
    age = age_seconds(heartbeat, now)
    joined = condition_status(status.get("conditions"), "Joined") is True
    return {
        "manager": KUBEFLEET,
        "name": metadata.get("name"),
        "labels": metadata.get("labels") or {},
        "last_seen": heartbeat,
        "heartbeat_age_seconds": age,
        "heartbeat_period_seconds": (obj.get("spec") or {}).get("heartbeatPeriodSeconds"),
        "joined": joined,
        "healthy": member_healthy(obj),
        "stale": _stale(KUBEFLEET, obj, now, stale_after, joined, age),
        "leaving": bool(metadata.get("deletionTimestamp")),
        "ready_to_join": condition_status(status.get("conditions"), "ReadyToJoin"),
        "properties": status.get("properties") or {},
        "identity": recorded_identity(obj),
    }


def host_key(view, link_label):
    """The host a view belongs to: the value of ``link_label`` when the object has it, else the object's name."""
    if link_label and view["labels"].get(link_label):
        return str(view["labels"][link_label])
    return view["name"]


def health(views):
    """The host's health from all its managers' views, worst first (HEALTH_STATES)."""
    if any(v["leaving"] for v in views):
        return "leaving"
    if not all(v["joined"] for v in views):
        return "not_joined"
    if any(v["stale"] for v in views):
        return "stale"
    if any(v["healthy"] is False for v in views):
        return "unhealthy"
    return "healthy"


def host_vars(views):
    """The variables of one host from its managers' views (sorted by manager)."""
    by_manager = dict((v["manager"], v) for v in views)
    fleet = by_manager.get(RANCHER_FLEET) or {}
    state = health(views)
    labels = {}
    for view in views:
        labels.update(view["labels"])
    hostvars = {
        "fleetops_managers": [v["manager"] for v in views],
        "fleetops_hub_labels": labels,
        "fleetops_health": state,
        "fleetops_joined": all(v["joined"] for v in views),
        "fleetops_healthy": state == "healthy",
        "fleetops_stale": any(v["stale"] for v in views),
        "fleetops_heartbeat_age_seconds": dict((v["manager"], v["heartbeat_age_seconds"]) for v in views),
        "fleetops_last_seen": dict((v["manager"], v["last_seen"]) for v in views),
        "fleetops_cluster_identity": dict((v["manager"], v.get("identity")) for v in views),
        "fleetops_member_api_server_url": fleet.get("api_server_url"),
        "fleetops_rancher_fleet": by_manager.get(RANCHER_FLEET),
        "fleetops_kubefleet": by_manager.get(KUBEFLEET),
    }
    if fleet.get("client_id"):
        hostvars["fleetops_fleet_client_id"] = fleet["client_id"]
    if fleet.get("namespace"):
        hostvars["fleetops_fleet_namespace"] = fleet["namespace"]
    names = set(v["name"] for v in views)
    if len(names) == 1:  # with link_label the managers may name it differently: then the roles need it set
        hostvars["fleetops_cluster_name"] = names.pop()
    return hostvars


def _fleet_host_names(fleet_views, link_label):
    """Host names for Fleet views; a name used in two namespaces becomes ``<namespace>.<name>`` for each."""
    keys = [host_key(v, link_label) for v in fleet_views]
    return [key if keys.count(key) == 1 else "%s.%s" % (view["namespace"], key) for key, view in zip(keys, fleet_views)]


def lock_of(views, locks, now):
    """The lock (member_lock's ``live_locks`` entry) of the member ``views`` show, if it has not expired by ``now``."""
    for view in views:
        lock = (locks or {}).get(view["name"])
        expires = parse_time((lock or {}).get("expires"))
        if expires is not None and expires > now:
            return lock
    return None


def build_hosts(fleet_clusters, member_clusters, now, link_label=None, stale_after=None, member_urls=None, locks=None):
    """``{host: {"vars": {...}, "groups": [...]}}`` for the hub's Fleet Clusters and KubeFleet MemberClusters.

    One host per member cluster: a Fleet Cluster and a MemberCluster with the same key (name, or the value of
    ``link_label``) are one host. ``member_urls`` maps ``namespace/name`` of a Fleet Cluster to the member API
    server URL the hub knows (from an imported cluster's kubeconfig Secret). ``locks``: the runs changing members
    (member_lock's ``live_locks``, perhaps from the cache: expired ones are left out).
    """
    limits = dict(DEFAULT_STALE_AFTER, **(stale_after or {}))
    member_urls = member_urls or {}
    fleet_views = [fleet_view(obj, now, limits[RANCHER_FLEET],
                              member_urls.get("%s/%s" % ((obj.get("metadata") or {}).get("namespace"),
                                                         (obj.get("metadata") or {}).get("name"))))
                   for obj in fleet_clusters]
    grouped = {}
    for name, view in zip(_fleet_host_names(fleet_views, link_label), fleet_views):
        grouped.setdefault(name, []).append(view)
    for obj in member_clusters:
        view = kubefleet_view(obj, now, limits[KUBEFLEET])
        grouped.setdefault(host_key(view, link_label), []).append(view)
    hosts = {}
    for name, views in sorted(grouped.items()):
        views.sort(key=lambda v: MANAGERS.index(v["manager"]))
        hostvars = dict(host_vars(views), fleetops_lock=lock_of(views, locks, now))
        groups = [MEMBERS_GROUP] + hostvars["fleetops_managers"] + [hostvars["fleetops_health"]]
        hosts[name] = {"vars": hostvars, "groups": groups}
    return hosts


def server_from_kubeconfig(config):
    """The API server URL of a kubeconfig mapping's current context (or its only cluster), or None."""
    if not isinstance(config, dict):
        return None
    entries = kubeconfig_entries(config)
    if entries is not None:
        return entries[0].get("server")
    clusters = [c.get("cluster") or {} for c in config.get("clusters") or [] if isinstance(c, dict)]
    return clusters[0].get("server") if len(clusters) == 1 else None


def strip_object(obj):
    """An API object without the fields the inventory never reads (managedFields), for the cache."""
    metadata = dict(obj.get("metadata") or {})
    metadata.pop("managedFields", None)
    metadata.pop("annotations", None)
    return dict(obj, metadata=metadata)
