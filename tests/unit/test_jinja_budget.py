"""Decisions live in Python: the roles and playbooks keep their Jinja small (issue 7's budget).

Counted: the expression inside every ``{{ }}``/``{% %}`` (delimiters and surrounding blanks left out) in role and
playbook YAML, defaults and templates, plus the bare expressions of ``when``, ``that``, ``until``, ``changed_when`` and
``failed_when``.
"""

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
TEMPLATED = re.compile(r"{{-?(.*?)-?}}|{%-?(.*?)-?%}", re.S)
BARE_KEYS = ("when", "that", "until", "changed_when", "failed_when")
# 6,000 when issue 7 closed (from 19,897); predefine_clusters.yml (issue 9) added ~400 characters of plumbing only
# (the hub connection, the group, a guard per manager), so the budget moved once, to 6,500. member_join's batch read
# (issue 9: one member_info per play batch) added ~100 more, the hosts of the batch and each host's entry. Issue 20
# added ~230 of plumbing: ", true" in each default's fallback (blank strings as AWX injects them count as unset) and
# the calls of requested_backends (which managers a run needs, decided in Python), so the budget moved to 6,950.
# Then ~300 for a member that names no fleet manager (issue 20, item 2): each role passes backend_request's
# ``detect`` on to its module, and member_leave reads once per batch what the hub serves - so 7,300. The call that puts
# member_join's errors in the inventory's words (issue 19, the wording decided in Python) made it 7,350. The per-member
# hub lock (issue 19, item 1; which members to lock and when to read one again are decided in member_lock) added ~940
# of plumbing to both roles: the batch's requests, the lock and release tasks with their guards, who runs the run, and
# member_leave's note of each member and its check of the member's lock, and the lock each step may renew - so 8,400.
# member_join's rescue that names the variable behind a later step's failed option (issue 19, item 3), and the lock's
# release for the hosts that failed out of the batch, made it 8,600; the cluster identity passed to the hub-side steps
# (issue 19, item 2), 8,900.
# Quarantine on join (issue 17, item 5; what is verified and when the taint is added, kept or lifted are decided in
# Python) added ~250: the variable's default, the module option's value and the lift step's guard (which also lifts a
# member left quarantined by an earlier run, after its agent step) - so 9,200. Credential rotation (issue 17, item 2;
# when a token is due, which Secret is current and what is revoked are decided in Python) added ~200: the two
# variables' defaults, passing them to member_info, and the rotate and revoke guards - so 9,400.
# Agent upgrades in waves (issue 17, item 4; what a batch did to each member and whether a release goes back is decided
# in the waves filters and ReleasePlan.rollback) added ~950 of plumbing: the agent values member_info now compares
# (~100), member_join's rollback entry point with its connection defaults and a guard per manager (~420) and the
# playbook's batch sizes, failure note and summary calls (~430) - so 10,350.
# The agent setting (issue 17, item 1; its rendering and drift are decided in agent_settings.py) added ~75: the
# variable's default and passing it to member_info and the three agent steps - so 10,450.
# Issue 32 (item 7) brought it back below 6,000: the roles' settings and each step's module arguments come from one
# table in Python (plugin_utils/role_wiring.py, worked out by the action step_args), which also decides the quarantine
# lift and the inventory check; the roles' defaults keep only fixed values.
# Issues 33 and 34 (a healthy member ends member_join after the batch's read, move_hub.yml) fitted within it: the
# roles are pointed at each hub from Python and step_args reads member_lock's result itself - so 5,792. Then 5,760;
# step_args reading the batch's states by name and a first KubeFleet token revoking the older ones at once - 5,743.
# join_cluster.yml's one summary debug per batch (issue 33: not a task per member) fitted within it, paid for by
# inventory_terms and join_summary reading what they need from the rescue's variables and the member's own - 5,738.
# Issue 49 (item 3: bad values refused first, decided in plugin_utils/role_values.py) moved member_leave's inventory
# check into its first step_args task (-59) and gave predefine_clusters.yml's names the fleet managers' rules (+44) - 5,722.
# Issue 47's join step that lets a leaving MemberCluster's agent acknowledge the leave (+31) was paid for by member_info
# deciding whether the batch needs the lock (lock_needed, -37) - 5,716.
TOTAL_BUDGET = 5716
LONGEST = 120


def _files():
    for top in ("roles", "playbooks"):
        for path in sorted((REPO / top).rglob("*")):
            if path.suffix in (".yml", ".yaml", ".j2") and path.is_file():
                yield path


def _bare(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in BARE_KEYS:
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, str) and "{{" not in item:
                        yield item
            else:
                yield from _bare(value)
    elif isinstance(node, list):
        for item in node:
            yield from _bare(item)


def expressions():
    found = []
    for path in _files():
        text = path.read_text()
        found += [(path, "".join(groups).strip()) for groups in TEMPLATED.findall(text)]
        if path.suffix != ".j2" and "argument_specs" not in path.name:
            found += [(path, item) for item in _bare(yaml.safe_load(text))]
    return found


def test_jinja_in_roles_and_playbooks_stays_within_budget():
    found = expressions()
    total = sum(len(text) for dummy, text in found)
    assert total <= TOTAL_BUDGET, "roles and playbooks hold %d characters of Jinja (budget %d)" % (total, TOTAL_BUDGET)


def test_no_single_jinja_expression_is_long():
    long_ones = ["%s: %s" % (path.relative_to(REPO), text[:80]) for path, text in expressions() if len(text) > LONGEST]
    assert not long_ones, "expressions over %d characters: %s" % (LONGEST, long_ones)
