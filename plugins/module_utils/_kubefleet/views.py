# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A MemberCluster's status as the modules, the info module and the manager report it (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils.cluster_identity import recorded_identity
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_managers import removed_text
from ansible_collections.fleetops.registration.plugins.module_utils.labels import normalize_labels
from ansible_collections.fleetops.registration.plugins.module_utils.times import contact_age_seconds, parse_time, utcnow
from ansible_collections.fleetops.registration.plugins.module_utils.waiter import condition_true
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import DEFAULT_HEARTBEAT_PERIOD, member_namespace
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import quarantined


def heartbeat_age(timestamp, now=None):
    """Whole seconds since ``timestamp`` (None if there was no heartbeat)."""
    return contact_age_seconds(timestamp, now)


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


# A heartbeat older than this many periods means the member agent has gone quiet.
STALE_HEARTBEAT_PERIODS = 3


def heartbeat_problem(view, stale_after=None):
    """Why the hub's last heartbeat from the member agent is too old, or missing from a joined member whose time
    cannot be read (None when it is fresh, or the member never joined): KubeFleet's one staleness rule."""
    age = view.get("heartbeat_age_seconds")
    if age is None:
        return "the member agent is joined but the hub has no readable time of its last heartbeat" if view.get("joined") is True else None
    period = view.get("heartbeat_period_seconds") or DEFAULT_HEARTBEAT_PERIOD
    if age > STALE_HEARTBEAT_PERIODS * period:
        return "the member agent's last heartbeat is %ds old, more than %d x heartbeatPeriodSeconds (%ds)" % (
            age, STALE_HEARTBEAT_PERIODS, period)
    if stale_after and age > stale_after:
        return "the member agent's last heartbeat is %ds old, more than stale_after (%ds)" % (age, stale_after)
    return None


# A live agent's next heartbeat is due within its period and this margin; one that has not come is overdue. The agent
# spreads its heartbeats by up to 5% of the period either way (KubeFleet's jitter), which the margin adds.
HEARTBEAT_MARGIN_SECONDS = 5
HEARTBEAT_JITTER = 0.05


def heartbeat_overdue(view, stale_after=None):
    """Seconds until a joined member agent whose heartbeat is overdue (older than its period, jitter and margin) is judged
    silent by ``heartbeat_problem``; None when it is not overdue (fresh, never joined, or silent already)."""
    age = view.get("heartbeat_age_seconds")
    if age is None or view.get("joined") is not True:
        return None
    period = view.get("heartbeat_period_seconds") or DEFAULT_HEARTBEAT_PERIOD
    silent_after = min(STALE_HEARTBEAT_PERIODS * period, stale_after or STALE_HEARTBEAT_PERIODS * period)
    if age <= period * (1 + HEARTBEAT_JITTER) + HEARTBEAT_MARGIN_SECONDS or age > silent_after:
        return None
    return silent_after - age + 1


# After a hub restart a member agent's watch of its InternalMemberCluster fails ("too old resource version") at its next
# try, and client-go's reflector lists again only after its back-off (capped at 30 s, doubled at most by its jitter).
# Until then its cache misses even the agent's own heartbeat, so each next heartbeat conflicts (soak seed 9461, round
# 40: one heartbeat, then 20 s of conflicts), and controller-runtime retries it at doubling delays: the first retry
# after the list comes within twice the time since the first conflict. Both back-offs together: an agent that runs is
# heard from again within four minutes of its last heartbeat.
RECONNECT_SECONDS = 4 * 60


def reconnect_left(view):
    """Seconds until a running member agent's silence outlasts its reconnection to the hub (``RECONNECT_SECONDS`` from
    its last heartbeat); None when that has passed or the heartbeat's time is unknown."""
    age = (view or {}).get("heartbeat_age_seconds")
    if age is None or age >= RECONNECT_SECONDS:
        return None
    return RECONNECT_SECONDS - age


def with_newest_heartbeat(member_cluster, internal):
    """``member_cluster`` carrying the member agent's heartbeat of ``internal`` (its InternalMemberCluster) where that is
    newer: the member agent writes its heartbeat there, and the hub agent copies it onto the MemberCluster only when it
    sees the change (after a hub outage, tens of seconds late). A copy; the MemberCluster itself when not newer."""
    heartbeat, copied = member_agent_heartbeat(internal), member_agent_heartbeat(member_cluster)
    newer, seen = parse_time(heartbeat), parse_time(copied)
    if member_cluster is None or newer is None or (seen is not None and newer <= seen):
        return member_cluster
    status = dict(member_cluster.get("status") or {})
    agents = [dict(agent) for agent in status.get("agentStatus") or []]
    entry = next((agent for agent in agents if agent.get("type") == "MemberAgent"), None)
    if entry is None:
        return member_cluster
    entry["lastReceivedHeartbeat"] = heartbeat
    status["agentStatus"] = agents
    return dict(member_cluster, status=status)


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


def quarantine_problems(obj):
    """Why a quarantined MemberCluster is not verified yet: empty once it is joined, healthy and has reported its
    properties (what placement decides on)."""
    status = (obj or {}).get("status") or {}
    problems = []
    if not member_joined(obj):
        problems.append("it has not joined")
    healthy = member_healthy(obj)
    if healthy is not True:
        problems.append("the member agent reports it unhealthy" if healthy is False else "the member agent has not reported it healthy")
    if not status.get("properties") and not (status.get("resourceUsage") or {}).get("observationTime"):
        problems.append("the member agent has reported no properties or resource usage")
    return problems


# Set on a MemberCluster by the manager's read_hub: whether the ServiceAccount its spec.identity names exists (absent:
# not read - another identity kind, or a credential that may not list ServiceAccounts there).
IDENTITY_PRESENT = "fleetops_identity_present"


def hub_view(obj, now=None):
    """The plain facts the hub knows of one member's MemberCluster (None when there is none)."""
    if obj is None:
        return None
    member = describe_member(obj, now)
    agent = [a for a in member["agents"] if a["type"] == "MemberAgent"]
    agent = agent[0] if agent else {}
    view = dict((key, member[key]) for key in (
        "name", "labels", "identity", "joined", "healthy", "ready_to_join", "heartbeat_period_seconds", "leaving"))
    view["agent_joined"] = agent.get("joined")
    view["heartbeat"] = member_agent_heartbeat(obj)
    view["heartbeat_age_seconds"] = agent.get("heartbeat_age_seconds")
    view["heartbeat_stale"] = heartbeat_problem(view) is not None
    view["quarantined"] = quarantined(obj)
    view["conditions_false"] = conditions_false(obj)
    view["identity_present"] = obj.get(IDENTITY_PRESENT)
    return view


def conditions_false(obj):
    """``Type (reason): message`` of each False condition of the MemberCluster and of its member agent: what the hub
    says is wrong."""
    status = (obj or {}).get("status") or {}
    found = []
    for owner, items in (("MemberCluster", status.get("conditions")), ("member agent", member_agent_status(obj).get("conditions"))):
        for item in items or []:
            if item.get("status") == "False":
                found.append("%s %s=False (%s): %s" % (owner, item.get("type"), item.get("reason") or "-", item.get("message") or "-"))
    return found


def host_view(obj, now):
    """The fleet_members inventory's view of one MemberCluster (``FleetManager.host_view``)."""
    view = hub_view(obj, now)
    return {
        "manager": "kubefleet", "name": view["name"], "labels": view["labels"], "last_seen": view["heartbeat"],
        "heartbeat_age_seconds": view["heartbeat_age_seconds"], "heartbeat_period_seconds": view["heartbeat_period_seconds"],
        "joined": view["joined"] is True, "leaving": view["leaving"], "ready_to_join": view["ready_to_join"], "quarantined": view["quarantined"],
        "properties": (obj.get("status") or {}).get("properties") or {}, "identity": recorded_identity(obj),
    }


member_joined = condition_true("Joined")
member_ready_to_join = condition_true("ReadyToJoin")


def joined_with_heartbeat(obj):
    """The MemberCluster is Joined=True and its member agent has sent a heartbeat."""
    return member_joined(obj) and bool(member_agent_heartbeat(obj))


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


# -- the roles' summaries (filter/summaries.py) -------------------------------------------------------------------------

# The member_join and member_leave roles register this manager's step results under these names (the join's: the
# MemberCluster, the agent, and the step that let an earlier MemberCluster's leave finish).
JOIN_RESULTS = ("member_join__kf_cluster", "member_join__kf_agent", "member_join__kf_leave")
LEAVE_RESULTS = {"member_cluster": "member_leave__kf_cluster", "agent": "member_leave__kf_agent", "identity": "member_leave__kf_identity"}

SUMMARY_SHAPE = {"object": ("member_cluster", lambda state, view: state.get("name")), "view": "member",
                 "contact": ("joined", "joined"), "health": ("healthy", "healthy"), "changed_agent": "installed/updated",
                 "extra": lambda view: {}}


def leave_summary(results):
    """``(summary, line)`` of a leave from the role's step results (``LEAVE_RESULTS``)."""
    member_cluster, agent, identity = (results.get(k) or {} for k in ("member_cluster", "agent", "identity"))
    forced = member_cluster.get("forced") or []
    workloads = {"action": None, "applied_works": []}
    workloads.update(agent.get("workloads") or {})
    works = ["AppliedWork %s (%s)" % (w["name"], ", ".join(w.get("resources") or [])) for w in workloads["applied_works"]]
    summary = {"member_cluster_removed": bool(member_cluster.get("changed")), "forced": forced,
               "agent_removed": bool(agent.get("changed")), "agent_repaired_for_leave": agent.get("repaired"),
               "identity_removed": bool(identity.get("changed")),
               "removed_leases": agent.get("removed_leases") or [], "workloads": workloads,
               "kept": works if workloads["action"] == "keep" else []}
    removed_works = works if workloads["action"] == "remove" else []
    line = "kubefleet removed: " + removed_text([("MemberCluster", member_cluster.get("changed")), ("agent", agent.get("changed")),
                                                 ("identity", identity.get("changed")), (", ".join(removed_works), removed_works)])
    line += " (forced: %s)" % ", ".join(forced) if forced else ""
    line += " (the agent was restarted to acknowledge the leave)" if agent.get("repaired") else ""
    return summary, line + ("; kept: %s" % ", ".join(summary["kept"]) if summary["kept"] else "")
