"""Issue 8 for Rancher Fleet against the lab: preflight before Helm, truthful changed and rollback, labelled and
pruned tokens, check mode on fresh targets, and no leftovers on leave."""

import threading
import time

import pytest
import yaml
from kubernetes import client

from modrun import run_module
from kube_helpers import absent as _missing, unique, wait_for
from rancher_fleet_lab import (  # noqa: F401 pylint: disable=unused-import
    AGENT_NS, CHECKIN_TIMEOUT, agent_args, fresh_member, hub, hub_args, hub_ns, make_token, ok, releases, warnings,
)
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_auth import endpoint_configuration
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import KubeClient

pytestmark = pytest.mark.lab

MANAGED = "app.kubernetes.io/managed-by"


def nothing_installed(lab, member):
    assert releases(lab, member) == []
    assert _missing(lambda: client.CoreV1Api(lab.api_client(member)).read_namespace(AGENT_NS))


def refused(lab, token):
    try:
        KubeClient(endpoint_configuration(lab.api_urls["hub"], lab.ca_pem("hub"), token), label="hub").whoami()
    except ApiError as exc:
        return exc.status == 401
    return False


def test_preflight_fails_naming_the_option_with_nothing_installed(lab, hub, hub_ns, fresh_member, tmp_path):
    member = fresh_member("member2")
    values_file = tmp_path / "values.yaml"
    make_token(lab, hub_ns, values_dest=str(values_file))
    token = yaml.safe_load(values_file.read_text())["token"]
    base = agent_args(lab, member, token_name="join", token_namespace=hub_ns)
    for args, param, words in [
        (dict(base, hub_api_server_url="https://127.0.0.1:1"), "hub_api_server_url:", "not reachable"),
        (dict(base, hub_api_server_ca=lab.ca_pem(member)), "hub_api_server_ca:", "does not verify"),
    ]:
        result = run_module("fleet_agent", args)
        assert result.failed and result["msg"].startswith(param) and words in result["msg"], result["msg"]
        assert "nothing was installed" in result["msg"] and not result.changed
        assert token not in result["raw_output"]
        nothing_installed(lab, member)

    # a revoked token: Fleet removes its ServiceAccount, the hub refuses the token the values file still holds
    ok(run_module("fleet_registration_token", dict(hub_args(lab), name="join", namespace=hub_ns, state="absent")))
    wait_for(lambda: refused(lab, token), 60, "the hub to refuse the revoked token")
    result = run_module("fleet_agent", agent_args(lab, member, values_file=str(values_file)))
    assert result.failed and result["msg"].startswith("values_file:") and "refuses the registration token" in result["msg"]
    nothing_installed(lab, member)

    # a token that is gone (or expired): the message says Fleet deletes expired tokens
    ok(run_module("fleet_registration_token", dict(hub_args(lab), name="short", namespace=hub_ns, ttl="2s", wait=False)))
    time.sleep(3)
    result = run_module("fleet_agent", dict(base, token_name="short"))
    assert result.failed and result["msg"].startswith("token_name:"), result["msg"]
    assert "Fleet deletes" in result["msg"] and "expired" in result["msg"]
    nothing_installed(lab, member)


def test_fresh_install_that_never_checks_in_is_rolled_back_unless_kept(lab, hub, hub_ns, fresh_member):
    member = fresh_member("member1")
    make_token(lab, hub_ns)
    # an address only the agent would use and that answers nobody: the preflight is off, so Helm installs
    args = agent_args(lab, member, token_name="join", token_namespace=hub_ns, hub_api_server_url="https://127.0.0.1:1",
                      preflight=False, wait=True, wait_timeout=25, wait_sleep=1)
    result = run_module("fleet_agent", args)
    assert result.failed and result.changed, result
    assert "uninstalled again" in result["msg"] and "keep_failed_install" in result["msg"]
    assert releases(lab, member) == []

    kept = run_module("fleet_agent", dict(args, keep_failed_install=True))
    assert kept.failed and kept.changed and "was kept" in kept["msg"]
    assert [r["name"] for r in releases(lab, member)] == ["fleet-agent"]
    left = ok(run_module("fleet_agent", dict(agent_args(lab, member), state="absent", wait=True, wait_timeout=120)))
    assert left.changed and left["removed_namespace"]
    nothing_installed(lab, member)


def test_tokens_are_labelled_and_pruned(lab, hub, hub_ns):
    args = dict(hub_args(lab), namespace=hub_ns, ttl="1h")
    first = ok(run_module("fleet_registration_token", dict(args, name="run-1", run_id="r1")))
    assert first["run_id"] == "r1"
    meta = hub.get("clusterregistrationtokens", hub_ns, "run-1")["metadata"]
    assert meta["labels"][MANAGED] == "fleetops.registration" and meta["labels"]["fleetops.registration/run"] == "r1"
    assert meta["annotations"]["fleetops.registration/expires"]
    # a token the collection did not make is never pruned
    hub.custom.create_namespaced_custom_object("fleet.cattle.io", "v1alpha1", hub_ns, "clusterregistrationtokens", {
        "apiVersion": "fleet.cattle.io/v1alpha1", "kind": "ClusterRegistrationToken", "metadata": {"name": "users-own"},
        "spec": {"ttl": "1h"}})
    # the next run labels its own token, keeps it, and removes the one run r1 left behind
    assert ok(run_module("fleet_registration_token", dict(args, name="run-2", run_id="r2", prune=True), check=True))["pruned"] == [
        {"name": "run-1", "reason": "left by run r1"}]
    assert hub.get("clusterregistrationtokens", hub_ns, "run-1") is not None
    second = ok(run_module("fleet_registration_token", dict(args, name="run-2", run_id="r2", prune=True)))
    assert second.changed and [p["name"] for p in second["pruned"]] == ["run-1"]
    assert hub.get("clusterregistrationtokens", hub_ns, "run-1") is None
    assert not ok(run_module("fleet_registration_token", dict(args, name="run-2", run_id="r2", prune=True))).changed
    # prune alone (as a leave or hub_prepare would): without a run id only expired tokens go
    alone = ok(run_module("fleet_registration_token", dict(hub_args(lab), namespace=hub_ns, prune=True)))
    assert not alone.changed and alone["pruned"] == []
    gone = ok(run_module("fleet_registration_token", dict(hub_args(lab), namespace=hub_ns, prune=True, prune_grace=0)))
    assert [p["name"] for p in gone["pruned"]] == ["run-2"]
    assert [t["metadata"]["name"] for t in hub.items("clusterregistrationtokens", hub_ns)] == ["users-own"]


def test_check_mode_on_a_fresh_target_predicts_with_warnings(lab, hub, fresh_member, tmp_path):
    member = fresh_member("member2")
    namespace = unique("fo-notyet")  # hub_prepare would create it; in check mode it only dry-ran
    token = run_module("fleet_registration_token", dict(hub_args(lab), name="join", namespace=namespace, ttl="1h"),
                       check=True, diff=True)
    assert not token.failed and token.changed, token.get("msg")
    assert any("does not exist yet" in w for w in warnings(token))
    assert token["diff"]["after"]["metadata"]["name"] == "join"
    cluster = run_module("fleet_cluster", dict(hub_args(lab), name="edge", namespace=namespace, labels={"env": "lab"}),
                         check=True, diff=True)
    assert not cluster.failed and cluster.changed and cluster["diff"]["after"]["cluster"]["metadata"]["labels"] == {"env": "lab"}
    for extra in ({"token_name": "join", "token_namespace": namespace}, {"values_file": str(tmp_path / "later.yaml")}):
        agent = run_module("fleet_agent", agent_args(lab, member, **extra), check=True, diff=True)
        assert not agent.failed and agent.changed and agent["action"] == "install", agent.get("msg")
        assert any("assuming an earlier task creates it" in w for w in warnings(agent))
        assert agent["diff"]["before"] == {} and agent["diff"]["after"]["status"] == "deployed"
    assert _missing(lambda: hub.core.read_namespace(namespace))
    nothing_installed(lab, member)


def test_leave_removes_the_namespace_unless_something_of_value_is_in_it(lab, hub, hub_ns, fresh_member):
    member = fresh_member("member1")
    core = client.CoreV1Api(lab.api_client(member))
    make_token(lab, hub_ns)
    args = agent_args(lab, member, token_name="join", token_namespace=hub_ns, wait=True, wait_timeout=CHECKIN_TIMEOUT)
    ok(run_module("fleet_agent", args))
    assert core.read_namespace(AGENT_NS).metadata.labels[MANAGED] == "fleetops.registration"
    left = ok(run_module("fleet_agent", dict(agent_args(lab, member), state="absent", wait=True, wait_timeout=120)))
    assert left["removed_namespace"] and left["namespace_kept_for"] == []
    nothing_installed(lab, member)

    # a namespace someone else made, holding their settings: kept, with the reason
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=AGENT_NS)))
    core.create_namespaced_config_map(AGENT_NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="site-settings"),
                                                                   data={"a": "b"}))
    ok(run_module("fleet_agent", args))
    kept = ok(run_module("fleet_agent", dict(agent_args(lab, member), state="absent")))
    assert kept.changed and not kept["removed_namespace"] and kept["namespace_kept_for"] == ["ConfigMap site-settings"]
    assert any("site-settings" in w for w in warnings(kept))
    assert core.read_namespace(AGENT_NS).status.phase == "Active"
    assert releases(lab, member) == []


def test_a_token_fleet_does_not_handle_in_time_is_touched_until_it_does(lab_controllers, hub, hub_ns):
    """Fleet's agentmanagement frozen past the module's nudge interval: the wait touches the token and still succeeds
    once Fleet acts (the touch is what makes Fleet handle a token whose ServiceAccount event it missed)."""
    lab = lab_controllers
    agentmanagement = "hub/cattle-fleet-system/fleet-controller-*/fleet-agentmanagement"
    lab.freeze(agentmanagement)
    try:
        thaw = threading.Timer(26, lambda: lab.thaw(agentmanagement))
        thaw.start()
        started = time.monotonic()
        result = ok(run_module("fleet_registration_token", dict(hub_args(lab), name="slow", namespace=hub_ns, ttl="1h",
                                                                wait=True, wait_timeout=120)))
        assert time.monotonic() - started >= 25 and result["secret_name"] == "slow"
        thaw.join()
    finally:
        lab.thaw(agentmanagement)
    token = hub.get("clusterregistrationtokens", hub_ns, "slow")
    assert "fleetops.registration/nudged" in (token["metadata"].get("annotations") or {}), token["metadata"]
    assert hub.token_values(hub_ns, "slow")["tokenName"] == "slow"
