"""The fleet_members inventory's mapping: hub objects (plain dicts as the API returns them) -> hosts, vars, groups."""

import base64
import datetime

import pytest
import yaml

from ansible_collections.fleetops.registration.plugins.plugin_utils import fleet_members as m
from ansible_collections.fleetops.registration.plugins.module_utils import registry
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_status import member_row
from ansible_collections.fleetops.registration.plugins.module_utils.kubeconfig import server_from_kubeconfig
from ansible_collections.fleetops.registration.plugins.module_utils.times import contact_age_seconds, parse_time
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.views import member_url_from_secret

NOW = datetime.datetime(2026, 11, 23, 12, 0, 0, tzinfo=datetime.timezone.utc)


def hosts_of(fleet_clusters, member_clusters, *args, **kwargs):
    return m.build_hosts({"rancher_fleet": fleet_clusters, "kubefleet": member_clusters}, *args, **kwargs)


def ago(seconds):
    return (NOW - datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def fleet_cluster(name, namespace="fleet-default", last_seen=None, ready="True", labels=None, client_id="c" * 64,
                  deleting=False, secret=None):
    metadata = {"name": name, "namespace": namespace, "labels": labels or {}, "managedFields": [{"x": 1}]}
    if deleting:
        metadata["deletionTimestamp"] = ago(5)
    status = {"display": {"readyBundles": "1/1", "state": "Ready"}, "apiServerURL": "https://hub:6443"}
    if last_seen is not None:
        status["agent"] = {"lastSeen": last_seen}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    spec = {"clientID": client_id}
    if secret:
        spec["kubeConfigSecret"] = secret
    return {"metadata": metadata, "spec": spec, "status": status}


def member_cluster(name, heartbeat=None, joined="True", healthy="True", labels=None, on_agent=False, deleting=False):
    metadata = {"name": name, "labels": labels or {}}
    if deleting:
        metadata["deletionTimestamp"] = ago(5)
    agent = {"type": "MemberAgent", "conditions": []}
    if heartbeat is not None:
        agent["lastReceivedHeartbeat"] = heartbeat
    conditions = [{"type": "ReadyToJoin", "status": "True"}]
    if joined is not None:
        conditions.append({"type": "Joined", "status": joined})
    if healthy is not None:
        (agent["conditions"] if on_agent else conditions).append({"type": "Healthy", "status": healthy})
    return {"metadata": metadata, "spec": {"heartbeatPeriodSeconds": 60},
            "status": {"conditions": conditions, "agentStatus": [agent], "properties": {"k8s": {"value": "1"}}}}


def test_a_member_both_managers_know_by_name_is_one_host_in_both_manager_groups():
    hosts = hosts_of([fleet_cluster("edge-01", last_seen=ago(30), labels={"env": "prod"})],
                     [member_cluster("edge-01", heartbeat=ago(20), labels={"region": "eu"})], NOW)
    assert list(hosts) == ["edge-01"]
    host = hosts["edge-01"]
    assert host["groups"] == ["members", "rancher_fleet", "kubefleet", "healthy"]
    hv = host["vars"]
    assert hv["fleetops_managers"] == ["rancher_fleet", "kubefleet"]
    assert hv["fleetops_hub_labels"] == {"env": "prod", "region": "eu"}
    assert hv["fleetops_fleet_client_id"] == "c" * 64
    assert hv["fleetops_fleet_namespace"] == "fleet-default"
    assert hv["fleetops_cluster_name"] == "edge-01"
    assert hv["fleetops_heartbeat_age_seconds"] == {"rancher_fleet": 30, "kubefleet": 20}
    assert hv["fleetops_last_seen"] == {"rancher_fleet": ago(30), "kubefleet": ago(20)}
    assert (hv["fleetops_joined"], hv["fleetops_healthy"], hv["fleetops_stale"], hv["fleetops_health"]) == \
        (True, True, False, "healthy")
    assert hv["fleetops_rancher_fleet"]["hub_url_used_by_agent"] == "https://hub:6443"
    assert hv["fleetops_kubefleet"]["heartbeat_period_seconds"] == 60


def test_members_of_one_manager_only_join_only_its_group():
    hosts = hosts_of([fleet_cluster("f-only", last_seen=ago(1))], [member_cluster("k-only", heartbeat=ago(1))], NOW)
    assert hosts["f-only"]["groups"] == ["members", "rancher_fleet", "healthy"]
    assert hosts["k-only"]["groups"] == ["members", "kubefleet", "healthy"]
    assert hosts["k-only"]["vars"]["fleetops_rancher_fleet"] is None
    assert "fleetops_fleet_client_id" not in hosts["k-only"]["vars"]


def test_link_label_joins_differently_named_objects_and_leaves_the_cluster_name_unset():
    hosts = hosts_of([fleet_cluster("cluster-8f2a", last_seen=ago(1), labels={"site": "edge-07"})],
                     [member_cluster("edge07-kf", heartbeat=ago(1), labels={"site": "edge-07"})], NOW, link_label="site")
    assert list(hosts) == ["edge-07"]
    assert hosts["edge-07"]["vars"]["fleetops_managers"] == ["rancher_fleet", "kubefleet"]
    assert "fleetops_cluster_name" not in hosts["edge-07"]["vars"]
    # without the label the same objects are two hosts
    assert sorted(hosts_of([fleet_cluster("cluster-8f2a", last_seen=ago(1))], [member_cluster("edge07-kf")], NOW)) == \
        ["cluster-8f2a", "edge07-kf"]


def test_same_fleet_name_in_two_namespaces_gives_two_hosts_named_by_namespace():
    hosts = hosts_of([fleet_cluster("a", namespace="fleet-default", last_seen=ago(1)),
                     fleet_cluster("a", namespace="fleet-local", last_seen=ago(1))], [], NOW)
    assert sorted(hosts) == ["fleet-default.a", "fleet-local.a"]
    assert hosts["fleet-local.a"]["vars"]["fleetops_fleet_namespace"] == "fleet-local"


@pytest.mark.parametrize("fleet_kwargs, member_kwargs, expected", [
    ({"last_seen": None}, {"heartbeat": ago(1)}, "not_joined"),
    ({"last_seen": ago(1)}, {"joined": "False", "heartbeat": ago(1)}, "not_joined"),
    ({"last_seen": ago(1)}, {"joined": None}, "not_joined"),
    ({"last_seen": ago(3601)}, {"heartbeat": ago(1)}, "stale"),
    ({"last_seen": ago(1)}, {"heartbeat": ago(181)}, "stale"),
    ({"last_seen": ago(1)}, {"heartbeat": None}, "stale"),  # joined but never a heartbeat
    ({"last_seen": ago(1), "ready": "False"}, {"heartbeat": ago(1)}, "unhealthy"),
    ({"last_seen": ago(1)}, {"heartbeat": ago(1), "healthy": "False", "on_agent": True}, "unhealthy"),
    ({"last_seen": ago(1), "ready": None}, {"heartbeat": ago(1), "healthy": None}, "healthy"),  # unknown is not bad
    ({"last_seen": ago(1), "deleting": True}, {"heartbeat": ago(1)}, "leaving"),
    ({"last_seen": None}, {"heartbeat": ago(1), "deleting": True}, "leaving"),
])
def test_health_is_the_worst_state_of_any_manager(fleet_kwargs, member_kwargs, expected):
    hosts = hosts_of([fleet_cluster("x", **fleet_kwargs)], [member_cluster("x", **member_kwargs)], NOW)
    assert hosts["x"]["vars"]["fleetops_health"] == expected
    assert hosts["x"]["groups"][-1] == expected
    assert hosts["x"]["vars"]["fleetops_healthy"] is (expected == "healthy")


def test_stale_after_is_per_manager_and_configurable():
    objects = ([fleet_cluster("x", last_seen=ago(600))], [member_cluster("x", heartbeat=ago(100))])
    assert hosts_of(*objects, now=NOW)["x"]["vars"]["fleetops_stale"] is False
    hv = hosts_of(*objects, now=NOW, stale_after={"rancher_fleet": 300})["x"]["vars"]
    assert hv["fleetops_stale"] is True and hv["fleetops_rancher_fleet"]["stale"] and not hv["fleetops_kubefleet"]["stale"]


def test_a_member_a_run_is_changing_shows_that_run_until_its_lock_expires():
    lock = {"holder": "k3v9x0a7qp", "by": "AWX job 42", "since": "t0", "expires": "2030-01-01T00:00:00Z"}
    gone = dict(lock, expires="2000-01-01T00:00:00Z")  # read into the cache long ago
    hosts = hosts_of([fleet_cluster("a", last_seen=ago(1)), fleet_cluster("b", last_seen=ago(1))],
                     [member_cluster("c")], NOW, locks={"a": lock, "b": gone, "c": lock})
    assert hosts["a"]["vars"]["fleetops_lock"] == lock and hosts["c"]["vars"]["fleetops_lock"] == lock
    assert hosts["b"]["vars"]["fleetops_lock"] is None
    assert hosts_of([fleet_cluster("a", last_seen=ago(1))], [], NOW)["a"]["vars"]["fleetops_lock"] is None


def test_member_url_comes_from_the_imported_clusters_secret_only():
    hosts = hosts_of([fleet_cluster("imp", last_seen=ago(1), secret="imp-kubeconfig")], [], NOW,
                     member_urls={"fleet-default/imp": "https://imp:6443"})
    assert hosts["imp"]["vars"]["fleetops_member_api_server_url"] == "https://imp:6443"
    assert hosts_of([fleet_cluster("imp", last_seen=ago(1))], [], NOW)["imp"]["vars"]["fleetops_member_api_server_url"] is None


def _secret(**data):
    return {"data": dict((k, base64.b64encode(v.encode()).decode()) for k, v in data.items())}


def test_member_url_from_secret_prefers_the_override_key_and_never_returns_credentials():
    kubeconfig = yaml.safe_dump({"current-context": "b", "clusters": [
        {"name": "ca", "cluster": {"server": "https://a:6443"}}, {"name": "cb", "cluster": {"server": "https://b:6443"}}],
        "contexts": [{"name": "a", "context": {"cluster": "ca"}}, {"name": "b", "context": {"cluster": "cb"}}],
        "users": [{"name": "u", "user": {"token": "s3cret"}}]})
    assert member_url_from_secret(_secret(value=kubeconfig)) == "https://b:6443"
    assert member_url_from_secret(_secret(value=kubeconfig, apiServerURL="https://override:443")) == "https://override:443"
    assert member_url_from_secret(_secret(value="not: [valid")) is None
    assert member_url_from_secret({"data": {"value": "%%%"}}) is None
    assert member_url_from_secret(None) is None


def test_server_from_kubeconfig_without_current_context_uses_the_only_cluster():
    assert server_from_kubeconfig({"clusters": [{"name": "c", "cluster": {"server": "https://c"}}]}) == "https://c"
    assert server_from_kubeconfig({"clusters": [{"name": "c", "cluster": {"server": "https://c"}},
                                  {"name": "d", "cluster": {"server": "https://d"}}]}) is None
    assert server_from_kubeconfig("text") is None


def test_timestamps_with_fractions_and_offsets_parse_and_garbage_does_not():
    assert parse_time("2026-11-23T11:59:00.123456Z") == NOW - datetime.timedelta(seconds=60) + datetime.timedelta(microseconds=123456)
    assert parse_time("2026-11-23T11:59:00+00:00") == NOW - datetime.timedelta(seconds=60)
    assert parse_time("2026-11-23T13:59:00+02:00") == NOW - datetime.timedelta(seconds=60)  # an offset, not garbage
    assert contact_age_seconds("2026-11-23T13:59:00+02:00", NOW) == 60
    assert parse_time("yesterday") is None and parse_time("") is None
    assert contact_age_seconds(None, NOW) is None
    assert contact_age_seconds("2026-11-23T12:00:30Z", NOW) == 0  # clock skew never gives a negative age
    ahead = hosts_of([fleet_cluster("x", last_seen="2026-11-23T12:00:30Z")], [member_cluster("x", heartbeat="2026-11-23T12:00:30Z")], NOW)
    assert ahead["x"]["vars"]["fleetops_heartbeat_age_seconds"] == {"rancher_fleet": 0, "kubefleet": 0}


def test_cache_copy_drops_managed_fields_and_annotations_but_keeps_status():
    obj = fleet_cluster("x", last_seen=ago(1))
    obj["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{...}"}
    stripped = m.strip_object(obj)
    assert "managedFields" not in stripped["metadata"] and "annotations" not in stripped["metadata"]
    assert stripped["status"] == obj["status"] and obj["metadata"]["managedFields"]  # the input is not changed


@pytest.mark.parametrize("fleet, member, health", [
    (fleet_cluster("e", last_seen=ago(30)), member_cluster("e", heartbeat=ago(20)), "healthy"),
    (fleet_cluster("e", last_seen=ago(4000)), member_cluster("e", heartbeat=ago(20)), "stale"),  # Fleet: past 3600 s
    (fleet_cluster("e", last_seen=ago(30)), member_cluster("e", heartbeat=ago(200)), "stale"),  # KubeFleet: 3 x 60 s
    (fleet_cluster("e", last_seen=ago(30)), member_cluster("e", heartbeat=ago(20), healthy="False", on_agent=True), "unhealthy"),
    (fleet_cluster("e", last_seen=ago(30), ready="False"), member_cluster("e", heartbeat=ago(20)), "unhealthy"),
    (fleet_cluster("e"), member_cluster("e", heartbeat=None, joined="False"), "not_joined"),
    (fleet_cluster("e", last_seen=ago(30)), member_cluster("e", heartbeat=None), "stale"),  # joined, no heartbeat time
    (fleet_cluster("e", last_seen="yesterday"), member_cluster("e", heartbeat=ago(20)), "stale"),  # unreadable check-in
])
def test_the_inventory_and_fleet_status_judge_health_alike(fleet, member, health):
    """One staleness and health rule per manager (its rule table's silent row): the inventory's fleetops_health and
    fleet_status's rows (state, healthy) of the same hub objects agree."""
    hosts = hosts_of([fleet], [member], NOW, stale_after=m.DEFAULT_STALE_AFTER)
    assert hosts["e"]["vars"]["fleetops_health"] == health
    rows = [member_row(registry.manager(name), registry.manager(name).hub_view(obj, NOW))
            for name, obj in (("rancher_fleet", fleet), ("kubefleet", member))]
    stale = any(row["state"] == "silent" for row in rows)
    assert stale == (health == "stale"), rows
    assert all(row["healthy"] is True for row in rows) == (health == "healthy"), rows
    assert all(row["healthy"] == (not row["diagnosis"]) for row in rows), rows


def test_a_shorter_heartbeat_period_makes_a_kubefleet_member_stale_sooner_in_both():
    member = member_cluster("e", heartbeat=ago(40))
    member["spec"]["heartbeatPeriodSeconds"] = 10
    hosts = hosts_of([], [member], NOW, stale_after=m.DEFAULT_STALE_AFTER)
    assert hosts["e"]["vars"]["fleetops_health"] == "stale"
    kubefleet = registry.manager("kubefleet")
    assert member_row(kubefleet, kubefleet.hub_view(member, NOW))["state"] == "silent"


def test_a_host_shows_which_cluster_each_manager_recorded():
    recorded = {"fleetops.registration/cluster-uid": "6f1c2a9e", "fleetops.registration/cluster-ca-sha256": "ab" * 32}
    fleet = fleet_cluster("edge-01", last_seen=ago(30))
    fleet["metadata"]["annotations"] = recorded
    hv = hosts_of([fleet], [member_cluster("edge-01", heartbeat=ago(20))], NOW)["edge-01"]["vars"]
    assert hv["fleetops_cluster_identity"] == {"rancher_fleet": {"uid": "6f1c2a9e", "ca_sha256": "ab" * 32}, "kubefleet": None}


def test_stale_after_is_one_number_for_every_manager_or_a_mapping_per_manager():
    assert m.stale_limits(None) == m.stale_limits({}) == m.DEFAULT_STALE_AFTER
    assert m.stale_limits(300) == m.stale_limits("300") == {"rancher_fleet": 300, "kubefleet": 300}
    assert m.stale_limits({"rancher_fleet": 1800}) == {"rancher_fleet": 1800, "kubefleet": None}
    objects = ([fleet_cluster("x", last_seen=ago(600))], [member_cluster("x", heartbeat=ago(100))])
    hv = hosts_of(*objects, now=NOW, stale_after=m.stale_limits(90))["x"]["vars"]
    assert hv["fleetops_rancher_fleet"]["stale"] and hv["fleetops_kubefleet"]["stale"] and hv["fleetops_health"] == "stale"


@pytest.mark.parametrize("value, words", [
    (True, "a number of seconds or a mapping"),
    ([300], "a number of seconds or a mapping"),
    ({"argo": 300}, "unknown managers argo"),
    ({"kubefleet": "soon"}, "stale_after for kubefleet must be a whole number"),
    ("-5", "0 or more"),
])
def test_a_bad_stale_after_names_the_option_and_what_it_takes(value, words):
    with pytest.raises(ValueError, match="stale_after") as caught:
        m.stale_limits(value)
    assert words in str(caught.value)
