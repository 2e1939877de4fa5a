"""Merge patches, the waiter's clock, chart sources and Helm's secret scrubbing."""

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import helm, k8s_client, waiter
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError, WaitTimeout


def test_merge_patch_only_what_differs():
    current = {"metadata": {"labels": {"a": "1", "b": "2"}, "name": "x"}, "spec": {"ttl": "1h", "other": 1}}
    desired = {"metadata": {"labels": {"a": "1", "b": None, "c": "3"}}, "spec": {"ttl": "1h"}}
    assert k8s_client.merge_patch(current, desired) == {"metadata": {"labels": {"b": None, "c": "3"}}}
    assert k8s_client.merge_patch(current, {"spec": {"ttl": "1h"}}) == {}


def test_clean_hides_secret_data_and_noise():
    obj = {"metadata": {"name": "s", "resourceVersion": "1", "managedFields": []}, "data": {"token": "abc"}}
    cleaned = k8s_client.clean(obj, hide_data=True)
    assert cleaned["metadata"] == {"name": "s"}
    assert cleaned["data"] == {"token": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"}
    assert obj["data"]["token"] == "abc"


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_waiter_returns_first_value_that_satisfies():
    clock = FakeClock()
    values = iter([None, {"data": {}}, {"data": {"token": "x"}}])
    w = waiter.Waiter(30, 1, clock=clock, sleeper=clock.sleep)
    assert w.until(lambda: next(values), "service_account_token", "token") == {"data": {"token": "x"}}
    assert clock.now == 2


def test_waiter_shares_one_clock_across_waits():
    clock = FakeClock()
    w = waiter.Waiter(10, 2, clock=clock, sleeper=clock.sleep)
    with pytest.raises(WaitTimeout):
        w.until(lambda: None, "service_account_token", "first")
    assert clock.now == 10
    with pytest.raises(WaitTimeout) as err:
        w.until(lambda: {"status": {}}, "member_joined", "second")
    assert clock.now == 10  # no time left: fails after one look
    assert err.value.last == {"status": {}}


def test_predicates():
    joined = {"status": {"conditions": [{"type": "Joined", "status": "True"}]}}
    assert waiter.PREDICATES["member_joined"](joined)
    assert not waiter.PREDICATES["member_joined"]({"status": {"conditions": [{"type": "Joined", "status": "Unknown"}]}})
    assert waiter.PREDICATES["fleet_cluster_checked_in"]({"status": {"agent": {"lastSeen": "2026-01-01T00:00:00Z"}}})
    assert waiter.PREDICATES["absent"](None)


def test_chart_source_kinds(tmp_path):
    (tmp_path / "Chart.yaml").write_text("name: fleet-agent\nversion: 0.16.0\n")
    local = helm.ChartSource(str(tmp_path), version="9.9.9")
    assert local.local and local.args() == [str(tmp_path)]
    assert local.local_metadata()["version"] == "0.16.0"
    repo = helm.ChartSource("fleet-agent", repo_url="https://charts.example", version="0.16.0")
    assert repo.args() == ["fleet-agent", "--repo", "https://charts.example", "--version", "0.16.0"]
    oci = helm.ChartSource("oci://registry.example/fleet-agent")
    assert oci.args() == ["oci://registry.example/fleet-agent"]
    with pytest.raises(ParameterError) as err:
        helm.ChartSource(str(tmp_path / "missing"))
    assert err.value.param == "chart_ref"


def test_helm_scrubs_secrets_from_errors():
    runner = helm.Helm(lambda argv, environ_update=None: (1, "", "bad token s3cr3t"), "/bin/helm", secrets=["s3cr3t"])
    with pytest.raises(Exception) as err:
        runner.run(["upgrade", "x"])
    assert "s3cr3t" not in str(err.value.message())


def test_values_differ_ignores_key_order():
    assert not helm.values_differ({"a": 1, "b": {"c": "d"}}, {"b": {"c": "d"}, "a": 1})
    assert helm.values_differ({"a": 1}, {"a": "1"})
