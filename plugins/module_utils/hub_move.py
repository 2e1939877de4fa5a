# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Moving a member from its hub to a new one (playbook move_hub.yml): where the move of each fleet manager stands, when
the new hub has taken the member over, and what the run did to it. Pure decisions; hub_move_check.py reads the hubs.

A member's agent talks to one hub per manager, so the move re-points it (member_join against the new hub) while the
old hub still has the member, waits until the new hub has taken it over (``settled``), and only then removes the old
hub's objects, hub-side only (member_leave with its agents kept): until then the old hub is the way back.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import placement_guard
from ansible_collections.fleetops.registration.plugins.module_utils.findings import SECRETS

# Where one manager's move stands, from what each hub has of the member.
NOT_MEMBER = "not_member"   # neither hub has it: nothing to move in this manager
MOVE = "move"               # only the old hub has it: join the new hub, check, leave the old one
FINISH = "finish"           # both hubs have it (a move under way, or stopped midway): the same steps finish it
VERIFY = "verify"           # only the new hub has it, not yet taken over: join (repairs) and check
MOVED = "moved"             # only the new hub has it, taken over: nothing to do

# The member's outcome in the run's summary.
OUTCOMES = ("moved", "moved back", "failed", "untouched")


def manager_phase(old_present, new_present, settled):
    """The phase of one manager's move (see the constants above)."""
    if not old_present and not new_present:
        return NOT_MEMBER
    if old_present:
        return FINISH if new_present else MOVE
    return MOVED if settled else VERIFY


def unapplied(placements):
    """``["name: why"]`` of the placements (``{name, applied, message}``) the new hub does not report applied."""
    return ["%s: %s" % (item["name"], item.get("message") or "not applied yet")
            for item in placements if not item.get("applied")]


def takeover_problems(new_present, new_healthy, new_problem, placements, old_names):
    """Why the new hub has not taken one manager's member over yet (empty: it has). It has when the new hub has the
    member, judges it healthy, reports each of its own placements applied on it, and places everything the old hub
    still places there (same names: the new hub's objects adopt what the old hub's put on the member)."""
    if not new_present:
        return ["the new hub has no object for the member"]
    problems = [] if new_healthy else ["the new hub does not judge the member healthy%s" % (": %s" % new_problem if new_problem else "")]
    problems += ["placement %s" % text for text in unapplied(placements)]
    missing = sorted(set(old_names or ()) - set(item["name"] for item in placements))
    if missing:
        problems.append("the old hub places %s on the member, the new hub does not (the same names must exist there, or "
                        "the workloads would lose their manager)" % ", ".join(missing))
    return problems


def plan(managers, old_hub_lost=False):
    """The member's move from each manager's reading ``{manager: {old_present, new_present, settled}}``: per manager its
    ``phase``, the managers the member joins on the new hub (``join``), those it leaves on the old (``leave``), and the
    member's ``phase`` - ``not_member`` (no manager has it), ``moved`` (nothing left to do) or ``move``.

    ``old_hub_lost``: the old hub cannot be reached (an evacuation); ``old_present`` then says that the member's agent of
    that manager runs (read from the member). Nothing is left there: ``leave`` is empty and ``left_on_old_hub`` names
    the managers whose objects stay on the old hub, for a later move with it back (or leave_cluster.yml) to remove."""
    phases = dict((name, manager_phase(item.get("old_present"), item.get("new_present"), item.get("settled")))
                  for name, item in sorted(managers.items()))
    join = [name for name, phase in phases.items() if phase != NOT_MEMBER]
    leave = [name for name, item in sorted(managers.items()) if item.get("old_present")]
    if not join:
        overall = NOT_MEMBER
    elif all(phases[name] == MOVED for name in join):
        overall = MOVED
    else:
        overall = MOVE
    return {"phases": phases, "join": join, "leave": [] if old_hub_lost else leave,
            "left_on_old_hub": leave if old_hub_lost else [], "phase": overall}


def member_outcome(before, failure=None, moved_back=None, removed=None):
    """member_move_outcome, saying what the run allowed the member's agents to remove (``removed``: the guard's
    ``unplaced``) - with fleetops_allow_workload_removal, per workload - and, in an evacuation, what stays on the
    old hub."""
    outcome = member_move_outcome(before, failure, moved_back)
    left = (before or {}).get("left_on_old_hub") if isinstance(before, dict) else None
    if left and outcome["outcome"] != "untouched":
        outcome["left_on_old_hub"] = list(left)
        outcome["line"] += ("; left there: its %s objects of the member (a move_hub.yml run with that hub back, or "
                            "leave_cluster.yml against it, removes them)" % ", ".join(left))
    if removed:
        outcome["removal_allowed"] = list(removed)
        outcome["line"] += placement_guard.removal_allowed(removed, "the new hub")
    return outcome


def member_move_outcome(before, failure=None, moved_back=None):
    """The member's outcome: ``untouched`` (not reached - ``before`` None -, or in no manager's fleet), ``moved`` (its
    move finished, or was already), ``moved back`` (the new hub did not take it over and the move back to the old hub
    worked) or ``failed`` (the move failed and so did the move back); with ``changed`` and a ``line``.

    ``before``: hub_move_info's reading before the move; ``failure``: why the move failed; ``moved_back``: True when
    the move back worked, else why it failed (None: no move back ran)."""
    if not isinstance(before, dict):
        return {"outcome": "untouched", "changed": False,
                "line": "untouched: not reached by this run (a later batch, or stopped by an earlier one)"}
    join = ", ".join(before.get("join") or [])
    if before.get("phase") == NOT_MEMBER:
        return {"outcome": "untouched", "changed": False,
                "line": "untouched: the member is in no fleet manager on either hub, nothing to move"}
    if failure is None:
        if before.get("phase") == MOVED:
            return {"outcome": "moved", "changed": False, "line": "moved: already on the new hub (%s), nothing to do" % join}
        return {"outcome": "moved", "changed": True,
                "line": "moved: %s on the new hub, its placements applied there; %s" % (join, _old_hub_text(before))}
    if moved_back is True:
        return {"outcome": "moved back", "changed": True, "failure": failure,
                "line": "moved back to the old hub (%s): %s" % (join, failure)}
    why = "the move back failed too: %s" % moved_back if moved_back else "it was not moved back"
    return {"outcome": "failed", "changed": True, "failure": failure, "line": "failed: %s; %s" % (failure, why)}


def lost_hub_options(managers):
    """hub_move_info's options for an evacuation from member_info's ``managers`` (read from the member): the managers
    whose agent runs there and the placements of what each runs. Raises ValueError when an agent runs but what it runs
    could not be read (null ``workloads``): the move could not prove the new hub places it."""
    members = dict((name, state.get("member") or {}) for name, state in managers.items())
    unknown = sorted(name for name, view in members.items() if SECRETS in (view.get("unread") or ()))
    if unknown:
        raise ValueError("whether its %s agent(s) run could not be read (the member credential may not read the member's "
                         "Secrets, where Helm keeps its release records), so the move cannot prove the new hub places what "
                         "they run; run it with the member role of extensions/rbac/member.yml, not the view role" % ", ".join(unknown))
    unread = sorted(name for name, view in members.items() if view.get("release") and view.get("workloads") is None)
    if unread:
        raise ValueError("what its %s agent(s) run could not be read (the member credential may not list Helm's release "
                         "records in every namespace, or AppliedWorks), so the move cannot prove the new hub places it; "
                         "grant those reads (extensions/rbac/member.yml)" % ", ".join(unread))
    return {"old_hub_lost": True, "member_agents": sorted(name for name, view in members.items() if view.get("release")),
            "member_workloads": dict((name, sorted(set(row["placement"] for row in view.get("workloads") or [])))
                                     for name, view in sorted(members.items()))}


def _old_hub_text(before):
    if before.get("leave"):
        return "the old hub's objects removed"
    return "the old hub not reached" if before.get("left_on_old_hub") else "the old hub had nothing of it"


def hub_hosts(groups, new_hub=None, old_hub=None):
    """``(old hub host, new hub host)`` from the inventory: the old hub is ``old_hub`` (the member's
    ``member_join_hub_host``) or the single host of the group ``hub``; the new one ``new_hub`` (``-e
    fleetops_new_hub=<host>``) or the single host of the group ``new_hub``. Raises ValueError saying what to fix."""
    groups = groups or {}
    hubs = groups.get("hub") or []
    old = old_hub or (hubs[0] if len(hubs) == 1 else None)
    if not old:
        raise ValueError("The hub the members move from is unknown: put exactly one host in the inventory group 'hub' "
                         "(the hub they are in now)")
    candidates = groups.get("new_hub") or []
    new = new_hub or (candidates[0] if len(candidates) == 1 else None)
    if not new:
        raise ValueError("The hub to move to is unknown: put exactly one host in the inventory group 'new_hub' (with its "
                         "fleetops_kubeconfig, fleetops_context, fleetops_api_server_url), or name it with "
                         "-e fleetops_new_hub=<host> (found %d hosts in 'new_hub')" % len(candidates))
    if new not in (groups.get("all") or [new]):
        raise ValueError("fleetops_new_hub: %r is no host of the inventory; add it with its fleetops_kubeconfig, "
                         "fleetops_context and fleetops_api_server_url" % new)
    if new == old:
        raise ValueError("fleetops_new_hub: %r is the hub the members are in already; name another hub to move to" % new)
    return old, new


def role_steps(join_hub, leave_hub, join, leave, grace_period):
    """What the roles get for one direction of the move (role_wiring.MOVE_STEP): member_join joins ``join_hub`` (a
    ``{host, kubeconfig, context}``) in the managers ``join``; member_leave leaves ``leave_hub`` in ``leave``, hub-side
    only - the agents stay, they serve ``join_hub`` now - and forces the KubeFleet leave after ``grace_period``
    seconds (the agent that would acknowledge it talks to the other hub)."""
    def connection(hub):
        return {"hub_host": hub["host"], "hub_kubeconfig": hub.get("kubeconfig") or "", "hub_context": hub.get("context") or ""}
    return {"member_join": dict(connection(join_hub), backends=list(join), detect_backends=False),
            "member_leave": dict(connection(leave_hub), backends=list(leave), detect_backends=False, keep_agents=True,
                                 kubefleet_force=True, kubefleet_force_grace_period=grace_period)}
