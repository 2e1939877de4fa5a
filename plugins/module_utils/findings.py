# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Findings: the one judgement of a member, shared by every fleet manager.

Each manager has ONE rule table (``_kubefleet/judge.py``, ``_rancher_fleet/judge.py``): rows of
``Rule(cause, action, when, fix)``. ``judge(rules, hub_view, member_view, desired)`` applies every row and returns the
findings ``[{cause, evidence, action, fix}]``, root cause first. Everything else is a function of the findings, here:

- the action a member needs is the most urgent finding's (``pick_action``, ACTIONS order) - one algorithm for all
  managers;
- the reasons are the evidence of the findings a plain re-run acts on, most urgent first;
- ``healthy`` is "no finding that needs a repair": every finding's action only maintains a healthy member
  (``MAINTENANCE_ACTIONS``). A finding with the action ``none`` is a problem no re-run repairs (the operator must act),
  so it makes the member unhealthy too. ``member_info``, ``fleet_status``, the inventory plugin and the summaries all
  use ``healthy`` from here.

To add a cause: name it in ``CAUSES`` (where it stands among the root causes), add a ``Rule`` row to the manager's
table, document it in docs/day2.md and member_info's DOCUMENTATION (tests/unit/test_findings_docs.py compares them),
and add a row to the manager's table test.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Callable, Dict, Iterable, List, Optional, Union

Finding = Dict[str, str]

# The actions a member may need, most urgent first: the order a role applies them, and the order pick_action ranks them.
ACTIONS = ("none", "join", "reregister", "install", "upgrade", "rotate", "reconfigure", "relabel")
# Actions that keep a healthy member in the shape the inventory wants: their findings do not make it unhealthy.
MAINTENANCE_ACTIONS = ("rotate", "reconfigure", "relabel")

# Every cause, root causes first (a wrong CA makes the agent crash-loop too, and the CA is what to fix): the order of a
# diagnosis. Causes only a change the inventory asks for (drift, rotation, quarantine) come last.
CAUSES = (
    "not_member", "leaving", "registration_gone", "identity_gone", "cluster_replaced", "cluster_namespace", "agent_missing",
    "release_not_deployed", "bootstrap_missing",
    "credential_missing", "credential_unusable", "wrong_hub", "token_expired", "hub_ca_untrusted", "hub_unreachable",
    "credential_rejected", "wrong_identity", "not_joined", "agent_config_drift", "image_pull", "unschedulable", "pod_rejected",
    "mount_failed", "crash_loop", "pending", "agent_unavailable", "not_rolled_out", "hub_reports", "never_checked_in", "silent", "forced",
    "chart_version", "values_drift", "image_drift", "rotation_due", "identity_moves",
    "release_records_move", "settings_drift", "labels_drift", "spec_drift", "quarantined",
    "identity_unrecorded",
)
MAX_EVIDENCE = 400
# What a member view lists in ``unread`` when the member credential may not read the member's Secrets (a view role):
# Helm's release records and the agents' credentials, so no row that reads them is applied.
SECRETS = "secrets"


def finding(cause: str, evidence: str, action: str, fix: str) -> Finding:
    if cause not in CAUSES:
        raise ValueError("unknown cause %r" % cause)
    if action not in ACTIONS:
        raise ValueError("unknown action %r" % action)
    text = " ".join(str(evidence).split())
    return {"cause": cause, "evidence": text if len(text) <= MAX_EVIDENCE else text[:MAX_EVIDENCE] + "...", "action": action, "fix": fix}


Evidence = Union[None, str, Iterable[str]]


class Rule:
    """One row of a manager's rule table: ``when(hub, member, desired)`` gives the evidence (a string, a list of
    strings - one finding each - or nothing); ``fix`` is a string or ``fix(hub, member, desired)``. ``hub`` is the hub
    view (None: the hub has no object for the member), ``member`` the member view ({} when the member was not read),
    ``desired`` what the inventory wants (``now`` and ``stale_after`` among it). ``reads``: the evidence the row
    needs from the member (``secrets``); a member view that lists it in ``unread`` could not read it, so the row is not
    applied (its absence is not evidence)."""

    def __init__(self, cause: str, action: str, when: Callable[..., Evidence], fix: Union[str, Callable[..., str]],
                 reads: Optional[str] = None) -> None:
        if cause not in CAUSES or action not in ACTIONS:
            raise ValueError("unknown cause %r or action %r" % (cause, action))
        self.cause, self.action, self.when, self.fix, self.reads = cause, action, when, fix, reads

    def apply(self, hub: Optional[Dict[str, Any]], member: Dict[str, Any], desired: Dict[str, Any]) -> List[Finding]:
        evidence = self.when(hub, member, desired)
        if not evidence:
            return []
        fix = self.fix(hub, member, desired) if callable(self.fix) else self.fix
        return [finding(self.cause, text, self.action, fix) for text in ([evidence] if isinstance(evidence, str) else evidence) if text]


def judge(rules: Iterable[Rule], hub: Optional[Dict[str, Any]], member: Optional[Dict[str, Any]],
          desired: Optional[Dict[str, Any]]) -> List[Finding]:
    """Every row's findings, root cause first (the rows' own order among findings of one cause). A row that reads
    what the member view lists as ``unread`` is skipped."""
    found, unread = [], (member or {}).get("unread") or ()
    for rule in rules:
        if getattr(rule, "reads", None) not in unread:
            found += rule.apply(hub, member or {}, desired or {})
    return in_order(found)


def in_order(findings: Iterable[Finding]) -> List[Finding]:
    return sorted(findings, key=lambda item: CAUSES.index(item["cause"]) if item["cause"] in CAUSES else len(CAUSES))


def ordered(findings: Iterable[Finding]) -> List[Finding]:
    """One finding per cause (the first given), root causes first."""
    seen, kept = set(), []
    for item in findings:
        if item["cause"] not in seen:
            seen.add(item["cause"])
            kept.append(item)
    return in_order(kept)


def pick_action(findings: Iterable[Finding]) -> str:
    """The most urgent action of the findings (ACTIONS order), ``none`` when no finding has one."""
    return min((item["action"] for item in findings if item["action"] != "none"), key=ACTIONS.index, default="none")


def reasons(findings: Iterable[Finding]) -> List[str]:
    """The evidence of the findings a plain re-run acts on, most urgent action first."""
    acted = [item for item in findings if item["action"] != "none"]
    return [item["evidence"] for item in sorted(acted, key=lambda item: ACTIONS.index(item["action"]))]


def needs_repair(item: Finding) -> bool:
    """A finding that makes the member unhealthy: anything but a maintenance action (a finding with the action
    ``none`` is one no re-run repairs)."""
    return item["action"] not in MAINTENANCE_ACTIONS


def healthy(findings: Iterable[Finding]) -> bool:
    """THE meaning of healthy: no finding that needs a repair."""
    return not any(needs_repair(item) for item in findings)


def problems(findings: Iterable[Finding]) -> List[Finding]:
    """The findings that make the member unhealthy, root cause first."""
    return [item for item in findings if needs_repair(item)]


def evidence(findings: Iterable[Finding], cause: str) -> Optional[str]:
    """The evidence of the first finding of ``cause`` (None: there is none)."""
    return next((item.get("evidence") for item in findings if item.get("cause") == cause), None)


def first(findings: Optional[Iterable[Finding]]) -> Optional[Finding]:
    """The first finding, for a table or a summary line (None when there is none)."""
    findings = list(findings or [])
    return findings[0] if findings else None


# The causes a status table names a member by (FleetManager.status_row turns the first of them into its own word); a
# member with none of them is in contact with its hub, or waiting for its agent.
STATUS_CAUSES = ("leaving", "cluster_namespace", "never_checked_in", "not_joined", "silent", "quarantined")
# The inventory's health groups, worst first, and the causes that put a member in each; a member that findings.healthy
# calls unhealthy with none of these causes is "unhealthy".
HEALTH_GROUPS = ("leaving", "not_joined", "stale", "unhealthy", "healthy")
HEALTH_GROUP_OF_CAUSE = {"leaving": "leaving", "never_checked_in": "not_joined", "not_joined": "not_joined", "silent": "stale"}


def status_cause(findings: Iterable[Finding]) -> Optional[str]:
    """The first of STATUS_CAUSES the findings name, root cause first (None: none of them)."""
    return next((item["cause"] for item in in_order(findings) if item["cause"] in STATUS_CAUSES), None)


def health_group(findings: Iterable[Finding]) -> str:
    """The inventory's health group of one manager's findings: ``healthy`` by ``healthy``, else the worst group a
    problem's cause names, else ``unhealthy``."""
    findings = list(findings)
    if healthy(findings):
        return "healthy"
    groups = [HEALTH_GROUP_OF_CAUSE.get(item["cause"], "unhealthy") for item in problems(findings)]
    return min(groups, key=HEALTH_GROUPS.index)


def worst_group(groups: Iterable[str]) -> str:
    """The worst of several managers' health groups (HEALTH_GROUPS order): a member's one group."""
    return min(groups, key=HEALTH_GROUPS.index, default="healthy")
