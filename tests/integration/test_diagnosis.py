"""member_info's diagnosis against the lab: faults injected into a real KubeFleet member agent on member2, each named
with its cause, evidence and fix, then undone.

One join serves every fault (the agent tests share member2's single member-agent release, see
test_kubefleet_modules.py): a crash-looping agent, an image the member cannot pull, a hub CA that does not verify the
hub, and an expired token signed by the hub's own service-account key.
"""

import base64
import copy
import datetime
import json
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID
from kubernetes import client

from modrun import run_module
from kube_helpers import wait_for
from test_kubefleet_modules import (  # pylint: disable=unused-import
    HUB_NS, MEMBER_CTX, TOKEN_NS, agent_args, agent_member, hub, hub_args, member, ok,
)

pytestmark = pytest.mark.lab

AGENT_NAMESPACE, AGENT_DEPLOYMENT = "fleet-system", "member-agent"


@pytest.fixture(autouse=True)
def _needs_controllers(lab_controllers):
    return lab_controllers


def diagnosis(lab, name):
    """member_info's KubeFleet part for ``name`` on member2: ``(action, findings)``."""
    args = dict(name=name, kubeconfig=str(lab.kubeconfig), context=MEMBER_CTX, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub",
                backends=["kubefleet"])
    result = ok(run_module("member_info", args))
    state = result["managers"]["kubefleet"]
    return state["action"], state["diagnosis"]


def wait_for_cause(lab, name, cause, timeout=90):
    def found():
        action, findings = diagnosis(lab, name)
        return (action, findings) if findings and findings[0]["cause"] == cause else None
    return wait_for(found, timeout, "member_info to name %s first" % cause, interval=2)


def wait_until_healthy(lab, name, timeout=120):
    return wait_for(lambda: diagnosis(lab, name)[1] == [] or None, timeout, "the agent to serve again", interval=2)


def patch_agent_container(lab, change):
    """Apply ``change`` to the agent container of the member-agent Deployment; returns the container as it was."""
    apps = client.AppsV1Api(lab.api_client(MEMBER_CTX))
    deployment = apps.read_namespaced_deployment(AGENT_DEPLOYMENT, AGENT_NAMESPACE)
    containers = lab.api_client(MEMBER_CTX).sanitize_for_serialization(deployment.spec.template.spec.containers)
    original = copy.deepcopy(containers)
    change(containers[0])
    apps.patch_namespaced_deployment(AGENT_DEPLOYMENT, AGENT_NAMESPACE, {"spec": {"template": {"spec": {"containers": containers}}}})
    return original


def restore_agent_containers(lab, containers):
    apps = client.AppsV1Api(lab.api_client(MEMBER_CTX))
    apps.patch_namespaced_deployment(AGENT_DEPLOYMENT, AGENT_NAMESPACE, {"spec": {"template": {"spec": {"containers": containers}}}})


def other_ca_pem():
    """A CA certificate no lab cluster uses."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "not-the-hub-ca")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _b64url(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def expired_service_account_token(lab, member_name):
    """A token for the member's hub identity, signed with the hub's own service-account key, that expired an hour ago:
    what the member would hold had it been issued with an expiry and never renewed."""
    key = serialization.load_pem_private_key((lab.ca_files["hub"].parent / "sa.key").read_bytes(), password=None)
    now = int(time.time())
    issuer = lab.api_urls["hub"]
    account = "%s-hub-cluster-access" % member_name
    claims = {"iss": issuer, "aud": [issuer], "sub": "system:serviceaccount:%s:%s" % (HUB_NS, account),
              "iat": now - 7200, "nbf": now - 7200, "exp": now - 3600,
              "kubernetes.io": {"namespace": HUB_NS, "serviceaccount": {"name": account, "uid": "00000000-0000-0000-0000-000000000000"}}}
    signing_input = "%s.%s" % (_b64url(json.dumps({"alg": "ES256", "typ": "JWT"}).encode()), _b64url(json.dumps(claims).encode()))
    r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return "%s.%s" % (signing_input, _b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big")))


def test_member_info_names_the_cause_of_each_injected_agent_fault(lab, hub, agent_member):
    name = agent_member
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=name)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=name, heartbeat_period_seconds=5)))
    args = agent_args(lab, name, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub")
    ok(run_module("kubefleet_member_agent", args))
    assert diagnosis(lab, name)[1] == []  # healthy (relabel at most: the modules alone record no cluster identity)

    # a crash-looping agent: the new pod exits at once (an unknown flag), the old one still serves
    original = patch_agent_container(lab, lambda c: c.setdefault("args", []).append("--no-such-flag"))
    _action, findings = wait_for_cause(lab, name, "crash_loop")
    assert "last exit code" in findings[0]["evidence"] and "--previous" in findings[0]["fix"]
    assert any(f["cause"] == "not_rolled_out" for f in findings), findings
    restore_agent_containers(lab, original)
    wait_until_healthy(lab, name)

    # a hub CA that does not verify the hub: the root cause, before whatever the agent does with it
    lab.run_helm(MEMBER_CTX, "upgrade", "member-agent", str(lab.kubefleet_chart("member-agent")), "--namespace", "fleet-hub-credentials",
                 "--reuse-values", "--set", "config.hubCA=%s" % base64.b64encode(other_ca_pem().encode()).decode())
    action, findings = wait_for_cause(lab, name, "hub_ca_untrusted", timeout=30)
    assert lab.api_urls["hub"] in findings[0]["evidence"] and "CERTIFICATE_VERIFY_FAILED" in findings[0]["evidence"]
    assert action == "upgrade" and "fleetops_ca_file" in findings[0]["fix"] and findings[0]["fix"].endswith("(action upgrade).")
    repaired = ok(run_module("kubefleet_member_agent", args))
    assert repaired.changed
    wait_until_healthy(lab, name)

    # an expired token in the member's Secret: named as expired (not merely rejected), and a plain re-run replaces it
    token = expired_service_account_token(lab, name)
    hub.member_core.patch_namespaced_secret("hub-kubeconfig-secret", TOKEN_NS, {"data": {"token": base64.b64encode(token.encode()).decode()}})
    action, findings = wait_for_cause(lab, name, "token_expired", timeout=30)
    assert action == "reregister" and "expired at" in findings[0]["evidence"], findings
    assert findings[0]["fix"].endswith("(action reregister).")
    assert token not in json.dumps(findings)
    ok(run_module("kubefleet_member_agent", args))
    wait_until_healthy(lab, name)

    # an image the member cannot pull
    original = patch_agent_container(lab, lambda c: c.update(image="registry.invalid/fleet/member-agent:missing"))
    _action, findings = wait_for_cause(lab, name, "image_pull")
    assert "registry.invalid/fleet/member-agent:missing" in findings[0]["evidence"] + findings[0]["fix"]
    assert "ImagePullBackOff" in findings[0]["evidence"] or "ErrImagePull" in findings[0]["evidence"]
    restore_agent_containers(lab, original)
    wait_until_healthy(lab, name)


def health_everywhere(lab, name, directory):
    """``(member_info, fleet_status, inventory plugin)``'s health of the KubeFleet member ``name``: healthy (bool),
    the HEALTHY cell, and the host's health group."""
    from test_inventory_plugin import graph, write_plugin_inventory  # pylint: disable=import-outside-toplevel
    args = dict(name=name, kubeconfig=str(lab.kubeconfig), context=MEMBER_CTX, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub",
                backends=["kubefleet"])
    info = ok(run_module("member_info", args))["healthy"]
    status = ok(run_module("fleet_status_info", {"kubeconfig": str(lab.kubeconfig), "context": "hub", "backends": ["kubefleet"]}))
    groups, _hostvars = graph(write_plugin_inventory(lab, directory, managers=["kubefleet"]), directory)
    group = [group for group in ("healthy", "unhealthy", "stale", "not_joined", "leaving") if name in groups.get(group, ())]
    return info, status["members"][name]["kubefleet"]["healthy"], group


def test_member_info_fleet_status_and_the_inventory_agree_on_health(lab, hub, agent_member, tmp_path):
    """One meaning of healthy: a member whose agent is scaled to 0 goes silent on the hub, and member_info, fleet_status
    and the inventory plugin all call it unhealthy; back at one replica, all three call it healthy."""
    name = agent_member
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=name)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=name, heartbeat_period_seconds=5)))
    ok(run_module("kubefleet_member_agent", agent_args(lab, name, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub")))
    wait_until_healthy(lab, name)
    assert health_everywhere(lab, name, tmp_path / "healthy") == (True, True, ["healthy"])
    apps = client.AppsV1Api(lab.api_client(MEMBER_CTX))
    apps.patch_namespaced_deployment_scale(AGENT_DEPLOYMENT, AGENT_NAMESPACE, {"spec": {"replicas": 0}})
    try:
        wait_for_cause(lab, name, "agent_unavailable", timeout=30)
        wait_for(lambda: health_everywhere(lab, name, tmp_path / "silent")[1] is False or None, 60, "the heartbeat to go stale", interval=3)
        info, status, group = health_everywhere(lab, name, tmp_path / "silent")
        assert (info, status) == (False, False) and group in (["stale"], ["not_joined"], ["unhealthy"]), (info, status, group)
    finally:
        apps.patch_namespaced_deployment_scale(AGENT_DEPLOYMENT, AGENT_NAMESPACE, {"spec": {"replicas": 1}})
    wait_until_healthy(lab, name)
    wait_for(lambda: health_everywhere(lab, name, tmp_path / "back") == (True, True, ["healthy"]) or None, 60, "all three to agree", interval=3)


def _copied_heartbeat(hub, name):
    """Epoch seconds of the member agent's heartbeat as the hub agent copied it onto the MemberCluster (0 without)."""
    agents = ((hub.member_cluster(name) or {}).get("status") or {}).get("agentStatus") or []
    beats = [a.get("lastReceivedHeartbeat") for a in agents if a.get("type") == "MemberAgent" and a.get("lastReceivedHeartbeat")]
    return _epoch(beats[0]) if beats else 0


def _epoch(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def test_the_agent_module_judges_a_heartbeat_by_the_newest_record_the_hub_keeps(lab, hub, agent_member):
    """After a hub outage the hub agent copies the member agent's heartbeat onto the MemberCluster tens of seconds late
    (soak seed 2150 round 3). member_info reads the InternalMemberCluster's; the agent module, run without member_info's
    word, judged the copy alone and restarted an agent that was heartbeating, then waited for a copy that did not come."""
    name = agent_member
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=name)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=name, heartbeat_period_seconds=5)))
    args = agent_args(lab, name, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub", wait_timeout=45)
    ok(run_module("kubefleet_member_agent", args))
    wait_until_healthy(lab, name)
    apps = client.AppsV1Api(lab.api_client(MEMBER_CTX))
    template = apps.read_namespaced_deployment(AGENT_DEPLOYMENT, AGENT_NAMESPACE).spec.template.metadata.annotations
    hub_agent = "hub/fleet-system/hub-agent-*/hub-agent"
    lab.freeze(hub_agent)
    try:
        copied = _copied_heartbeat(hub, name)
        wait_for(lambda: time.time() - copied > 20, 40, "the MemberCluster's heartbeat copy to be older than 3 periods")
        rerun = run_module("kubefleet_member_agent", args)
    finally:
        lab.thaw(hub_agent)
    assert not rerun.failed and not rerun["changed"] and rerun["repaired"] is None, (rerun.get("msg"), rerun.get("repaired"))
    assert apps.read_namespaced_deployment(AGENT_DEPLOYMENT, AGENT_NAMESPACE).spec.template.metadata.annotations == template
    beats = [a["last_received_heartbeat"] for a in rerun["member"]["agents"] if a.get("type") == "MemberAgent"]
    assert beats and _epoch(beats[0]) > copied + 5, "the module reported the hub agent's stale copy: %s" % beats
