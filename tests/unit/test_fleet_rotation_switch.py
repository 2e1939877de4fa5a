"""When a Fleet agent is replaced by one registering with a new token (rotation.switch_wait), and which check-in interval
it runs with (rotation.fleet_checkin_interval); the bootstrap Secret it registers from (agent_rotation.bootstrap_secret)."""
import base64
import datetime

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import rotation
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import agent_rotation
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.agent_rotation import (
    BOOTSTRAP_KEYS, bootstrap_secret, new_credential_checkin,
)

NOW = datetime.datetime(2026, 11, 26, 12, 0, 0, tzinfo=datetime.timezone.utc)


def ago(seconds):
    return NOW - datetime.timedelta(seconds=seconds)


def deployment(*env):
    return {"spec": {"template": {"spec": {"containers": [{"name": "fleet-agent", "env": list(env)}]}}}}


@pytest.mark.parametrize("env,expected", [
    ([], 900.0),
    ([{"name": "CHECKIN_INTERVAL", "value": "15s"}], 15.0),
    ([{"name": "CHECKIN_INTERVAL", "value": "1m30s"}], 90.0),
    ([{"name": "CHECKIN_INTERVAL", "value": "0"}], 900.0),
    ([{"name": "CHECKIN_INTERVAL", "value": "soon"}], 900.0),
    ([{"name": "OTHER", "value": "15s"}], 900.0),
])
def test_the_checkin_interval_is_the_agents_own_else_fleets_default(env, expected):
    assert rotation.fleet_checkin_interval(deployment(*env)) == expected


def test_no_deployment_means_fleets_default_interval():
    assert rotation.fleet_checkin_interval(None) == rotation.FLEET_DEFAULT_CHECKIN_INTERVAL


def test_a_short_interval_waits_for_the_old_agents_next_checkin_so_the_gap_is_the_restart_alone():
    # 15 s interval, last check-in 4 s ago: switching now leaves 4 + 20 s > 15 s; the next check-in is due in 11 s
    wait = rotation.switch_wait(ago(4), 15, NOW)
    assert 11 <= wait <= 16


def test_a_long_interval_switches_at_once_because_no_checkin_is_missed():
    assert rotation.switch_wait(ago(300), 900, NOW) == 0


def test_a_long_interval_near_its_next_checkin_waits_for_it():
    wait = rotation.switch_wait(ago(890), 900, NOW)
    assert 10 <= wait <= 15


@pytest.mark.parametrize("last_seen", [None, ago(3600), ago(-30)])
def test_a_silent_unknown_or_future_checkin_is_not_waited_for(last_seen):
    assert rotation.switch_wait(last_seen, 15, NOW) == 0


def test_the_wait_never_exceeds_one_interval_and_a_bit():
    for since in range(0, 16):
        assert rotation.switch_wait(ago(since), 15, NOW) <= 15 + 5


def test_the_bootstrap_secret_has_the_charts_keys_and_helms_ownership_only_when_the_release_exists():
    values = {"token": "t0k", "apiServerURL": "https://hub:6443", "apiServerCA": "PEM", "clusterNamespace": "fleet-default",
              "systemRegistrationNamespace": "cattle-fleet-clusters-system", "tokenName": "tok-1", "clientID": "c"}
    owned = bootstrap_secret(values, True)
    assert sorted(owned["data"]) == sorted(BOOTSTRAP_KEYS)
    assert base64.b64decode(owned["data"]["token"]).decode() == "t0k"
    assert owned["metadata"]["annotations"]["meta.helm.sh/release-name"] == "fleet-agent"
    plain = bootstrap_secret({"token": "t0k"}, False)
    assert "annotations" not in plain["metadata"] and plain["data"]["apiServerCA"] == ""


def cluster_seen(stamp):
    return {"status": {"agent": {"lastSeen": stamp}}}


def credential(uid, created):
    return {"metadata": {"uid": uid, "creationTimestamp": created}}


@pytest.mark.parametrize("cluster,secret,proven", [
    (cluster_seen("2026-11-26T12:00:20Z"), credential("new", "2026-11-26T12:00:05Z"), True),
    (cluster_seen("2026-11-26T12:00:05Z"), credential("new", "2026-11-26T12:00:05Z"), True),
    # the old agent's late check-in, before the new credential existed
    (cluster_seen("2026-11-26T12:00:01Z"), credential("new", "2026-11-26T12:00:05Z"), False),
    # the Secret is still the deleted one's (or none was written yet)
    (cluster_seen("2026-11-26T12:00:20Z"), credential("old", "2026-11-26T11:00:00Z"), False),
    (cluster_seen("2026-11-26T12:00:20Z"), None, False),
    ({}, credential("new", "2026-11-26T12:00:05Z"), False),
])
def test_only_a_checkin_by_the_agent_holding_a_credential_made_after_the_switch_counts(cluster, secret, proven):
    assert new_credential_checkin(cluster, secret, "old") is proven


def _credential_for(server):
    kubeconfig = "clusters:\n- cluster: {server: %s}\n  name: c\nusers:\n- user: {token: t}\n  name: u\n" \
                 "contexts:\n- context: {cluster: c, user: u}\n  name: x\ncurrent-context: x\n" % server
    return {"data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()}}


@pytest.mark.parametrize("server, installed_id, new_id, in_place", [
    ("https://hub:6443", "abc", "abc", True),
    ("https://hub2:6443", "abc", "abc", False),   # a move: the token is another hub's
    ("https://hub:6443", "abc", "new", False),    # another client ID: the agent reads it only when installed
    ("https://hub:6443", None, None, False),
])
def test_an_agent_registers_again_in_place_only_for_its_own_hub_and_client_id(server, installed_id, new_id, in_place):
    facts = {"deployment": {}, "credential": _credential_for(server), "release": {"values": {"clientID": installed_id}}}
    values = {"apiServerURL": "https://hub:6443", "clientID": new_id}
    assert agent_rotation.registers_in_place(facts, values) is in_place
    assert not agent_rotation.registers_in_place(dict(facts, deployment=None), values)
    assert not agent_rotation.registers_in_place(dict(facts, credential=None), values)
