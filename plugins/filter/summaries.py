# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-member summaries of the join and leave roles, from module results (no state machine in Jinja)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

AGENT_STEPS = ("join", "reregister", "install", "upgrade")


def _ran(result):
    return bool(result) and not result.get("skipped")


def _label_drift(results):
    """``+k=v ~k=v -k`` from the label changes the hub-side modules report, ``in sync`` when none."""
    parts = []
    for result in results:
        if not _ran(result):
            continue
        changes = result.get("label_changes") or {}
        parts += ["+%s=%s" % item for item in sorted((changes.get("added") or {}).items())]
        parts += ["~%s=%s" % item for item in sorted((changes.get("changed") or {}).items())]
        parts += ["-%s" % key for key in sorted(changes.get("removed") or [])]
    return " ".join(parts) or "in sync"


def _agent_outcome(state, agent, check_mode):
    action = state.get("action", "none")
    if action not in AGENT_STEPS:
        return "unchanged"
    if check_mode:
        return "would %s" % {"join": "register", "reregister": "re-register"}.get(action, action)
    if not _ran(agent):
        return "unchanged"
    if action == "reregister":
        return "re-registered (%s)" % "; ".join(state.get("reasons") or ["credential replaced"])
    if action == "join":
        return "registered"
    return "%sed" % action.rstrip("e") if agent.get("changed") else "unchanged"


def _latest_view(state, results, key):
    """What the hub says after the run: the last result that carries a view, else member_info's."""
    for result in reversed(results):
        if _ran(result) and isinstance(result.get(key), dict):
            return result[key]
    return state.get("hub") or {}


def _fleet_object(state, view):
    return "%s/%s" % (view.get("namespace") or state.get("namespace") or "fleet-default", state.get("name"))


# Per manager: the key of the member's hub object in the summary and how it is named, the result key holding the hub's
# view after a step, the contact and health facts with their words, and how an agent change is worded.
SUMMARY_SHAPES = {
    "rancher_fleet": {"object": ("cluster", _fleet_object), "view": "cluster", "contact": ("checked_in", "checked in"),
                      "health": ("ready", "ready"), "changed_agent": None},
    "kubefleet": {"object": ("member_cluster", lambda state, view: state.get("name")), "view": "member",
                  "contact": ("joined", "joined"), "health": ("healthy", "healthy"), "changed_agent": "installed/updated"},
}


def _manager_summary(manager, state, results):
    """One manager's part of the join summary: what it needed, what the run did, what the hub sees now, one line."""
    shape = SUMMARY_SHAPES[manager]
    cluster_result, agent_result = (list(results["steps"]) + [{}, {}])[:2]
    view = _latest_view(state, [cluster_result, agent_result], shape["view"])
    outcome = _agent_outcome(state, agent_result, results["check_mode"])
    if shape["changed_agent"] and outcome in ("registered", "installed", "upgraded"):
        outcome = shape["changed_agent"]
    (object_key, name_of), (contact_key, contact), (health_key, health) = shape["object"], shape["contact"], shape["health"]
    summary = {object_key: name_of(state, view), "action": state.get("action"), "reasons": state.get("reasons") or [],
               "agent": outcome, contact_key: view.get(contact_key), health_key: view.get(health_key),
               "labels": _label_drift([cluster_result])}
    if manager == "rancher_fleet":
        summary.update(checked_in=bool(view.get("checked_in")), last_seen=view.get("last_seen"))
    summary["line"] = "%s %s: agent %s, %s%s; labels %s" % (
        manager, summary[object_key], outcome, contact if summary[contact_key] else "not " + contact,
        ", " + health if summary[health_key] else "", summary["labels"])
    return summary


# The member_join role's registered step results per manager, in the order hub-side member object, agent.
JOIN_RESULTS = {
    "rancher_fleet": ("member_join__fleet_cluster", "member_join__fleet_agent"),
    "kubefleet": ("member_join__kf_cluster", "member_join__kf_agent"),
}
LEAVE_RESULTS = {
    "kubefleet": {"member_cluster": "member_leave__kf_cluster", "agent": "member_leave__kf_agent",
                  "identity": "member_leave__kf_identity"},
    "rancher_fleet": {"agent": "member_leave__fleet_agent", "cluster": "member_leave__fleet_cluster",
                      "tokens": "member_leave__fleet_tokens"},
}


def _registered(host_vars, name):
    value = host_vars.get(name) if hasattr(host_vars, "get") else None
    return value if isinstance(value, dict) else {}


def join_summary(member_info, host_vars, check_mode=False):
    """The member's join summary: per manager what it needed, what the run did, and one line for the play's output.

    ``member_info`` is the member_info result; ``host_vars`` the member's variables, holding the role's registered
    step results under the names in ``JOIN_RESULTS``.
    """
    results = dict((manager, [_registered(host_vars, name) for name in names]) for manager, names in JOIN_RESULTS.items())
    host = host_vars.get("inventory_hostname")
    name = member_info.get("name")
    summary = {"cluster": name}
    lines = []
    for manager, state in sorted((member_info.get("managers") or {}).items(), key=lambda item: item[0] != "rancher_fleet"):
        state = dict(state, name=name)
        summary[manager] = _manager_summary(manager, state, {"steps": results.get(manager) or [], "check_mode": check_mode})
        lines.append(summary[manager]["line"])
    summary["line"] = "%s: %s" % (host or name, " | ".join(lines) if lines else "failed before a summary")
    return summary


def _removed(pairs):
    return ", ".join(name for name, done in pairs if done) or "nothing left to remove"


def _kept(agent_result):
    """What a Rancher Fleet leave could not remove: the agent namespace, with what it was kept for."""
    kept_for = agent_result.get("namespace_kept_for") or []
    return ["namespace %s (kept for %s)" % ((agent_result.get("release") or {}).get("namespace") or "cattle-fleet-system",
                                            ", ".join(kept_for))] if kept_for else []


def leave_summary(host_vars, backends):
    """The member's leave summary from the member_leave role's registered step results (``LEAVE_RESULTS``)."""
    results = dict((manager, dict((step, _registered(host_vars, name)) for step, name in steps.items()))
                   for manager, steps in LEAVE_RESULTS.items() if manager in (backends or []))
    cluster = host_vars.get("member_leave_cluster_name")
    host = host_vars.get("inventory_hostname")
    summary = {"cluster": cluster}
    lines = []
    kube = (results or {}).get("kubefleet")
    if kube is not None:
        member_cluster, agent, identity = (kube.get(k) or {} for k in ("member_cluster", "agent", "identity"))
        summary["kubefleet"] = {"member_cluster_removed": bool(member_cluster.get("changed")),
                                "forced": member_cluster.get("forced") or [], "agent_removed": bool(agent.get("changed")),
                                "identity_removed": bool(identity.get("changed"))}
        forced = summary["kubefleet"]["forced"]
        summary["kubefleet"]["removed_leases"] = agent.get("removed_leases") or []
        lines.append("kubefleet removed: " + _removed([("MemberCluster", member_cluster.get("changed")), ("agent", agent.get("changed")),
                                                       ("identity", identity.get("changed"))])
                     + (" (forced: %s)" % ", ".join(forced) if forced else ""))
    fleet = (results or {}).get("rancher_fleet")
    if fleet is not None:
        agent, cluster_result = fleet.get("agent") or {}, fleet.get("cluster") or {}
        managed = agent.get("fleet_managed_releases") or []
        registrations = len(cluster_result.get("removed_registrations") or [])
        tokens = len((fleet.get("tokens") or {}).get("pruned") or [])
        summary["rancher_fleet"] = {"agent_removed": bool(agent.get("changed")),
                                    "agent_credential_removed": bool(agent.get("removed_credential")),
                                    "managed_agent_releases_removed": managed,
                                    "cluster_removed": bool(cluster_result.get("changed")), "removed_registrations": registrations,
                                    "removed_tokens": tokens, "kept": _kept(agent)}
        lines.append("rancher_fleet removed: " + _removed([
            ("agent", agent.get("changed")), ("agent credential", agent.get("removed_credential")),
            ("Fleet-managed agent release " + ", ".join(managed), managed), ("Cluster", cluster_result.get("changed")),
            ("%d ClusterRegistration(s)" % registrations, registrations),
            ("%d registration token(s) of a failed join" % tokens, tokens)])
            + ("; kept: %s" % ", ".join(summary["rancher_fleet"]["kept"]) if summary["rancher_fleet"]["kept"] else ""))
    summary["line"] = "%s: %s" % (host or cluster, " | ".join(lines) if lines else "failed before a summary")
    return summary


class FilterModule:
    """fleetops.registration summary filters."""

    def filters(self):
        return {"join_summary": join_summary, "leave_summary": leave_summary}
