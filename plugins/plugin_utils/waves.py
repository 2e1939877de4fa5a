# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Agent upgrades in waves (playbook upgrade_agents.yml): which agent release each member ran before the run, and
what the run left on each member - upgraded, unchanged, rolled back, failed, or untouched - decided here, not in Jinja."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.fleetops.registration.plugins.module_utils import registry

RELEASE_KEYS = ("name", "namespace", "chart", "chart_version", "revision", "status")
NOTHING_TO_ROLL_BACK = "nothing to roll back (as before the run)"
# The playbook's note of why a member failed (upgrade_agents.yml's rescue).
FAILURE = "upgrade_agents__failure"


def _release(release):
    """The fields of a release the summary shows (never its values), or None."""
    if not isinstance(release, dict) or not release.get("revision"):
        return None
    return dict((key, release.get(key)) for key in RELEASE_KEYS)


def agent_releases(member_state):
    """``{manager: release}`` of the agent releases a member runs, from its member_info entry (the member_join role's
    read before any step): what a rollback returns to. Managers whose agent is not installed are left out. A release
    carries what else its manager's rollback returns to (``FleetManager.rollback_context``: Rancher Fleet's
    ``agent_fields``, what Fleet deploys an agent it manages from)."""
    found = {}
    for manager, state in sorted(((member_state or {}).get("managers") or {}).items()):
        release = _release(((state or {}).get("member") or {}).get("release"))
        if release is not None and release.get("status") == "deployed":
            hub = (state or {}).get("hub")
            release.update(registry.manager(manager).rollback_context(hub if isinstance(hub, dict) else {}))
            found[manager] = release
    return found


def _version(release):
    return "%s %s (revision %s)" % (release.get("chart"), release.get("chart_version"), release.get("revision")) if release else "none"


def _after_success(manager, before, summary):
    after = _release(((summary or {}).get(manager) or {}).get("release")) or before
    if before is None:
        return "installed" if after else "unchanged", after
    return ("upgraded" if after and after.get("revision") != before.get("revision") else "unchanged"), after


def _after_failure(manager, before, rollback):
    if before is None:
        return "failed (no earlier release to roll back to)", None
    if not isinstance(rollback, dict) or rollback.get("skipped") or not rollback:
        return "failed, NOT rolled back", None
    if rollback.get("failed"):
        return "failed, rollback failed: %s" % rollback.get("msg", ""), _release(rollback.get("release"))
    after = _release(rollback.get("release")) or before
    if not rollback.get("changed"):
        return NOTHING_TO_ROLL_BACK, after
    restored = rollback.get("restored_agent_fields")
    if restored:
        # An agent Fleet manages: the module returns only once Fleet redeployed it with the fields and it checked in.
        return "rolled back (the Cluster's %s restored, the agent redeployed by Fleet)" % ", ".join(restored), after
    return "rolled back", after


def wave_result(host_vars, failure=None):
    """What the run left on one member: per manager its ``before`` and ``after`` release and the ``outcome``, the
    member's overall ``outcome`` and one ``line``. ``host_vars``: the member's variables after the member_join role
    (``member_join_releases_before``, ``member_join_summary``, the rollback results, and the playbook's note of why
    the member failed, ``upgrade_agents__failure``); ``failure``: why the member failed (then its agents were rolled
    back), when not that note; None for both when it passed."""
    failure = failure if failure is not None else host_vars.get(FAILURE)
    befores = host_vars.get("member_join_releases_before") or {}
    summary = host_vars.get("member_join_summary") or {}
    managers = [name for name in registry.MANAGERS if name in befores or name in summary]
    result = {"cluster": host_vars.get("member_join_cluster_name") or host_vars.get("inventory_hostname"), "managers": {}}
    for manager in managers:
        before = befores.get(manager)
        if failure is None:
            outcome, after = _after_success(manager, before, summary)
        else:
            outcome, after = _after_failure(manager, before, host_vars.get(registry.manager(manager).rollback_result))
        result["managers"][manager] = {"outcome": outcome, "before": before, "after": after}
    outcomes = [item["outcome"] for item in result["managers"].values()]
    if failure is not None:
        back = [o for o in outcomes if o.startswith("rolled back") or o == NOTHING_TO_ROLL_BACK]
        rolled = any(o.startswith("rolled back") for o in outcomes)
        result["outcome"] = "rolled back" if rolled and len(back) == len(outcomes) else "failed"
        result["failure"] = failure
    else:
        result["outcome"] = "upgraded" if any(o in ("upgraded", "installed") for o in outcomes) else "unchanged"
    parts = ["%s %s: %s, before the run %s" % (manager, item["outcome"], _version(item["after"]), _version(item["before"]))
             for manager, item in result["managers"].items()]
    result["line"] = "%s: %s%s" % (result["outcome"], "; ".join(parts) or "no agent release",
                                   " - %s" % failure if failure is not None else "")
    return result


def wave_summary(hosts, hostvars, key="upgrade_agents_result", lines=False):
    """``{host: result}`` for every member of the play: its ``wave_result`` (under ``key``), else ``untouched`` (in
    no batch yet, or in a later batch than the one that stopped the rollout); with ``lines`` ``{host: line}``."""
    summary = {}
    for host in hosts:
        result = (hostvars[host] if host in hostvars else {}).get(key)
        summary[host] = result if isinstance(result, dict) else {
            "outcome": "untouched", "line": "untouched: not reached by this run (a later batch, or stopped by an earlier one)"}
    return dict((host, result["line"]) for host, result in summary.items()) if lines else summary
