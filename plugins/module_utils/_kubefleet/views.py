# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A MemberCluster's status as the modules, the info module and the manager report it (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.labels import normalize_labels
from ansible_collections.fleetops.registration.plugins.module_utils.times import age_seconds, parse_time, utcnow
from ansible_collections.fleetops.registration.plugins.module_utils.waiter import PREDICATES
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import member_namespace


def heartbeat_age(timestamp, now=None):
    """Whole seconds since ``timestamp`` (None if there was no heartbeat)."""
    age = age_seconds(timestamp, now)
    return None if age is None else max(0, age)


def _tri(status):
    return {"True": True, "False": False}.get(status)


def _conditions(items):
    return [{
        "type": c.get("type"), "status": c.get("status"), "reason": c.get("reason"), "message": c.get("message"),
        "last_transition_time": c.get("lastTransitionTime"), "observed_generation": c.get("observedGeneration"),
    } for c in items or []]


def _find(items, cond_type):
    for item in items or []:
        if item.get("type") == cond_type:
            return item
    return {}


def member_agent_status(obj):
    """The MemberAgent entry of a MemberCluster's ``status.agentStatus`` ({} when there is none)."""
    return _find(((obj or {}).get("status") or {}).get("agentStatus"), "MemberAgent")


def member_healthy(obj):
    """True, False or None: the MemberCluster's Healthy condition, else (v0.14's hub does not aggregate it onto the
    MemberCluster) the member agent's own."""
    healthy = _find(((obj or {}).get("status") or {}).get("conditions"), "Healthy")
    if not healthy:
        healthy = _find(member_agent_status(obj).get("conditions"), "Healthy")
    return _tri(healthy.get("status"))


def member_agent_heartbeat(obj):
    """``lastReceivedHeartbeat`` of the MemberAgent in a MemberCluster's status, or None."""
    return member_agent_status(obj).get("lastReceivedHeartbeat") or None


def _agents(status, now):
    agents = []
    for agent in status.get("agentStatus") or []:
        agent_conditions = agent.get("conditions") or []
        heartbeat = agent.get("lastReceivedHeartbeat") or None
        agents.append({
            "type": agent.get("type"),
            "joined": _tri(_find(agent_conditions, "Joined").get("status")),
            "healthy": _tri(_find(agent_conditions, "Healthy").get("status")),
            "conditions": _conditions(agent_conditions),
            "last_received_heartbeat": heartbeat,
            "heartbeat_age_seconds": heartbeat_age(heartbeat, now),
        })
    return agents


def describe_member(obj, now=None):
    """A MemberCluster as the info module and the other modules report it."""
    now = now or utcnow()
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    conditions = status.get("conditions") or []
    usage = status.get("resourceUsage") or {}
    return {
        "name": metadata.get("name"),
        "labels": metadata.get("labels") or {},
        "identity": spec.get("identity") or {},
        "heartbeat_period_seconds": spec.get("heartbeatPeriodSeconds"),
        "taints": spec.get("taints") or [],
        "namespace": member_namespace(metadata.get("name") or ""),
        "leaving": bool(metadata.get("deletionTimestamp")),
        "finalizers": metadata.get("finalizers") or [],
        "created": metadata.get("creationTimestamp"),
        "ready_to_join": _tri(_find(conditions, "ReadyToJoin").get("status")),
        "joined": _tri(_find(conditions, "Joined").get("status")),
        "healthy": member_healthy(obj),
        "conditions": _conditions(conditions),
        "resource_usage": {
            "capacity": usage.get("capacity") or {},
            "allocatable": usage.get("allocatable") or {},
            "available": usage.get("available") or {},
            "observation_time": usage.get("observationTime"),
        },
        "properties": status.get("properties") or {},
        "agents": _agents(status, now),
    }


def joined_with_heartbeat(obj):
    """The MemberCluster is Joined=True and its member agent has sent a heartbeat."""
    return PREDICATES["member_joined"](obj) and bool(member_agent_heartbeat(obj))


def joined_since(obj, previous=None):
    """Joined with a heartbeat later than ``previous`` (a heartbeat seen earlier; both are hub timestamps)."""
    if not joined_with_heartbeat(obj):
        return False
    if not previous:
        return True
    latest, before = parse_time(member_agent_heartbeat(obj)), parse_time(previous)
    return latest is not None and (before is None or latest > before)


def label_selector(labels=None, selector=None):
    """A label selector string from equality ``labels`` and/or a free-form ``selector``."""
    parts = []
    for key, value in sorted(normalize_labels(labels, "labels").items()):
        parts.append("%s=%s" % (key, value))
    if selector:
        parts.append(selector.strip())
    return ",".join(p for p in parts if p) or None
