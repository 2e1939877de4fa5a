"""The Rancher Fleet manager against the lab: the member judged from both sides.

A joined member is healthy; once its agent release is uninstalled it needs an install, once its credential
Secret is deleted it needs a new registration - while the hub's Cluster still shows a recent check-in.
"""

import pytest
from kubernetes import client

from modrun import run_module
from kube_helpers import wait_for
from rancher_fleet_lab import (  # noqa: F401 pylint: disable=unused-import
    AGENT_NS, CHECKIN_TIMEOUT, agent_args, fresh_member, hub, hub_ns, make_token, ok, releases,
)
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import ConnectionSettings
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_status import member_row
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import KubeClient
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.manager import MANAGER

pytestmark = pytest.mark.lab


def kube(lab, context):
    settings = ConnectionSettings({"kubeconfig": str(lab.kubeconfig), "context": context}, label=context)
    return KubeClient(settings.client_configuration(), label=context)


def judge(lab, member, name, namespace, desired):
    hub_client, member_client = kube(lab, "hub"), kube(lab, member)
    objects = MANAGER.read_hub(hub_client, [name], namespace)
    assert list(objects) == [name]
    hub_view = MANAGER.hub_view(objects[name])
    member_view = MANAGER.member_view(member_client, hub_client, {})
    return MANAGER.decide(name, hub_view, member_view, desired)


def test_member_view_healthy_then_release_uninstalled_then_credential_deleted(lab, hub, hub_ns, fresh_member):
    member = fresh_member("member1")
    make_token(lab, hub_ns)
    token = hub.token_values(hub_ns, "join")["token"]
    predefined = ok(run_module("fleet_cluster", dict(kubeconfig=str(lab.kubeconfig), context="hub", name="edge", namespace=hub_ns,
                                                     labels={"env": "lab"})))
    ok(run_module("fleet_agent", agent_args(lab, member, token_name="join", token_namespace=hub_ns, wait=True,
                                            client_id=predefined["client_id"], wait_timeout=CHECKIN_TIMEOUT)))
    desired = {"labels": {"env": "lab"}, "labels_mode": "merge", "stale_after": 3600}

    healthy = judge(lab, member, "edge", hub_ns, desired)
    assert healthy.action == "none" and healthy.reasons == [], healthy.as_dict()
    view = healthy.member
    assert view["release"]["status"] == "deployed" and view["credential"] and view["credential_accepted"] is True
    assert view["deployment"] and view["credential_user"].startswith("system:serviceaccount:")
    assert healthy.hub["checked_in"] and healthy.hub["seen_age_seconds"] < 3600
    assert token not in repr(healthy.as_dict()) and "values" not in view["release"]
    row = member_row(MANAGER, healthy.hub)
    assert row["checked_in"] and row["state"] == "checked-in" and row["healthy"] is True
    assert judge(lab, member, "edge", hub_ns, dict(desired, labels={"env": "prod"})).action == "relabel"

    # the agent release uninstalled (and Fleet's own, when it adopted the agent): the hub still saw it recently
    for release in releases(lab, member):
        lab.run_helm(member, "uninstall", release["name"], "--namespace", AGENT_NS)
    broken = judge(lab, member, "edge", hub_ns, desired)
    assert broken.hub["seen_age_seconds"] < 3600
    assert broken.action == "install" and any("not installed" in r for r in broken.reasons), broken.as_dict()
    assert not broken.healthy

    # and its credential Secret deleted too: a new registration is needed first
    client.CoreV1Api(lab.api_client(member)).delete_namespaced_secret("fleet-agent", AGENT_NS)
    wait_for(lambda: not MANAGER.member_view(kube(lab, member), None, {})["credential"], 30, "the credential to go")
    lost = judge(lab, member, "edge", hub_ns, desired)
    assert lost.action == "reregister", lost.as_dict()
    assert any("credential" in r for r in lost.reasons) and any("not installed" in r for r in lost.reasons)


def test_member_view_credential_deleted_while_installed(lab, hub, hub_ns, fresh_member):
    member = fresh_member("member2")
    make_token(lab, hub_ns)
    result = ok(run_module("fleet_agent", agent_args(lab, member, token_name="join", token_namespace=hub_ns, wait=True,
                                                     wait_timeout=CHECKIN_TIMEOUT)))
    name = result["cluster"]["name"]
    assert judge(lab, member, name, hub_ns, {"stale_after": 3600}).action == "none"
    client.CoreV1Api(lab.api_client(member)).delete_namespaced_secret("fleet-agent", AGENT_NS)
    state = judge(lab, member, name, hub_ns, {"stale_after": 3600})
    assert state.action == "reregister" and state.hub["seen_age_seconds"] < 3600, state.as_dict()
    assert len(state.reasons) == 1 and "hub credential (Secret cattle-fleet-system/fleet-agent) is missing on the member" in state.reasons[0]
    assert [item["cause"] for item in state.findings] in (["bootstrap_missing"], ["credential_missing"]), state.findings


def test_a_forged_agent_credential_is_not_followed(lab, hub, hub_ns, fresh_member, tmp_path):
    """The agent's credential Secret fleet-agent, forged on the member (its kubeconfig names a TLS listener of the test's
    with that listener's CA and a planted token): member_info sends nothing there, never shows the token, and reports a
    credential that names another hub than the collection gives the agent (a new registration repairs it)."""
    import base64
    import json

    import yaml

    from test_forged_member_state import Listener

    member = fresh_member("member2")
    make_token(lab, hub_ns)
    result = ok(run_module("fleet_agent", agent_args(lab, member, token_name="join", token_namespace=hub_ns, wait=True,
                                                     wait_timeout=CHECKIN_TIMEOUT)))
    name = result["cluster"]["name"]
    listener = Listener(tmp_path)
    listener.start()
    marker = "forged-fleet-marker-%s" % name
    forged = {"apiVersion": "v1", "kind": "Config", "current-context": "x",
              "clusters": [{"name": "x", "cluster": {"server": listener.url, "certificate-authority-data": base64.b64encode(
                  (tmp_path / "listener.crt").read_bytes()).decode()}}],
              "users": [{"name": "x", "user": {"token": marker}}], "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}
    core = client.CoreV1Api(lab.api_client(member))
    core.patch_namespaced_secret("fleet-agent", AGENT_NS, {"data": {"kubeconfig": base64.b64encode(yaml.safe_dump(forged).encode()).decode()}})
    try:
        info = run_module("member_info", {"kubeconfig": str(lab.kubeconfig), "context": member, "hub_kubeconfig": str(lab.kubeconfig),
                                          "hub_context": "hub", "name": name, "backends": ["rancher_fleet"], "fleet_namespace": hub_ns})
        assert not info.failed, info.get("msg")
        assert listener.connections == 0 and listener.received == b"", (
            "the forged credential's server was contacted (%d connections): %r" % (listener.connections, listener.received[:300]))
        assert marker not in json.dumps(dict(info))
        state = info["managers"]["rancher_fleet"]
        assert state["action"] == "reregister", state["reasons"]
        assert any("names the hub %s, not %s" % (listener.url, lab.api_urls["hub"]) in reason for reason in state["reasons"]), state["reasons"]
    finally:
        listener.stop()
