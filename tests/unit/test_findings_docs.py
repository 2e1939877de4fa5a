# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Docs from one source: the causes and actions the code defines are the ones docs/day2.md and member_info's
DOCUMENTATION name - each cause's action per fleet manager included."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import yaml

from ansible_collections.fleetops.registration.plugins.module_utils import cluster_identity, diagnosis, findings
from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import CredentialRules
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import judge as kf_judge
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import judge as rf_judge
from ansible_collections.fleetops.registration.plugins.modules import member_info

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLUMNS = {"kubefleet": 2, "rancher_fleet": 3}


def code_actions(module):
    """``{cause: {actions}}`` a manager can give: its rule table's rows, the causes the agent's pods show (none) and
    the cluster identity's."""
    found = {}
    for rule in module.RULES:
        pairs = rule.actions.items() if isinstance(rule, CredentialRules) else [(rule.cause, rule.action)]
        for cause, action in pairs:
            found.setdefault(cause, set()).add(action)
    for cause in diagnosis.EXPLAINED_CAUSES:
        found.setdefault(cause, set()).add("none")
    for cause, action in cluster_identity.CAUSES.items():
        found.setdefault(cause, set()).add(action)
    return found


def day2_table():
    """``[(cause, kubefleet cell, rancher_fleet cell)]`` of docs/day2.md's cause table."""
    with open(os.path.join(ROOT, "docs", "day2.md")) as handle:
        text = handle.read()
    rows = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 5 and re.match(r"^`[a-z_]+`$", cells[0]):
            rows.append(cells)
    return rows


def test_every_cause_the_code_knows_is_in_the_table_in_the_code_s_order():
    documented = [row[0].strip("`") for row in day2_table()]
    assert documented == list(findings.CAUSES)


def test_day2_gives_each_cause_the_action_each_manager_takes():
    rows = dict((row[0].strip("`"), row) for row in day2_table())
    for name, module in (("kubefleet", kf_judge), ("rancher_fleet", rf_judge)):
        actions = code_actions(module)
        for cause, row in rows.items():
            cell = row[COLUMNS[name]]
            documented = set(re.findall(r"`([a-z]+)`", cell))
            assert documented == actions.get(cause, set()), (name, cause, cell, actions.get(cause))
            assert (cell == "-") == (cause not in actions), (name, cause, cell)
            assert documented <= set(findings.ACTIONS)
        assert set(actions) <= set(rows), (name, set(actions) - set(rows))


def member_info_docs():
    return yaml.safe_load(member_info.DOCUMENTATION), yaml.safe_load(member_info.RETURN)


def test_member_info_names_every_cause_and_every_action():
    documentation, returned = member_info_docs()
    managers = " ".join(returned["managers"]["description"])
    causes_text = managers[managers.index("Causes"):managers.index("It is read from")]
    assert re.findall(r"C\(([a-z_]+)\)", causes_text) == list(findings.CAUSES)
    description = " ".join(documentation["description"])
    named = set(re.findall(r"C\(([a-z]+)\)", description))
    assert set(findings.ACTIONS) <= named, set(findings.ACTIONS) - named
    assert "C(findings)" in managers and set("C(%s)" % action for action in findings.MAINTENANCE_ACTIONS) <= set(
        re.findall(r"C\([a-z]+\)", " ".join(returned["healthy"]["description"])))


def test_member_info_does_not_say_fleet_rotation_is_unsupported():
    """docs/day2.md documents (and tests/integration/test_playbooks.py runs) a Rancher Fleet credential rotation."""
    documentation, _returned = member_info_docs()
    text = " ".join(documentation["options"]["credential_max_age"]["description"])
    assert "not supported" not in text and "registers again" in text
