# -*- coding: utf-8 -*-
# Copyright (c) 2026, fleetops.registration contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeFleet as a fleet manager: the hub view, the status row and decide() (pure, table-driven)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import datetime

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_managers import ACTIONS, FleetManager, MemberState
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import judge as kfm
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import manager as kf_manager
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_status import member_row
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.manager import MANAGER

UTC = datetime.timezone.utc
NOW = datetime.datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)
IDENTITY = {"kind": "ServiceAccount", "name": "east-1-hub-cluster-access", "namespace": "fleet-system", "apiGroup": ""}
USERNAME = "system:serviceaccount:fleet-system:east-1-hub-cluster-access"


def member_cluster(joined="True", heartbeat="2026-11-21T09:59:30Z", period=15, labels=None, leaving=False, healthy="True"):
    metadata = {"name": "east-1", "labels": {"env": "prod"} if labels is None else labels}
    if leaving:
        metadata["deletionTimestamp"] = "2026-11-21T09:59:00Z"
    status = {"conditions": [{"type": "ReadyToJoin", "status": "True"}]}
    if joined is not None:
        status["conditions"].append({"type": "Joined", "status": joined})
    if heartbeat:
        status["agentStatus"] = [{"type": "MemberAgent", "lastReceivedHeartbeat": heartbeat,
                                  "conditions": [{"type": "Joined", "status": joined or "Unknown"},
                                                 {"type": "Healthy", "status": healthy}]}]
    return {"metadata": metadata, "spec": {"identity": IDENTITY, "heartbeatPeriodSeconds": period}, "status": status}


def hub(**kwargs):
    return MANAGER.hub_view(member_cluster(**kwargs), NOW)


# decide() judges the token's lifetime against the real clock: a token issued a day ago that lives 30 days.
_ISSUED = datetime.datetime.now(UTC) - datetime.timedelta(days=1)

CONFIGURED = {"hub_url": "https://hub:6443", "hub_ca_sha256": "a" * 64, "hub_ca_extra": False, "insecure": False,
              "token_secret": "fleet-hub-credentials/hub-kubeconfig-secret", "member_name": "east-1"}
HEALTHY_MEMBER = {
    "release": {"name": "member-agent", "namespace": "default", "status": "deployed", "chart": "member-agent",
                "chart_version": "0.1.0", "values": {"config": {"hubURL": "https://hub:6443", "hubCA": True}, "logVerbosity": 2}},
    "hub_url": "https://hub:6443",
    "configured": CONFIGURED,
    "wanted": dict(CONFIGURED),
    "credential": {"name": "hub-kubeconfig-secret", "namespace": "fleet-hub-credentials", "present": True, "accepted": True,
                   "username": USERNAME, "problem": None, "issued": _ISSUED.strftime("%Y-%m-%dT%H:%M:%SZ"),
                   "expires": (_ISSUED + datetime.timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")},
    "deployment": {"name": "member-agent", "namespace": "fleet-system", "present": True, "ready_replicas": 1},
    "agent_pod": {"tolerations": [], "node_selector": {}, "affinity": {}, "priority_class_name": "", "image_pull_secrets": [],
                  "containers": [{"name": "member-agent", "image": "ghcr.io/azure/fleet/member-agent:v0.14.0", "env": {}, "resources": {}}]},
}


def member(**changes):
    """HEALTHY_MEMBER with dotted-path changes, e.g. member(**{"credential.accepted": False})."""
    view = copy.deepcopy(HEALTHY_MEMBER)
    for path, value in changes.items():
        target = view
        keys = path.split(".")
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return view


DESIRED = {"labels": {"env": "prod"}, "labels_mode": "merge", "stale_after": 3600, "chart_version": None, "values": {},
           "force": False}


def desired(**changes):
    return dict(DESIRED, **changes)


@pytest.mark.parametrize("hub_view,member_view,wanted,action,reason", [
    (hub(), member(), desired(), "none", None),
    (hub(), member(**{"credential.accepted": None, "credential.problem": "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"}),
     desired(), "upgrade", "does not verify the hub's certificate"),
    # the hub unreachable from the controller: no re-run repairs that, and the member is not healthy
    (hub(), member(**{"credential.accepted": None, "credential.problem": "Connection refused"}), desired(), "none", "cannot be reached"),
    (None, member(), desired(), "join", "has no MemberCluster named east-1"),
    (hub(leaving=True), member(), desired(), "join", "is being deleted"),
    (hub(joined=None, heartbeat=None), member(), desired(), "join", "never joined"),
    (hub(), member(**{"credential.present": False}), desired(), "reregister", "hub-kubeconfig-secret is missing"),
    (hub(), member(**{"credential.accepted": False, "credential.problem": "Unauthorized"}), desired(), "reregister",
     "rejects the member agent's token in Secret fleet-hub-credentials/hub-kubeconfig-secret (Unauthorized)"),
    (hub(), member(**{"credential.username": "system:serviceaccount:fleet-system:old"}), desired(), "reregister",
     "authenticates as system:serviceaccount:fleet-system:old"),
    # silent with a token the hub accepts: restarted (the install step), the token kept; with one not known to work: a new one
    (hub(heartbeat="2026-11-21T09:59:00Z"), member(), desired(), "install", "60s old, more than 3 x heartbeatPeriodSeconds (15s)"),
    (hub(heartbeat="2026-11-21T09:59:00Z"), member(**{"credential.accepted": None}), desired(), "reregister",
     "60s old, more than 3 x heartbeatPeriodSeconds (15s)"),
    (hub(heartbeat="2026-11-21T09:40:00Z", period=600), member(), desired(stale_after=1000), "install",
     "1200s old, more than stale_after (1000s)"),
    (hub(joined="False"), member(), desired(), "reregister", "not joined"),
    (hub(), member(), desired(force=True), "reregister", "forced"),
    (hub(), member(release=None), desired(), "install", "release is not installed"),
    (hub(), member(**{"release.status": "failed"}), desired(), "install", "failed, not deployed"),
    (hub(), member(**{"deployment.present": False}), desired(), "install", "Deployment member-agent is missing"),
    (hub(), member(), desired(chart_version="0.2.0"), "upgrade", "chart version 0.1.0 -> 0.2.0"),
    (hub(), member(), desired(values={"logVerbosity": 5}), "upgrade", "values differ"),
    (hub(), member(**{"wanted.hub_url": "https://hub.example:6443"}), desired(), "upgrade",
     "uses hub URL https://hub:6443, not https://hub.example:6443"),
    (hub(), member(**{"configured.token_secret": "default/hub-kubeconfig-secret"}), desired(), "upgrade",
     "reads its token from default/hub-kubeconfig-secret, not fleet-hub-credentials/hub-kubeconfig-secret"),
    # the token moved (an older version kept it in default): the upgrade writes the Secret the options name
    (hub(), member(**{"configured.token_secret": "default/hub-kubeconfig-secret", "credential.present": False}), desired(), "upgrade",
     "reads its token from default/hub-kubeconfig-secret"),
    (hub(), member(**{"configured.insecure": True}), desired(), "upgrade", "does not verify the hub's certificate (tlsClientInsecure)"),
    (hub(), member(configured_ca_problem="[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"), desired(), "upgrade",
     "the hub CA the member agent uses does not verify the hub's certificate"),
    (hub(), member(**{"configured.hub_ca_sha256": "b" * 64}), desired(), "upgrade",
     "trusts another hub CA (sha256 bbbbbbbbbbbb) than the collection configures (aaaaaaaaaaaa)"),
    (hub(), member(**{"configured.hub_ca_sha256": None}), desired(), "upgrade", "trusts another hub CA (sha256 none)"),
    (hub(), member(**{"configured.hub_ca_extra": True}), desired(), "upgrade", "holds more than certificates"),
    (hub(), member(**{"configured.member_name": "west-2"}), desired(), "upgrade", "joins as west-2, not east-1"),
    # the images the inventory sets are compared with the release's (issue 32: a changed repository was "unchanged")
    (hub(), member(**{"release.values.image": {"repository": "ghcr.io/azure/fleet/member-agent", "tag": "v0.14.0"}}),
     desired(images={"repository": "mirror.example/fleet/member-agent"}), "upgrade",
     "image.repository is ghcr.io/azure/fleet/member-agent, not mirror.example/fleet/member-agent"),
    (hub(), member(**{"release.values.image": {"repository": "ghcr.io/azure/fleet/member-agent", "tag": "v0.14.0"}}),
     desired(images={"tag": "v0.15.0"}), "upgrade", "image.tag is v0.14.0, not v0.15.0"),
    (hub(), member(), desired(images={"refresh_token_repository": "mirror.example/fleet/refresh-token"}), "upgrade",
     "refreshtoken.repository is the chart's default, not mirror.example/fleet/refresh-token"),
    # the setting's registry applies to the repository as the agent module applies it; an image not set is not compared
    (hub(), member(**{"release.values.image": {"repository": "mirror:5000/fleet/member-agent", "tag": "v0.14.0"},
                      "agent_pod.containers": [{"name": "member-agent", "image": "mirror:5000/fleet/member-agent:v0.14.0",
                                                "env": {}, "resources": {}}]}),
     desired(images={"repository": "registry.example/fleet/member-agent"}, agent={"image_registry": "mirror:5000"}), "none", None),
    (hub(), member(), desired(images={}), "none", None),
    # what the options do not say is not drift; the member's values are never the measure
    (hub(), member(wanted=None, hub_url=None, **{"configured.hub_url": "https://attacker:443", "credential.accepted": None,
                                                 "credential.problem": "the hub endpoint ... is not known"}), desired(), "none", None),
    # the hub reports the member unhealthy while its heartbeat is fresh: nothing a re-run repairs, not healthy
    (hub(healthy="False"), member(), desired(), "none", "Healthy=False"),
    (hub(), member(), desired(agent={"env": {"HTTPS_PROXY": "http://proxy:3128"}}), "reconfigure",
     "container member-agent's environment lacks or differs in HTTPS_PROXY"),
    (hub(), member(), desired(agent={"env": {"HTTPS_PROXY": "http://proxy:3128"}}, labels={"env": "dev"}), "reconfigure", "HTTPS_PROXY"),
    (hub(), member(agent_pod=None), desired(agent={"env": {"HTTPS_PROXY": "http://proxy:3128"}}), "none", None),
    (hub(), member(), desired(labels={"env": "dev"}), "relabel", "labels drift: set env"),
    (hub(labels={"env": "prod", "old": "x"}), member(), desired(labels_mode="replace"), "relabel", "remove old"),
    (hub(labels={"env": "prod", "fleet.azure.com/location": "x"}), member(), desired(labels_mode="replace"), "none", None),
    (hub(), {}, desired(), "none", None),   # the member was not read: decide from the hub alone
])
def test_decide(hub_view, member_view, wanted, action, reason):
    state = MANAGER.decide("east-1", hub_view, member_view, wanted)
    assert isinstance(state, MemberState)
    assert state.action == action, state.reasons
    assert state.action in ACTIONS
    if reason is None:
        assert state.reasons == []
        assert state.healthy
    elif action == "none":
        assert state.reasons == [] and not state.healthy
        assert any(reason in item["evidence"] for item in state.findings), state.findings
    else:
        assert any(reason in text for text in state.reasons), state.reasons
    assert state.as_dict()["manager"] == "kubefleet"


def test_decide_takes_the_most_fundamental_action():
    broken = member(release=None, **{"credential.present": False})
    assert MANAGER.decide("east-1", hub(), broken, desired(labels={"env": "dev"})).action == "reregister"
    assert MANAGER.decide("east-1", None, broken, desired()).action == "join"


def test_hub_view():
    view = hub()
    assert view == {
        "name": "east-1", "labels": {"env": "prod"}, "identity": IDENTITY, "joined": True, "healthy": True,
        "ready_to_join": True, "heartbeat_period_seconds": 15, "leaving": False, "agent_joined": True,
        "heartbeat": "2026-11-21T09:59:30Z", "heartbeat_age_seconds": 30, "heartbeat_stale": False, "quarantined": False, "conditions_false": [],
        "identity_present": None,
    }
    assert MANAGER.hub_view(None) is None
    assert hub(heartbeat="2026-11-21T09:59:14Z")["heartbeat_stale"] is True   # 46s > 3 x 15s


@pytest.mark.parametrize("kwargs,state,healthy", [
    ({}, "joined", True),
    ({"heartbeat": "2026-11-21T09:50:00Z"}, "silent", False),
    ({"healthy": "False"}, "joined", False),
    ({"leaving": True}, "leaving", False),
    ({"joined": None, "heartbeat": None}, "ready-to-join", False),
    ({"joined": "False"}, "ready-to-join", False),
])
def test_status_row(kwargs, state, healthy):
    row = member_row(MANAGER, hub(**kwargs))
    assert row["state"] == state
    assert row["healthy"] is healthy
    assert set(("state", "healthy", "last_contact_age_seconds", "labels")) <= set(row)
    assert row["labels"] == {"env": "prod"}


def test_the_manager_implements_the_interface():
    assert isinstance(MANAGER, FleetManager)
    for method in ("read_hub", "hub_view", "member_view", "judge", "status_row"):
        assert getattr(type(MANAGER), method) is not getattr(FleetManager, method), method
    assert (MANAGER.name, MANAGER.title, MANAGER.group_version) == ("kubefleet", "KubeFleet", "cluster.kubernetes-fleet.io/v1beta1")
    assert list(MANAGER.hub_resources) == ["memberclusters", "internalmemberclusters"]
    assert MANAGER.controller == ("fleet-system", "hub-agent")
    assert MANAGER.install_hint


class FakeHub:
    """Counts LISTs; pure data, no API (read_hub's filtering and marking only). ``accounts``: the ServiceAccounts'
    names by namespace; a namespace not in it answers 403."""

    def __init__(self, items, accounts=None):
        self.items, self.accounts = items, accounts or {}
        self.calls = []

    def list(self, resource, namespace=None, label_selector=None):
        self.calls.append((resource.plural, namespace, label_selector))
        if resource.plural == "serviceaccounts":
            if namespace not in self.accounts:
                raise ApiError("forbidden", status=403)
            return [{"metadata": {"name": name}} for name in self.accounts[namespace]]
        return [copy.deepcopy(item) for item in self.items]


def _named(name, identity=None):
    obj = member_cluster()
    obj["metadata"]["name"] = name
    obj["spec"]["identity"] = identity or dict(IDENTITY, name=name + "-hub-cluster-access")
    return obj


def test_read_hub_is_one_list_filtered_by_name_and_one_list_of_identities_per_namespace():
    fake = FakeHub([_named("east-1"), _named("west-2")], {"fleet-system": ["east-1-hub-cluster-access"]})
    assert list(MANAGER.read_hub(fake, names=["east-1", "nowhere"])) == ["east-1"]
    found = MANAGER.read_hub(fake)
    assert sorted(found) == ["east-1", "west-2"]
    assert [MANAGER.hub_view(found[name])["identity_present"] for name in ("east-1", "west-2")] == [True, False]
    MANAGER.read_hub(fake, label_selector="env=prod")
    assert fake.calls == [("memberclusters", None, None), ("serviceaccounts", "fleet-system", None)] * 2 + [
        ("memberclusters", None, "env=prod"), ("serviceaccounts", "fleet-system", None)]


def test_an_identity_that_cannot_be_listed_or_is_no_service_account_is_not_known():
    user = {"kind": "User", "name": "someone", "apiGroup": "rbac.authorization.k8s.io"}
    fake = FakeHub([_named("east-1", dict(IDENTITY, namespace="elsewhere")), _named("west-2", user)], {})
    found = MANAGER.read_hub(fake)
    assert [MANAGER.hub_view(found[name])["identity_present"] for name in ("east-1", "west-2")] == [None, None]
    assert "identity_gone" not in [item["cause"] for item in kfm.judge(MANAGER.hub_view(found["east-1"]), {}, desired())]
    assert fake.calls == [("memberclusters", None, None), ("serviceaccounts", "elsewhere", None)]
    assert MANAGER.read_hub(FakeHub([])) == {}


@pytest.mark.parametrize("live,wanted,covered", [
    ({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": 2}}, True),
    ({"a": 1}, {"a": 2}, False),
    ({"a": 1}, {"b": {"c": 1}}, False),
    ({"b": {"c": 2}}, {"b": {"c": 3}}, False),  # a nested value that differs
    (None, {}, True),
])
def test_values_cover(live, wanted, covered):
    assert kfm.values_cover(live, wanted) is covered


def test_option_prefers_the_kubefleet_prefixed_name():
    assert kf_manager.option({}, "release_name") == "member-agent"
    assert kf_manager.option({"release_name": "a"}, "release_name") == "a"
    assert kf_manager.option({"release_name": "a", "kubefleet_release_name": "b"}, "release_name") == "b"
