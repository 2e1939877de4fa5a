"""Member state is evidence, never configuration (issue 31): a member-agent release record forged on the member - a
Helm storage Secret anyone who may write Secrets in the release namespace can plant - points the agent at a listener
of the test's, turns TLS verification off and names a planted Secret as the token. member_info and the agent step of a
join must send nothing there, never show the planted token, report the forged values as drift, and leave the agent as
the collection configures it; a rollback to the forged revision is refused."""

import base64
import gzip
import json
import socket
import ssl
import subprocess
import threading

import pytest
from kubernetes import client

from modrun import run_module
from kube_helpers import ignore_404, read_or_none, unique
from test_kubefleet_modules import (  # noqa: F401 pylint: disable=unused-import
    MEMBER_CTX, TOKEN_NS, Hub, agent_args, agent_member, hub, hub_args, member, ok,
)

pytestmark = pytest.mark.lab

RELEASE_NS = "fleet-hub-credentials"  # kubefleet_member_agent's release_namespace
# Where the planted hooks make their ConfigMaps: a namespace no leave deletes, so a hook that ran is still seen.
HOOK_NS = "default"


class Listener(threading.Thread):
    """A TLS server on 127.0.0.1 that records every connection and every byte it is sent (a plain TCP connection
    that never completes the handshake counts as a connection)."""

    def __init__(self, tmp_path):
        super().__init__(daemon=True)
        key, cert = tmp_path / "listener.key", tmp_path / "listener.crt"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                       check=True, capture_output=True)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(str(cert), str(key))
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.5)
        self.port = self.server.getsockname()[1]
        self.connections, self.received = 0, b""
        self.stopped = threading.Event()

    @property
    def url(self):
        return "https://127.0.0.1:%d" % self.port

    def run(self):
        while not self.stopped.is_set():
            try:
                conn, _addr = self.server.accept()
            except socket.timeout:
                continue
            self.connections += 1
            conn.settimeout(5)
            try:
                with self.context.wrap_socket(conn, server_side=True) as tls:
                    while True:
                        data = tls.recv(65536)
                        if not data:
                            break
                        self.received += data
                        tls.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                        break
            except (OSError, ssl.SSLError):
                conn.close()

    def stop(self):
        self.stopped.set()
        self.join(5)
        self.server.close()


def _encode(payload):
    return base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()


def _decode(data):
    raw = base64.b64decode(data)
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def plant_forged_release(core, listener_url, token_secret):
    """A release record one revision after the newest, deployed, whose values send the agent to ``listener_url``
    without TLS verification and with the token in ``token_secret``; the record before it marked superseded, as Helm
    would. Returns the name of the planted record."""
    records = core.list_namespaced_secret(RELEASE_NS, label_selector="owner=helm,name=member-agent").items
    newest = max(records, key=lambda s: int(s.metadata.labels["version"]))
    payload = _decode(base64.b64decode(newest.data["release"]))
    payload["info"]["status"] = "superseded"
    core.patch_namespaced_secret(newest.metadata.name, RELEASE_NS, {
        "metadata": {"labels": {"status": "superseded"}},
        "data": {"release": base64.b64encode(_encode(payload).encode()).decode()}})
    version = int(newest.metadata.labels["version"]) + 1
    config = dict(payload["config"])
    config["config"] = dict(config.get("config") or {}, hubURL=listener_url)
    config["tlsClientInsecure"] = True
    config["secret"] = {"name": token_secret, "namespace": RELEASE_NS}
    payload.update(config=config, version=version)
    payload["info"]["status"] = "deployed"
    name = "sh.helm.release.v1.member-agent.v%d" % version
    labels = dict(newest.metadata.labels, version=str(version), status="deployed")
    core.create_namespaced_secret(RELEASE_NS, client.V1Secret(
        metadata=client.V1ObjectMeta(name=name, labels=labels), type=newest.type,
        data={"release": base64.b64encode(_encode(payload).encode()).decode()}))
    return name


def nothing_sent(listener, marker, output):
    assert listener.connections == 0 and listener.received == b"", (
        "the forged release's hub URL was contacted (%d connections): %r" % (listener.connections, listener.received[:300]))
    assert marker not in json.dumps(dict(output)) and marker not in (output.get("raw_output") or ""), "the planted token is in the output"


def newest_values(core):
    records = core.list_namespaced_secret(RELEASE_NS, label_selector="owner=helm,name=member-agent").items
    newest = max(records, key=lambda s: int(s.metadata.labels["version"]))
    return newest.metadata.labels["status"], _decode(base64.b64decode(newest.data["release"]))["config"]


def test_a_forged_release_record_redirects_no_credential_and_is_repaired(lab_controllers, hub, agent_member, tmp_path):  # noqa: F811
    lab, member_name = lab_controllers, agent_member
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member_name)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member_name, heartbeat_period_seconds=5)))
    connections = dict(kubeconfig=str(lab.kubeconfig), context=MEMBER_CTX, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub")
    args = agent_args(lab, member_name, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub")
    ok(run_module("kubefleet_member_agent", args))

    core = hub.member_core
    marker = "forged-marker-%s" % unique("t")
    planted_secret = unique("planted-token")
    listener = Listener(tmp_path)
    listener.start()
    core.create_namespaced_secret(RELEASE_NS, client.V1Secret(
        metadata=client.V1ObjectMeta(name=planted_secret), data={"token": base64.b64encode(marker.encode()).decode()}))
    forged = None
    try:
        forged = plant_forged_release(core, listener.url, planted_secret)

        info = run_module("member_info", dict(connections, name=member_name, backends=["kubefleet"]))
        assert not info.failed, info.get("msg")
        nothing_sent(listener, marker, info)
        state = info["managers"]["kubefleet"]
        assert state["action"] == "upgrade", state["reasons"]
        reasons = " | ".join(state["reasons"])
        assert "uses hub URL %s, not %s" % (listener.url, lab.api_urls["hub"]) in reasons, reasons
        assert "does not verify the hub's certificate (tlsClientInsecure)" in reasons, reasons
        assert "reads its token from %s/%s, not %s/hub-kubeconfig-secret" % (RELEASE_NS, planted_secret, TOKEN_NS) in reasons
        credential = state["member"]["credential"]
        assert (credential["namespace"], credential["accepted"]) == (TOKEN_NS, True), credential

        repaired = ok(run_module("kubefleet_member_agent", args))
        assert repaired.changed and repaired["member"]["joined"] is True

        nothing_sent(listener, marker, repaired)

        status, values = newest_values(core)
        assert status == "deployed"
        assert values["config"]["hubURL"] == lab.api_urls["hub"] and values["tlsClientInsecure"] is False
        assert values["secret"] == {"name": "hub-kubeconfig-secret", "namespace": TOKEN_NS}
        # The forged record stays in the release's history: rolling back to it is refused, and nothing is sent.
        forged_revision = int(forged.rsplit(".v", 1)[1])
        refused = run_module("kubefleet_member_agent", dict(args, rollback_to_revision=forged_revision))
        assert refused.failed and "rollback_to_revision" in refused["msg"], refused.get("msg")
        assert "uses hub URL %s" % listener.url in refused["msg"], refused["msg"]
        nothing_sent(listener, marker, refused)
        assert newest_values(core)[1]["config"]["hubURL"] == lab.api_urls["hub"]

        after = run_module("member_info", dict(connections, name=member_name, backends=["kubefleet"]))
        assert after["managers"]["kubefleet"]["action"] in ("none", "relabel"), after["managers"]["kubefleet"]["reasons"]
    finally:
        listener.stop()
        ignore_404(lambda: core.delete_namespaced_secret(planted_secret, RELEASE_NS))
        if forged:
            ignore_404(lambda: core.delete_namespaced_secret(forged, RELEASE_NS))


def joined_agent(lab, member_name):
    """``member_name`` joined to the hub with its agent on member2; the agent step's arguments."""
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member_name)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member_name)))
    args = agent_args(lab, member_name, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub")
    ok(run_module("kubefleet_member_agent", args))
    return args


def plant_record(core, edit):
    """A copy of the newest member-agent record, one revision later and deployed, changed by ``edit(payload)``, as
    anyone who may create Secrets in the release namespace can plant it; ``(Secret name, revision)``."""
    records = core.list_namespaced_secret(RELEASE_NS, label_selector="owner=helm,name=member-agent").items
    newest = max(records, key=lambda s: int(s.metadata.labels["version"]))
    payload = _decode(base64.b64decode(newest.data["release"]))
    version = int(newest.metadata.labels["version"]) + 1
    payload.update(version=version)
    payload["info"]["status"] = "deployed"
    edit(payload)
    name = "sh.helm.release.v1.member-agent.v%d" % version
    core.create_namespaced_secret(RELEASE_NS, client.V1Secret(
        metadata=client.V1ObjectMeta(name=name, labels=dict(newest.metadata.labels, version=str(version), status="deployed")),
        type=newest.type, data={"release": base64.b64encode(_encode(payload).encode()).decode()}))
    return name, version


def hooks_of(hook_names):
    """A record edit adding a hook per event of ``hook_names``: each a ConfigMap ``hook_names[event]`` in HOOK_NS,
    which exists afterwards only if Helm ran it. The values stay the agent's own, so the collection's rollback guard
    (which compares values) lets the record through."""
    def edit(payload):
        payload["hooks"] = [{
            "name": name, "kind": "ConfigMap", "path": "member-agent/templates/planted.yaml", "weight": 0, "events": [event],
            "delete_policies": [], "last_run": {"started_at": "", "completed_at": "", "phase": ""},
            "manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  annotations:\n"
                        "    helm.sh/hook: %s\ndata:\n  planted: \"true\"\n" % (name, HOOK_NS, event)}
            for event, name in sorted(hook_names.items())]
    return edit


def test_a_planted_release_record_s_hooks_never_run_on_a_rollback_or_a_leave(lab_controllers, hub, agent_member):  # noqa: F811
    """Issue 46: Helm carries out the hooks of the record it acts on, a Secret anyone who may write Secrets in the release
    namespace can plant. A rollback to a planted revision (its values are the agent's own, so the guard lets it through) and the
    leave that uninstalls it run none of them."""
    lab, member_name = lab_controllers, agent_member
    args = joined_agent(lab, member_name)
    core = hub.member_core
    hooks = {"pre-rollback": unique("planted-pre-rollback"), "pre-delete": unique("planted-pre-delete")}

    def hooks_that_ran():
        return [name for name in hooks.values()
                if read_or_none(lambda n=name: core.read_namespaced_config_map(n, HOOK_NS)) is not None]
    try:
        planted = plant_record(core, hooks_of(hooks))[1]
        # Another revision on top (other values), so that the planted one is a rollback target.
        ok(run_module("kubefleet_member_agent", dict(args, values={"logVerbosity": 3})))
        rolled = ok(run_module("kubefleet_member_agent", dict(args, rollback_to_revision=planted)))
        assert rolled.changed, rolled
        assert hooks_that_ran() == [], "the planted record's pre-rollback hook ran"
        left = ok(run_module("kubefleet_member_agent", dict(args, state="absent")))
        assert left.changed and hub.release() == [], hub.release()
        assert hooks_that_ran() == [], "the planted record's pre-delete hook ran"
    finally:
        for name in hooks.values():
            ignore_404(lambda n=name: core.delete_namespaced_config_map(n, HOOK_NS))


def test_a_planted_release_record_s_foreign_objects_are_never_deleted_by_a_leave(lab_controllers, hub, agent_member):  # noqa: F811
    """Issue 46: helm uninstall deletes what the newest record lists. A record planted on top of the agent's that also
    lists a kube-system object makes the leave stop before Helm runs, naming the record and the object, which
    survives; once the planted record is gone, the leave goes ahead."""
    lab, member_name = lab_controllers, agent_member
    args = joined_agent(lab, member_name)
    core = hub.member_core
    victim = unique("victim")
    core.create_namespaced_config_map("kube-system", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=victim)))
    try:
        foreign = "\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: kube-system\n" % victim
        planted = plant_record(core, lambda payload: payload.update(manifest=payload["manifest"] + foreign))[0]

        refused = run_module("kubefleet_member_agent", dict(args, state="absent"))
        assert refused.failed, refused
        assert "release record %s/%s lists objects the agent chart does not make (ConfigMap kube-system/%s)" % (
            RELEASE_NS, planted, victim) in refused["msg"], refused["msg"]
        assert read_or_none(lambda: core.read_namespaced_config_map(victim, "kube-system")) is not None
        assert hub.release(), "the refused leave uninstalled the agent"

        core.delete_namespaced_secret(planted, RELEASE_NS)
        left = ok(run_module("kubefleet_member_agent", dict(args, state="absent")))
        assert left.changed and hub.release() == []
        assert read_or_none(lambda: core.read_namespaced_config_map(victim, "kube-system")) is not None
    finally:
        ignore_404(lambda: core.delete_namespaced_config_map(victim, "kube-system"))


def test_a_planted_release_record_s_foreign_objects_are_neither_made_nor_deleted_by_an_upgrade_or_a_rollback(
        lab_controllers, hub, agent_member):  # noqa: F811
    """Issue 46: helm upgrade deletes what the record it upgrades from lists and the chart no longer renders, and helm
    rollback applies what the target record lists. A planted newest record listing a kube-system object makes the next
    upgrade stop before Helm runs (the object survives); a planted older record listing a new ClusterRoleBinding to
    cluster-admin, under a later revision, is refused as a rollback target (the binding is never made). Both name the
    record."""
    lab, member_name = lab_controllers, agent_member
    args = joined_agent(lab, member_name)
    core, rbac = hub.member_core, client.RbacAuthorizationV1Api(hub.member_core.api_client)
    victim, binding = unique("victim"), unique("planted-admin")
    core.create_namespaced_config_map("kube-system", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=victim)))
    foreign = "\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: kube-system\n" % victim
    admin = ("\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: %s\nroleRef:\n"
             "  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- kind: User\n"
             "  name: planted-user\n  apiGroup: rbac.authorization.k8s.io\n" % binding)
    planted = []
    try:
        planted.append(plant_record(core, lambda payload: payload.update(manifest=payload["manifest"] + foreign))[0])
        refused = run_module("kubefleet_member_agent", dict(args, values={"logVerbosity": 3}))
        assert refused.failed, refused
        assert "release record %s/%s lists objects the agent chart does not make (ConfigMap kube-system/%s): helm upgrade" % (
            RELEASE_NS, planted[0], victim) in refused["msg"], refused["msg"]
        assert read_or_none(lambda: core.read_namespaced_config_map(victim, "kube-system")) is not None
        assert newest_values(core)[0] == "deployed" and newest_values(core)[1].get("logVerbosity") != 3
        core.delete_namespaced_secret(planted.pop(), RELEASE_NS)

        original = {}

        def add_admin(payload):
            original.update(manifest=payload["manifest"], config=dict(payload["config"]))
            payload.update(manifest=payload["manifest"] + admin)
        target = plant_record(core, add_admin)
        planted.append(target[0])
        # a later revision as Helm would write it (the agent's own objects, other values) on top
        planted.append(plant_record(core, lambda payload: payload.update(
            manifest=original["manifest"], config=dict(original["config"], logVerbosity=3)))[0])
        refused = run_module("kubefleet_member_agent", dict(args, rollback_to_revision=target[1]))
        assert refused.failed, refused
        assert "(ClusterRoleBinding %s): helm rollback" % binding in refused["msg"], refused["msg"]
        assert read_or_none(lambda: rbac.read_cluster_role_binding(binding)) is None, "the rollback made the planted binding"
        assert read_or_none(lambda: core.read_namespaced_config_map(victim, "kube-system")) is not None
    finally:
        ignore_404(lambda: core.delete_namespaced_config_map(victim, "kube-system"))
        ignore_404(lambda: rbac.delete_cluster_role_binding(binding))
        for name in planted:
            ignore_404(lambda n=name: core.delete_namespaced_secret(n, RELEASE_NS))
