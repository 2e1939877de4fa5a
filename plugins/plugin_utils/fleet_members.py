# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet_members inventory's pure mapping: hub objects in, hosts with their variables and groups out.

No API access here (the inventory plugin reads the hub), so every rule is unit-tested with plain dicts:
which objects become one host, what each host's variables say, and which groups it joins.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import findings, registry
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_managers import object_key
from ansible_collections.fleetops.registration.plugins.module_utils.times import parse_time

MANAGERS = tuple(registry.MANAGERS)
MEMBERS_GROUP = "members"
HUB_GROUP = "hub"
# A host's health, worst first: the worst of its managers' is its fleetops_health and its group.
HEALTH_STATES = findings.HEALTH_GROUPS
# None: the manager's own staleness rule (its rule table's "silent" row) - Rancher Fleet DEFAULT_STALE_AFTER after the
# last check-in, KubeFleet three heartbeat periods - the same that fleet_status and member_info apply.
DEFAULT_STALE_AFTER = dict((name, None) for name in MANAGERS)


def stale_limits(value):
    """The inventory's ``stale_after`` as ``{manager: seconds or None}``: a number for every manager, or a mapping per
    manager (ValueError naming the option and the fix for anything else)."""
    if value is None or value == "":
        value = {}
    if isinstance(value, bool) or not isinstance(value, (int, str, dict)):
        raise ValueError("stale_after must be a number of seconds or a mapping of manager to seconds, not %r" % (value,))
    if not isinstance(value, dict):
        value = dict.fromkeys(MANAGERS, value)
    unknown = sorted(set(value) - set(MANAGERS))
    if unknown:
        raise ValueError("stale_after has unknown managers %s; use %s" % (", ".join(unknown), " or ".join(MANAGERS)))
    limits = dict(DEFAULT_STALE_AFTER)
    for name, seconds in value.items():
        try:
            limits[name] = None if seconds is None else int(seconds)
        except (TypeError, ValueError):
            raise ValueError("stale_after for %s must be a whole number of seconds, not %r" % (name, seconds))
        if isinstance(seconds, bool) or (limits[name] or 0) < 0:
            raise ValueError("stale_after for %s must be a whole number of seconds (0 or more), not %r" % (name, seconds))
    return limits


def host_key(view, link_label):
    """The host a view belongs to: the value of ``link_label`` when the object has it, else the object's name."""
    if link_label and view["labels"].get(link_label):
        return str(view["labels"][link_label])
    return view["name"]


def health(views):
    """The host's health from all its managers' views: the worst of their groups (``findings.health_group`` of each
    manager's findings, what member_info and fleet_status judge by)."""
    return findings.worst_group(v["health"] for v in views)


def judged_host_view(manager, obj, now, stale_after=None, member_url=None):
    """The manager's host view with ``healthy``, ``health`` (its group), ``stale`` and ``causes`` from its rule table
    over the hub view alone."""
    found = manager.hub_findings(manager.hub_view(obj, now), stale_after, now)
    return dict(manager.host_view(obj, now, member_url), healthy=findings.healthy(found), health=findings.health_group(found),
                stale=any(item["cause"] == "silent" for item in found), causes=[item["cause"] for item in findings.problems(found)])


def host_vars(views):
    """The variables of one host from its managers' host views (in registry order)."""
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
        "fleetops_member_api_server_url": next((v["api_server_url"] for v in views if v.get("api_server_url")), None),
    }
    by_manager = dict((v["manager"], v) for v in views)
    for name in MANAGERS:
        hostvars["fleetops_" + name] = by_manager.get(name)
        if name in by_manager:
            hostvars.update(registry.manager(name).host_variables(by_manager[name]))
    names = set(v["name"] for v in views)
    if len(names) == 1:  # with link_label the managers may name it differently: then the roles need it set
        hostvars["fleetops_cluster_name"] = names.pop()
    return hostvars


def _host_names(views, link_label):
    """Host names for one manager's views; a name its namespaced objects use in two namespaces becomes
    ``<namespace>.<name>`` for each."""
    keys = [host_key(v, link_label) for v in views]
    return [key if keys.count(key) == 1 or not view.get("namespace") else "%s.%s" % (view["namespace"], key)
            for key, view in zip(keys, views)]


def lock_of(views, locks, now):
    """The lock (member_lock's ``live_locks`` entry) of the member ``views`` show, if it has not expired by ``now``."""
    for view in views:
        lock = (locks or {}).get(view["name"])
        expires = parse_time((lock or {}).get("expires"))
        if expires is not None and expires > now:
            return lock
    return None


def build_hosts(objects, now, link_label=None, stale_after=None, member_urls=None, locks=None):
    """``{host: {"vars": {...}, "groups": [...]}}`` for the hub's member objects, ``{manager name: [objects]}``.

    One host per member cluster: the objects of several managers with the same key (name, or the value of
    ``link_label``) are one host. ``member_urls`` maps ``namespace/name`` of a member object to the member API server
    URL the hub knows (``FleetManager.member_urls``). ``locks``: the runs changing members (member_lock's
    ``live_locks``, perhaps from the cache: expired ones are left out).
    """
    limits = dict(DEFAULT_STALE_AFTER, **(stale_after or {}))
    member_urls = member_urls or {}
    grouped = {}
    for name in MANAGERS:
        manager = registry.manager(name)
        views = [judged_host_view(manager, obj, now, limits[name], member_urls.get(object_key(obj))) for obj in objects.get(name) or []]
        for key, view in zip(_host_names(views, link_label), views):
            grouped.setdefault(key, []).append(view)
    hosts = {}
    for name, views in sorted(grouped.items()):
        hostvars = dict(host_vars(views), fleetops_lock=lock_of(views, locks, now))
        groups = [MEMBERS_GROUP] + hostvars["fleetops_managers"] + [hostvars["fleetops_health"]]
        hosts[name] = {"vars": hostvars, "groups": groups}
    return hosts


def strip_object(obj):
    """An API object without the fields the inventory never reads (managedFields), for the cache."""
    metadata = dict(obj.get("metadata") or {})
    metadata.pop("managedFields", None)
    metadata.pop("annotations", None)
    return dict(obj, metadata=metadata)
