"""Rancher Fleet with the controller's ``manageAgent: false`` (ConfigMap cattle-fleet-system/fleet-controller), which the
lab otherwise keeps on: the collection's paths for it, against the real controllers.

With it off, Fleet v0.16.0's manageagent controller makes no agent bundle ``fleet-agent-<cluster>``, so it never adopts
an agent the collection installed (fleet_agent upgrades the agent itself instead of deferring to Fleet), and its import
handler, which deletes that bundle first, fails on 'not found' for ever (fleet_cluster warns and its wait says why).
The fixture flips the ConfigMap and restores it, also on failure, each time proving the controller read the change.
"""

import json
import time

import pytest
from kubernetes import client

from modrun import run_module
from kube_helpers import absent as _missing, ignore_404, unique, wait_for
from rancher_fleet_lab import (  # noqa: F401 pylint: disable=unused-import
    AGENT_NS, CHECKIN_TIMEOUT, GROUP, VERSION, Hub, agent_args, fresh_member, helm_values, hub, hub_args, hub_ns, make_token,
    manage_agent_disabled, member_kubeconfig, ok, releases, warnings,
)

pytestmark = pytest.mark.lab

CONFIG_MAP = "fleet-controller"


def _bundle(hub, namespace, cluster):
    return hub.get("bundles", namespace, "fleet-agent-" + cluster)


def _touch(hub, namespace, cluster):
    """A Cluster change, which makes manageagent look for the Cluster's agent bundle (and create it while it is on)."""
    hub.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, "clusters", cluster,
                                              {"metadata": {"labels": {"fo-touched": str(time.monotonic_ns())}}})


def _set_config(hub, text):
    hub.core.patch_namespaced_config_map(CONFIG_MAP, AGENT_NS, {"data": {"config": text}})


@pytest.fixture(scope="module")
def manage_agent_off(lab):
    """manageAgent false for this module's tests, then the lab's config again. A probe Cluster shows the controller read each change:
    with manageAgent on it makes the probe's bundle within seconds (timed first), with it off it does not in 3x that."""
    hub = Hub(lab)  # pylint: disable=redefined-outer-name
    original = hub.core.read_namespaced_config_map(CONFIG_MAP, AGENT_NS).data["config"]
    assert json.loads(original).get("manageAgent") is not False, "the lab should run Fleet with manageAgent on"
    probe_ns = unique("fo-probe")
    hub.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=probe_ns)))
    try:
        started = time.monotonic()
        hub.custom.create_namespaced_custom_object(GROUP, VERSION, probe_ns, "clusters",
                                                   {"apiVersion": "%s/%s" % (GROUP, VERSION), "kind": "Cluster",
                                                    "metadata": {"name": "probe"}, "spec": {}})
        wait_for(lambda: _bundle(hub, probe_ns, "probe"), 60, "manageagent to make the probe's agent bundle (manageAgent on)")
        window = max(5.0, 3 * (time.monotonic() - started))
        _set_config(hub, json.dumps(dict(json.loads(original), manageAgent=False)))
        try:
            assert manage_agent_disabled(hub)
            time.sleep(1)  # the controller's informer sees the ConfigMap change, then a touch asks it for the bundle
            hub.custom.delete_namespaced_custom_object(GROUP, VERSION, probe_ns, "bundles", "fleet-agent-probe")
            _touch(hub, probe_ns, "probe")
            time.sleep(window)
            assert _bundle(hub, probe_ns, "probe") is None, "Fleet still made agent bundles %.0f s after manageAgent: false" % window
            yield
        finally:
            _set_config(hub, original)
            _touch(hub, probe_ns, "probe")
            wait_for(lambda: _bundle(hub, probe_ns, "probe"), 60, "manageagent to make agent bundles again (manageAgent restored)")
    finally:
        ignore_404(lambda: hub.core.delete_namespace(probe_ns))


def test_import_is_refused_with_the_reason(lab, hub, hub_ns, fresh_member, manage_agent_off, tmp_path):
    member = fresh_member("member2")
    kubeconfig, _user = member_kubeconfig(lab, member, tmp_path / "all.yaml")
    cargs = dict(hub_args(lab), name="imported", namespace=hub_ns, cluster_kubeconfig=kubeconfig, cluster_kubeconfig_context=member)

    planned = ok(run_module("fleet_cluster", cargs, check=True))
    assert planned.changed and any("manageAgent: false" in w for w in warnings(planned))
    waited = run_module("fleet_cluster", dict(cargs, wait=True, wait_timeout=20))
    assert waited.failed and waited["changed"]
    assert "manageAgent: false" in waited["msg"] and "fleet_agent" in waited["msg"], waited["msg"]

    # what the warning says Fleet does: the import fails on the bundle that does not exist, and nothing reaches the member
    cluster = hub.get("clusters", hub_ns, "imported")
    imported = [c for c in (cluster.get("status") or {}).get("conditions") or [] if c["type"] == "Imported"]
    assert imported and imported[0]["status"] == "False" and "not found" in imported[0].get("message", ""), cluster.get("status")
    assert not ((cluster.get("status") or {}).get("agent") or {}).get("lastSeen")
    assert _bundle(hub, hub_ns, "imported") is None
    assert _missing(lambda: client.CoreV1Api(lab.api_client(member)).read_namespace(AGENT_NS))

    removed = ok(run_module("fleet_cluster", dict(hub_args(lab), name="imported", namespace=hub_ns, state="absent", wait=True,
                                                  wait_timeout=120)))
    assert removed.changed and hub.get("clusters", hub_ns, "imported") is None


def test_agent_is_upgraded_by_the_module_not_adopted(lab, hub, hub_ns, fresh_member, manage_agent_off):
    member = fresh_member("member2")
    make_token(lab, hub_ns)
    args = agent_args(lab, member, token_name="join", token_namespace=hub_ns, labels={"env": "dev"}, wait=True,
                      wait_timeout=CHECKIN_TIMEOUT)
    joined = ok(run_module("fleet_agent", args))
    assert joined.changed and joined["cluster"]["checked_in"]
    name, revision = joined["cluster"]["name"], joined["release"]["revision"]
    # checked in, and the agent heartbeats (Cluster changes) kept manageagent looking: no bundle, so no adoption
    assert _bundle(hub, hub_ns, name) is None
    assert [r["name"] for r in releases(lab, member)] == ["fleet-agent"]

    relabel = dict(args, labels={"env": "prod"})
    upgraded = ok(run_module("fleet_agent", relabel))
    assert upgraded.changed and upgraded["reasons"] == ["values differ"] and upgraded["fleet_managed_releases"] == []
    assert not [w for w in warnings(upgraded) if "managed by Fleet" in w]
    assert helm_values(lab, member)["labels"] == {"env": "prod"}
    assert [int(r["revision"]) for r in releases(lab, member) if r["name"] == "fleet-agent"] == [revision + 1]
    assert not ok(run_module("fleet_agent", relabel)).changed

    left = ok(run_module("fleet_agent", dict(agent_args(lab, member), state="absent")))
    assert left.changed and releases(lab, member) == []
    ok(run_module("fleet_cluster", dict(hub_args(lab), name=name, namespace=hub_ns, state="absent", wait=True, wait_timeout=120)))
    assert hub.items("clusters", hub_ns) == []
