"""A Cluster's own namespace on the hub, against the real Fleet controllers: the leave waits until Fleet has deleted
it, and a join that meets it terminating or missing waits and makes Fleet create it again.

The race a re-join after a leave can meet (a Cluster created again while Fleet still deletes the earlier one's
namespace) is made deterministic by holding the namespace in Terminating with a finalizer of the test's own.
"""

import threading
import time

import pytest

from modrun import run_module
from kube_helpers import read_or_none, wait_for
from rancher_fleet_lab import GROUP, VERSION, hub, hub_args, hub_ns, ok, warnings  # noqa: F401 pylint: disable=unused-import

pytestmark = pytest.mark.lab

HOLD = "fleetops.test/hold"


def _own_namespace(hub, namespace, name):
    """The name of the Cluster's namespace once Fleet has created it."""
    def created():
        cluster = hub.get("clusters", namespace, name) or {}
        target = (cluster.get("status") or {}).get("namespace")
        return target if target and read_or_none(lambda: hub.core.read_namespace(target)) else None
    return wait_for(created, 60, "Fleet to create the namespace of Cluster %s/%s" % (namespace, name))


def _namespace(hub, target):
    return read_or_none(lambda: hub.core.read_namespace(target))


def _hold(hub, target):
    hub.core.patch_namespace(target, [{"op": "add", "path": "/metadata/finalizers", "value": [HOLD]}])


def _release(hub, target):
    current = _namespace(hub, target)
    if current is not None and HOLD in (current.metadata.finalizers or []):
        hub.core.patch_namespace(target, [{"op": "remove", "path": "/metadata/finalizers"}])


def _delete_cluster(hub, namespace, name, target):
    hub.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, "clusters", name)

    def deleting():
        held = _namespace(hub, target)
        return hub.get("clusters", namespace, name) is None and held is not None and held.metadata.deletion_timestamp
    wait_for(deleting, 60, "the Cluster gone and Fleet deleting its namespace %s" % target)


def _status_state(lab, namespace, name):
    status = ok(run_module("fleet_status_info", dict(hub_args(lab), backends=["rancher_fleet"], fleet_namespace=namespace)))
    return status["members"][name]["rancher_fleet"]["state"]


def _later(seconds, action):
    thread = threading.Timer(seconds, action)
    thread.start()
    return thread


def _held_cluster(hub, args):
    """A Cluster made by the module, whose namespace Fleet created and the test holds (Terminating once deleted)."""
    ok(run_module("fleet_cluster", args))
    target = _own_namespace(hub, args["namespace"], args["name"])
    _hold(hub, target)
    return target


def test_a_cluster_created_again_while_fleet_deletes_its_namespace_is_made_joinable(lab, hub, hub_ns):
    args = dict(hub_args(lab), name="edge", namespace=hub_ns)
    target = _held_cluster(hub, args)
    try:
        _delete_cluster(hub, hub_ns, "edge", target)
        # Fleet meets the race: the Cluster is created again while the old namespace terminates
        hub.custom.create_namespaced_custom_object(GROUP, VERSION, hub_ns, "clusters", {
            "apiVersion": "%s/%s" % (GROUP, VERSION), "kind": "Cluster", "metadata": {"name": "edge"}, "spec": {"clientID": "edge-id"}})
        wait_for(lambda: ((hub.get("clusters", hub_ns, "edge") or {}).get("status") or {}).get("namespace") == target, 60,
                 "Fleet to handle the new Cluster")
        assert _status_state(lab, hub_ns, "edge") == "namespace-terminating"
    finally:
        _release(hub, target)
    wait_for(lambda: _namespace(hub, target) is None, 60, "the namespace %s to go" % target)
    time.sleep(5)
    assert _namespace(hub, target) is None, "Fleet created the namespace again by itself: the repair is not needed"
    assert _status_state(lab, hub_ns, "edge") == "namespace-missing"

    planned = ok(run_module("fleet_cluster", args, check=True))
    assert planned.changed is False and planned["cluster_namespace_repair"] == {"namespace": target, "found": "missing", "repaired": False}
    assert _namespace(hub, target) is None, "check mode changed the hub"

    repaired = ok(run_module("fleet_cluster", args))
    assert repaired.changed and repaired["cluster_namespace_repair"] == {"namespace": target, "found": "missing", "repaired": True}
    assert any(target in w and "made Fleet create" in w for w in warnings(repaired)), warnings(repaired)
    created = _namespace(hub, target)
    assert created is not None and created.status.phase == "Active"
    assert created.metadata.annotations.get("fleet.cattle.io/cluster") == "edge"
    assert _status_state(lab, hub_ns, "edge") == "waiting"

    again = ok(run_module("fleet_cluster", args))
    assert not again.changed and again["cluster_namespace_repair"] is None


def test_a_join_waits_for_the_earlier_namespace_and_a_leave_waits_for_its_own(lab, hub, hub_ns):
    args = dict(hub_args(lab), name="edge", namespace=hub_ns)
    target = _held_cluster(hub, args)
    try:
        # the leave: with the namespace held, it cannot finish, says why, and reports the Cluster's deletion
        held = run_module("fleet_cluster", dict(args, state="absent", wait=True, wait_timeout=15))
        assert held.failed and held.changed and target in held["msg"] and "re-run of the leave waits again" in held["msg"]
        assert hub.get("clusters", hub_ns, "edge") is None
        # its re-run waits for the namespace although the Cluster is gone already
        release = _later(4, lambda: _release(hub, target))
        started = time.monotonic()
        left = ok(run_module("fleet_cluster", dict(args, state="absent", wait=True, wait_timeout=60)))
        assert left["removed_cluster_namespaces"] == [target] and time.monotonic() - started >= 3
        assert _namespace(hub, target) is None and not left.changed
        release.join()

        # the join: a Cluster whose earlier namespace still terminates waits for it, then has Fleet create it
        target = _held_cluster(hub, args)
        _delete_cluster(hub, hub_ns, "edge", target)
        release = _later(5, lambda: _release(hub, target))
        started = time.monotonic()
        joined = ok(run_module("fleet_cluster", dict(args, wait_timeout=90)))
        assert joined.changed and joined["cluster_namespace_repair"] == {"namespace": target, "found": "terminating", "repaired": True}
        assert time.monotonic() - started >= 4
        release.join()
        created = _namespace(hub, target)
        assert created is not None and created.status.phase == "Active" and not created.metadata.deletion_timestamp
    finally:
        _release(hub, target)
