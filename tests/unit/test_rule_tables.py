# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each manager's rule table, row by row (every cause, its action, its fix), the one algorithm both share, and one
meaning of healthy for member_info, fleet_status and the inventory plugin (pure)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import datetime

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import findings
from ansible_collections.fleetops.registration.plugins.module_utils.diagnosis import CredentialRules
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_managers import FleetManager
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_status import member_row
from ansible_collections.fleetops.registration.plugins.module_utils.member_state import summarize
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import judge as kf_judge
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.manager import MANAGER as KUBEFLEET
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import judge as rf_judge
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.manager import MANAGER as FLEET
from ansible_collections.fleetops.registration.plugins.plugin_utils import fleet_members

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
_ISSUED = datetime.datetime.now(UTC) - datetime.timedelta(days=1)  # the token's lifetime is judged by the real clock
IDENTITY = {"kind": "ServiceAccount", "name": "east-1-hub-cluster-access", "namespace": "fleet-system", "apiGroup": ""}
CONFIGURED = {"hub_url": "https://hub:6443", "hub_ca_sha256": "a" * 64, "hub_ca_extra": False, "insecure": False,
              "token_secret": "fleet-hub-credentials/hub-kubeconfig-secret", "member_name": "east-1"}
AGENT_POD = {"tolerations": [], "node_selector": {}, "affinity": {}, "priority_class_name": "", "image_pull_secrets": [],
             "containers": [{"name": "agent", "image": "agent:v1", "env": {}, "resources": {}}]}
PROXY = {"env": {"HTTPS_PROXY": "http://proxy:3128"}}

KF_HUB = {"name": "east-1", "labels": {"env": "prod"}, "identity": IDENTITY, "joined": True, "healthy": True, "ready_to_join": True,
          "heartbeat_period_seconds": 15, "leaving": False, "agent_joined": True, "heartbeat": "2026-11-21T09:59:30Z",
          "heartbeat_age_seconds": 30, "heartbeat_stale": False, "quarantined": False, "conditions_false": []}
KF_MEMBER = {
    "release": {"name": "member-agent", "status": "deployed", "chart_version": "0.1.0", "values": {"logVerbosity": 2}},
    "hub_url": "https://hub:6443", "configured": CONFIGURED, "wanted": dict(CONFIGURED), "configured_ca_problem": None,
    "credential": {"name": "hub-kubeconfig-secret", "namespace": "fleet-hub-credentials", "present": True, "accepted": True,
                   "username": "system:serviceaccount:fleet-system:east-1-hub-cluster-access", "problem": None,
                   "issued": _ISSUED.strftime("%Y-%m-%dT%H:%M:%SZ"),
                   "expires": (_ISSUED + datetime.timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")},
    "deployment": {"name": "member-agent", "namespace": "fleet-system", "present": True, "rollout_problem": None, "selector": "app=a"},
    "agent_pod": AGENT_POD,
}
KF_DESIRED = {"labels": {"env": "prod"}, "labels_mode": "merge", "now": NOW}

RF_HUB = {"name": "edge-1", "namespace": "fleet-default", "labels": {"env": "dev"}, "checked_in": True, "last_seen": "2026-11-21T09:59:00Z",
          "seen_age_seconds": 60, "ready": True, "ready_status": "True", "ready_message": None, "deleting": False,
          "cluster_namespace_problem": None, "agent_fields": {}}
RF_MEMBER = {"release": {"name": "fleet-agent", "status": "deployed", "chart_version": "0.16.0"}, "fleet_managed_releases": [],
             "credential": True, "credential_usable": True, "credential_accepted": True, "credential_error": None,
             "credential_server": "https://hub:6443", "expected_server": "https://hub:6443", "credential_expires": None,
             "credential_age_seconds": 60, "bootstrap": False, "deployment": True, "deployment_problem": None, "agent_pod": AGENT_POD}
RF_DESIRED = {"labels": {"env": "dev"}, "labels_mode": "merge", "now": NOW}


def changed(base, changes):
    """``base`` with dotted-path ``changes`` ({"credential.accepted": False}); None for ``changes`` None (no object)."""
    if changes is None:
        return None
    view = copy.deepcopy(base)
    for path, value in changes.items():
        target, keys = view, path.split(".")
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return view


# (cause, action, hub changes (None: no hub object), member changes, desired changes)
KUBEFLEET_ROWS = [
    ("not_member", "join", None, {}, {}),
    ("leaving", "join", {"leaving": True}, {}, {}),
    # the hub still accepts the agent's token for a few seconds after its ServiceAccount is deleted
    ("identity_gone", "reregister", {"identity_present": False}, {}, {}),
    ("leaving", "join", {"leaving": True, "identity_present": False}, {}, {}),
    ("never_checked_in", "join", {"joined": None, "heartbeat": None, "heartbeat_age_seconds": None}, {}, {}),
    ("not_joined", "reregister", {"joined": False}, {}, {}),
    ("hub_reports", "none", {"healthy": False, "conditions_false": ["member agent Healthy=False (Unhealthy): -"]}, {}, {}),
    # after a hub outage: the hub accepts the agent's token, so the agent is restarted, not given a new token
    ("silent", "install", {"heartbeat_age_seconds": 600}, {}, {}),
    ("silent", "reregister", {"heartbeat_age_seconds": 600}, {"credential.accepted": None}, {}),
    ("forced", "reregister", {}, {}, {"force": True}),
    ("agent_missing", "install", {}, {"release": None}, {}),
    ("release_not_deployed", "install", {}, {"release.status": "failed"}, {}),
    ("agent_missing", "install", {}, {"deployment.present": False}, {}),
    ("credential_missing", "reregister", {}, {"credential.present": False}, {}),
    ("token_expired", "reregister", {}, {"credential.accepted": False, "credential.expires": "2026-11-21T09:00:00Z"}, {}),
    ("hub_ca_untrusted", "upgrade", {}, {"credential.accepted": None, "credential.problem": "certificate verify failed"}, {}),
    ("hub_ca_untrusted", "upgrade", {}, {"configured_ca_problem": "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"}, {}),
    ("hub_unreachable", "none", {}, {"credential.accepted": None, "credential.problem": "Connection refused"}, {}),
    ("credential_rejected", "reregister", {}, {"credential.accepted": False, "credential.problem": "Unauthorized"}, {}),
    ("wrong_identity", "reregister", {}, {"credential.username": "system:serviceaccount:fleet-system:other"}, {}),
    ("agent_config_drift", "upgrade", {}, {"configured.hub_url": "https://other:6443"}, {}),
    ("chart_version", "upgrade", {}, {}, {"chart_version": "0.2.0"}),
    ("values_drift", "upgrade", {}, {}, {"values": {"logVerbosity": 5}}),
    ("image_drift", "upgrade", {}, {}, {"images": {"repository": "mirror.example/fleet/member-agent"}}),
    ("rotation_due", "rotate", {}, {}, {"rotate": True}),
    ("identity_moves", "rotate", {}, {}, {"identity_namespace": "fleetops-system"}),
    ("release_records_move", "reconfigure", {}, {"release_moves": "Helm's records of release member-agent (revisions 1) move from "
                                                 "namespace default to fleet-hub-credentials"}, {}),
    ("settings_drift", "reconfigure", {}, {}, {"agent": PROXY}),
    ("spec_drift", "relabel", {}, {}, {"heartbeat_period_seconds": 60}),
    ("spec_drift", "relabel", {"heartbeat_period_seconds": None}, {}, {"heartbeat_period_seconds": 30}),
    ("spec_drift", "relabel", {}, {}, {"taints": [{"key": "gpu", "effect": "NoSchedule"}]}),
    ("spec_drift", "relabel", {"taints": [{"key": "gpu", "value": "", "effect": "NoSchedule"}]}, {}, {"taints": []}),
    ("labels_drift", "relabel", {}, {}, {"labels": {"env": "dev"}}),
    ("quarantined", "relabel", {"quarantined": True}, {}, {}),
    ("agent_unavailable", "install", {}, {"deployment.rollout_problem": "the agent Deployment is scaled to 0 replicas"}, {}),
    ("not_rolled_out", "none", {}, {"deployment.rollout_problem": "the agent Deployment has 1 updated replica of 2"}, {}),
]

RANCHER_FLEET_ROWS = [
    ("not_member", "join", None, None, {}),
    ("leaving", "join", {"deleting": True}, None, {}),
    # it comes with the hub's row (not_member or leaving), whose join is the more urgent action
    ("registration_gone", "reregister", None, {}, {}, {("not_member", "join")}),
    ("registration_gone", "reregister", {"deleting": True}, {}, {}, {("leaving", "join")}),
    ("registration_gone", "reregister", None, {"credential": False, "credential_usable": False}, {},
     {("not_member", "join"), ("bootstrap_missing", "reregister")}),
    ("cluster_namespace", "join", {"cluster_namespace_problem": ["missing", "cluster-fleet-default-edge-1"]}, {}, {}),
    ("never_checked_in", "join", {"checked_in": False, "last_seen": None, "seen_age_seconds": None}, {}, {}),
    ("silent", "reregister", {"seen_age_seconds": 7200}, {}, {}),
    ("hub_reports", "none", {"ready": False, "ready_status": "False", "ready_message": "NotReady(1) [Bundle app]"}, {}, {}),
    ("forced", "reregister", {}, {}, {"force": True}),
    ("agent_missing", "install", {}, {"release": None}, {}),
    ("release_not_deployed", "install", {}, {"release.status": "failed"}, {}),
    ("agent_missing", "install", {}, {"deployment": False}, {}),
    ("bootstrap_missing", "reregister", {}, {"credential": False, "credential_usable": False}, {}),
    ("credential_missing", "reregister", {}, {"credential": False, "credential_usable": False, "bootstrap": True}, {}),
    ("credential_unusable", "reregister", {}, {"credential_usable": False, "credential_accepted": None}, {}),
    ("wrong_hub", "reregister", {}, {"credential_server": "https://elsewhere:6443", "credential_accepted": None}, {}),
    ("token_expired", "reregister", {}, {"credential_accepted": False, "credential_expires": "2026-11-21T09:00:00Z"}, {}),
    ("hub_ca_untrusted", "none", {}, {"credential_accepted": None, "credential_error": "certificate verify failed"}, {}),
    ("hub_unreachable", "none", {}, {"credential_accepted": None, "credential_error": "Connection refused"}, {}),
    ("credential_rejected", "reregister", {}, {"credential_accepted": False, "credential_error": "Unauthorized"}, {}),
    ("chart_version", "upgrade", {}, {}, {"chart_version": "0.17.0"}),
    ("rotation_due", "rotate", {}, {}, {"rotate": True}),
    ("settings_drift", "reconfigure", {}, {}, {"agent": PROXY}),
    ("labels_drift", "relabel", {}, {}, {"labels": {"env": "prod"}}),
    ("agent_unavailable", "install", {}, {"deployment_problem": "the agent Deployment has no available replica"}, {}),
    ("not_rolled_out", "none", {}, {"deployment_problem": "the agent Deployment has 1 updated replica of 2"}, {}),
]

TABLES = {"kubefleet": (KUBEFLEET, kf_judge, KF_HUB, KF_MEMBER, KF_DESIRED, KUBEFLEET_ROWS),
          "rancher_fleet": (FLEET, rf_judge, RF_HUB, RF_MEMBER, RF_DESIRED, RANCHER_FLEET_ROWS)}
CASES = [(name, row) for name, table in TABLES.items() for row in table[-1]]


def table_rows(module):
    """``{(cause, action)}`` the rule table has: its rows, and the credential rows' actions."""
    rows = set()
    for rule in module.RULES:
        rows |= set(rule.actions.items()) if isinstance(rule, CredentialRules) else {(rule.cause, rule.action)}
    return rows


def fixes(module, cause, action):
    """Every fix the table gives ``cause`` with ``action`` (a callable fix is given as the callable)."""
    found = []
    for rule in module.RULES:
        if isinstance(rule, CredentialRules) and rule.actions.get(cause) == action:
            found.append(rule.fixes[cause])
        elif getattr(rule, "cause", None) == cause and rule.action == action:
            found.append(rule.fix)
    return found


@pytest.mark.parametrize("name", sorted(TABLES))
def test_a_member_in_order_has_no_finding(name):
    manager, module, hub, member, desired, _rows = TABLES[name]
    assert module.judge(hub, member, desired) == []
    state = manager.decide(hub["name"], hub, member, desired)
    assert (state.action, state.reasons, state.healthy, state.findings) == ("none", [], True, [])


@pytest.mark.parametrize("name,row", CASES, ids=["%s-%s-%s" % (name, row[0], row[1]) for name, row in CASES])
def test_each_row_of_each_table(name, row):
    """Each cause from the view that shows it: its action, its fix, and what follows (action, healthy)."""
    manager, module, hub, member, desired, _rows = TABLES[name]
    cause, action, hub_changes, member_changes, desired_changes = row[:5]
    also = row[5] if len(row) > 5 else set()  # the findings a cause always comes with
    found = module.judge(changed(hub, hub_changes), changed(member, member_changes), dict(desired, name="east-1", **desired_changes))
    assert found and set((item["cause"], item["action"]) for item in found) == {(cause, action)} | also, found
    for item in found:
        assert item["evidence"] and item["fix"]
        assert any(item["fix"] == (fix(changed(hub, hub_changes), changed(member, member_changes), desired) if callable(fix) else fix)
                   for fix in fixes(module, item["cause"], item["action"])), item["fix"]
    state = manager.decide("east-1", changed(hub, hub_changes), changed(member, member_changes), dict(desired, **desired_changes))
    urgent = min([action] + [other for _cause, other in also], key=findings.ACTIONS.index)
    assert state.action == urgent and state.findings == found
    assert state.healthy is (urgent in findings.MAINTENANCE_ACTIONS)
    assert state.reasons == ([] if urgent == "none" else [item["evidence"] for item in found])


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_row_of_the_table_is_tested_and_every_cause_is_known(name):
    _manager, module, _hub, _member, _desired, rows = TABLES[name]
    assert table_rows(module) == set(row[:2] for row in rows)
    assert all(cause in findings.CAUSES for cause, _action in table_rows(module))


@pytest.mark.parametrize("name", sorted(TABLES))
def test_without_the_member_only_the_hub_rows_fire(name):
    _manager, module, hub, _member, desired, _rows = TABLES[name]
    assert module.judge(hub, {}, desired) == [] and module.judge(hub, None, desired) == []
    assert [item["cause"] for item in module.judge(None, {}, {})] == ["not_member"]


# -- one algorithm --------------------------------------------------------------------------------------------------

def test_the_most_urgent_action_wins_and_every_reason_a_rerun_acts_on_is_kept():
    found = [findings.finding("labels_drift", "labels", "relabel", "f"), findings.finding("hub_reports", "hub says", "none", "f"),
             findings.finding("agent_missing", "no agent", "install", "f"), findings.finding("credential_missing", "no token", "reregister", "f")]
    assert findings.pick_action(found) == "reregister"
    assert findings.reasons(found) == ["no token", "no agent", "labels"]
    assert not findings.healthy(found) and findings.healthy(found[:1]) and not findings.healthy(found[1:2])
    assert findings.pick_action([]) == "none" and findings.pick_action(found[1:2]) == "none"
    assert [item["cause"] for item in findings.problems(found)] == ["hub_reports", "agent_missing", "credential_missing"]


@pytest.mark.parametrize("name", sorted(TABLES))
def test_both_managers_pick_with_the_same_algorithm(name, monkeypatch):
    """decide is FleetManager's, not the manager's: swapping findings.pick_action changes both managers' action."""
    manager, _module, hub, member, desired, _rows = TABLES[name]
    assert type(manager).decide is FleetManager.decide
    broken = changed(member, {"release": None})
    assert manager.decide("east-1", hub, broken, dict(desired, labels={"other": "x"})).action == "install"
    monkeypatch.setattr(findings, "pick_action", lambda found: "relabel")
    assert manager.decide("east-1", hub, broken, desired).action == "relabel"


# -- one meaning of healthy -----------------------------------------------------------------------------------------

def _kubefleet_object(healthy="True", heartbeat="2026-11-21T09:59:30Z", joined="True"):
    status = {"conditions": [{"type": "ReadyToJoin", "status": "True"}, {"type": "Joined", "status": joined}]}
    if heartbeat:
        status["agentStatus"] = [{"type": "MemberAgent", "lastReceivedHeartbeat": heartbeat,
                                  "conditions": [{"type": "Joined", "status": joined}, {"type": "Healthy", "status": healthy}]}]
    return {"metadata": {"name": "east-1", "labels": {}}, "spec": {"identity": IDENTITY, "heartbeatPeriodSeconds": 60}, "status": status}


def _fleet_object(ready="True", last_seen="2026-11-21T09:59:00Z"):
    return {"metadata": {"name": "east-1", "namespace": "fleet-default", "labels": {}}, "spec": {"clientID": "abc"},
            "status": {"agent": {"lastSeen": last_seen} if last_seen else {}, "conditions": [{"type": "Ready", "status": ready}]}}


@pytest.mark.parametrize("name,obj,healthy,word,group", [
    # the issue's case: KubeFleet reports Healthy=False while the heartbeat is fresh
    ("kubefleet", _kubefleet_object(healthy="False"), False, "joined", "unhealthy"),
    ("kubefleet", _kubefleet_object(), True, "joined", "healthy"),
    ("kubefleet", _kubefleet_object(heartbeat="2026-11-21T09:40:00Z"), False, "silent", "stale"),
    ("kubefleet", _kubefleet_object(heartbeat=None, joined="Unknown"), False, "ready-to-join", "not_joined"),
    ("rancher_fleet", _fleet_object(ready="False"), False, "checked-in", "unhealthy"),
    ("rancher_fleet", _fleet_object(), True, "checked-in", "healthy"),
    ("rancher_fleet", _fleet_object(last_seen="2026-11-21T08:00:00Z"), False, "silent", "stale"),
    ("rancher_fleet", _fleet_object(last_seen=None), False, "waiting", "not_joined"),
])
def test_member_info_fleet_status_and_the_inventory_agree_on_health(name, obj, healthy, word, group):
    """The same hub object (the member not read) is healthy or not alike in member_info's MemberState and result,
    fleet_status's row (and its state word) and the inventory plugin's host (its fleetops_healthy, fleetops_stale and
    its health group): each a function of the one judgement."""
    manager = FLEET if name == "rancher_fleet" else KUBEFLEET
    view = manager.hub_view(obj, NOW)
    state = manager.decide("east-1", view, {}, {})
    assert state.healthy is healthy and summarize([state])["healthy"] is healthy
    row = member_row(manager, view)
    assert row["healthy"] is healthy and row["state"] == word
    host = fleet_members.build_hosts({name: [obj]}, NOW)["east-1"]
    assert host["vars"]["fleetops_healthy"] is healthy and host["vars"]["fleetops_" + name]["healthy"] is healthy
    assert host["vars"]["fleetops_health"] == group and host["groups"][-1] == group
    assert host["vars"]["fleetops_stale"] is (group == "stale") is (row["state"] == "silent")
    assert [item["cause"] for item in row["diagnosis"]] == [item["cause"] for item in findings.problems(state.findings)]


@pytest.mark.parametrize("name,obj", [("kubefleet", _kubefleet_object(heartbeat="2026-11-21T09:59:00Z")),
                                      ("rancher_fleet", _fleet_object(last_seen="2026-11-21T09:59:00Z"))])
def test_one_stale_after_means_the_same_in_member_info_fleet_status_and_the_inventory(name, obj):
    """A contact 60 s old: fresh by every manager's own rule, silent past a stale_after of 30 s in all three reports."""
    manager = FLEET if name == "rancher_fleet" else KUBEFLEET
    view = manager.hub_view(obj, NOW)
    for stale_after, silent in ((None, False), (30, True), (120, False)):
        state = manager.decide("east-1", view, {}, {"stale_after": stale_after})
        assert ("silent" in [item["cause"] for item in state.findings]) is silent, stale_after
        assert (member_row(manager, view, stale_after)["state"] == "silent") is silent, stale_after
        host = fleet_members.build_hosts({name: [obj]}, NOW, stale_after=fleet_members.stale_limits(stale_after))["east-1"]
        assert (host["vars"]["fleetops_health"] == "stale") is silent, stale_after
