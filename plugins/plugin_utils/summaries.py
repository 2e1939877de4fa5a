# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-member summaries of the join and leave roles, from module results (no state machine in Jinja)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import placement_guard, registry
from ansible_collections.fleetops.registration.plugins.module_utils.findings import SECRETS, first

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
    if action == "rotate":
        return "would rotate its credential" if check_mode else "credential rotated" if _ran(agent) else "unchanged"
    if action == "reconfigure":
        return "would be reconfigured" if check_mode else "reconfigured" if _ran(agent) else "unchanged"
    if action not in AGENT_STEPS:
        return "unchanged"
    if check_mode:
        return "would %s" % {"join": "register", "reregister": "re-register"}.get(action, action)
    if not _ran(agent):
        return "unchanged"
    if action == "reregister":  # only what the step did: an agent step that changed nothing re-registered nothing
        return "re-registered (%s)" % "; ".join(state.get("reasons") or ["credential replaced"]) if agent.get("changed") else "unchanged"
    if action == "join":  # an agent already installed joins a new member object by itself
        return "registered" if agent.get("changed") else "unchanged"
    if agent.get("changed") and agent.get("repaired") and agent.get("reasons") == [agent["repaired"]]:
        return "repaired (%s)" % agent["repaired"]  # no Helm change: the Deployment rolled out again (restart, replica)
    return "%sed" % action.rstrip("e") if agent.get("changed") else "unchanged"


def _with_leave_repair(outcome, leave, check_mode):
    """The agent outcome with what the step before the member object was made again did to the agent (KubeFleet's
    finish_leave: its Deployment made again, its replica back, a restart) so that it acknowledged an earlier leave."""
    repaired = leave.get("repaired") if _ran(leave) and not check_mode else None
    if not repaired:
        return outcome
    return "repaired (%s)" % repaired if outcome == "unchanged" else "%s, and earlier repaired (%s)" % (outcome, repaired)


def _latest_view(state, results, key):
    """What the hub says after the run: the last result that carries a view, else member_info's."""
    for result in reversed(results):
        if _ran(result) and isinstance(result.get(key), dict):
            return result[key]
    return state.get("hub") or {}


def _agent_release(state, agent):
    """The agent release after the run (name, chart, chart_version, revision, status; never its values): the agent
    step's, else the one member_info found."""
    release = agent.get("release") if _ran(agent) and isinstance(agent.get("release"), dict) else (state.get("member") or {}).get("release")
    if not isinstance(release, dict):
        return None
    return dict((key, release.get(key)) for key in ("name", "namespace", "chart", "chart_version", "revision", "status"))


def _healthy(state, view, health_key, results):
    """Whether the member is healthy: member_info's judgement (``findings.healthy``, the one the modules and the
    inventory use) while no step changed it, else what the hub's view after the steps shows."""
    if "healthy" in state and not any(_ran(result) for result in results):
        return bool(state["healthy"])
    return bool(view.get(health_key))


def _manager_summary(manager, state, results):
    """One manager's part of the join summary: what it needed, what the run did, what the hub sees now, one line."""
    shape = registry.manager(manager).summary_shape
    cluster_result, agent_result, leave_result = (list(results["steps"]) + [{}, {}, {}])[:3]
    view = _latest_view(state, [cluster_result, agent_result], shape["view"])
    outcome = _agent_outcome(state, agent_result, results["check_mode"])
    if shape["changed_agent"] and outcome in ("registered", "installed", "upgraded"):
        outcome = shape["changed_agent"]
    outcome = _with_leave_repair(outcome, leave_result, results["check_mode"])
    (object_key, name_of), (contact_key, contact), (health_key, health) = shape["object"], shape["contact"], shape["health"]
    summary = {object_key: name_of(state, view), "action": state.get("action"), "reasons": state.get("reasons") or [],
               "agent": outcome, contact_key: view.get(contact_key), health_key: view.get(health_key),
               "labels": _label_drift([cluster_result])}
    spec = cluster_result.get("spec_changes") if _ran(cluster_result) else None
    if spec:
        summary["spec"] = spec
    summary.update(shape["extra"](view))
    summary["release"] = _agent_release(state, agent_result)
    summary["healthy"] = _healthy(state, view, health_key, [cluster_result, agent_result])
    removed = agent_result.get("workloads_removed") if _ran(agent_result) else None
    if removed:
        summary["workloads_removed"] = removed
    summary["workloads"] = _running(state)
    cause = first(state.get("diagnosis"))
    summary["cause"] = cause
    summary["line"] = "%s %s: agent %s, %s%s; labels %s%s%s%s%s%s" % (
        manager, summary[object_key], outcome, contact if summary[contact_key] else "not " + contact,
        ", " + health if summary["healthy"] else "", summary["labels"], "; %s" % ", ".join(spec) if spec else "",
        "; %s %s: %s" % ("cause" if results["check_mode"] else "cause found before the run", cause["cause"], cause["evidence"])
        if cause else "", _running_text(summary["workloads"]), placement_guard.removal_allowed(removed) if removed else "",
        UNREAD_TEXT if SECRETS in ((state.get("member") or {}).get("unread") or ()) else "")
    return summary


# A member read without its Secrets (member_info's member.unread): the judgement rests on the rest, and the line says so.
UNREAD_TEXT = "; its release and agent credential not checked (the member credential may not read Secrets)"


def _running(state):
    """The placements whose workloads the agent ran on the member when member_info read it (before the run's steps):
    sorted names, None when the credential could not read them."""
    rows = (state.get("member") or {}).get("workloads")
    return None if rows is None else sorted(set(row["placement"] for row in rows))


def _running_text(placements, shown=5):
    if not placements:
        return ""
    more = len(placements) - shown
    return "; runs %s%s" % (", ".join(placements[:shown]), " and %d more" % more if more > 0 else "")


def _registered(host_vars, name):
    value = host_vars.get(name) if hasattr(host_vars, "get") else None
    return value if isinstance(value, dict) else {}


def join_summary(member_info, host_vars, check_mode=None):
    """The member's join summary: per manager what it needed, what the run did, and one line for the play's output.

    ``member_info`` is the member_info result; ``host_vars`` the member's variables, holding the role's registered
    step results under the names each manager's ``join_results`` gives, and ``ansible_check_mode`` unless
    ``check_mode`` says it.
    """
    if check_mode is None:
        check_mode = bool(host_vars.get("ansible_check_mode"))
    host = host_vars.get("inventory_hostname")
    name = member_info.get("name")
    summary = {"cluster": name}
    lines = []
    states = member_info.get("managers") or {}
    for manager in [name for name in registry.MANAGERS if name in states]:
        steps = [_registered(host_vars, result) for result in registry.manager(manager).join_results]
        summary[manager] = _manager_summary(manager, dict(states[manager], name=name), {"steps": steps, "check_mode": check_mode})
        lines.append(summary[manager]["line"])
    summary["line"] = "%s: %s" % (host or name, " | ".join(lines) if lines else "failed before a summary")
    return summary


def leave_summary(host_vars, backends):
    """The member's leave summary from the member_leave role's registered step results (each manager's
    ``leave_results``), its managers in the order the role leaves them (the join's, reversed)."""
    cluster = host_vars.get("member_leave_cluster_name")
    host = host_vars.get("inventory_hostname")
    summary = {"cluster": cluster}
    lines = []
    for name in reversed([name for name in registry.MANAGERS if name in (backends or [])]):
        manager = registry.manager(name)
        results = dict((step, _registered(host_vars, result)) for step, result in manager.leave_results.items())
        summary[name], line = manager.leave_summary(results)
        lines.append(line)
    summary["line"] = "%s: %s" % (host or cluster, " | ".join(lines) if lines else "failed before a summary")
    return summary
