"""Issue 46: KubeFleet's release records leave ``default``. An agent installed the way earlier versions did (Helm's
records in ``default``) is moved on the next run without a Helm run: the records are copied beside the token, the
release's objects re-annotated, the records in ``default`` deleted, and the agent's pods are the same ones. A run
that stopped halfway is finished, a record in ``default`` that lists foreign objects stops the move, and once moved a
record planted in ``default`` is never read."""

import base64
import gzip
import json

import pytest
from kubernetes import client

from modrun import run_module
from kube_helpers import ignore_404, unique, wait_for
from test_kubefleet_modules import (  # noqa: F401 pylint: disable=unused-import
    MEMBER_CTX, TOKEN_NS, _state, agent_args, agent_member, failed, hub, hub_args, member, ok,
)

pytestmark = pytest.mark.lab

LEGACY = "default"
MOVED_FROM = "fleetops.io/moved-from"
SELECTOR = "owner=helm,name=member-agent"
HELM_NS = "meta.helm.sh/release-namespace"


def records(core, namespace):
    """``{revision: Secret}`` of Helm's member-agent records in ``namespace``."""
    return {int(s.metadata.labels["version"]): s for s in core.list_namespaced_secret(namespace, label_selector=SELECTOR).items}


def payload(secret):
    raw = base64.b64decode(base64.b64decode(secret.data["release"]))
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def agent_pods(core):
    return sorted(p.metadata.uid for p in core.list_namespaced_pod("fleet-system", label_selector="app.kubernetes.io/name=member-agent").items
                  if not p.metadata.deletion_timestamp)


def owners(lab):
    """The release namespace each object of the chart names (the Helm owner annotation)."""
    core, apps = client.CoreV1Api(lab.api_client(MEMBER_CTX)), client.AppsV1Api(lab.api_client(MEMBER_CTX))
    rbac = client.RbacAuthorizationV1Api(lab.api_client(MEMBER_CTX))
    objects = (core.read_namespace("fleet-system"), core.read_namespaced_service_account("member-agent-sa", "fleet-system"),
               apps.read_namespaced_deployment("member-agent", "fleet-system"),
               rbac.read_cluster_role_binding("member-agent-cluster-admin-binding"))
    return {obj.metadata.annotations.get(HELM_NS) for obj in objects}


def copy_record(core, secret, namespace):
    """A copy of ``secret`` in ``namespace``, as a move that stopped after its first copy leaves it."""
    body = payload(secret)
    body["namespace"] = namespace
    data = base64.b64encode(gzip.compress(json.dumps(body).encode())).decode()
    core.create_namespaced_secret(namespace, client.V1Secret(
        metadata=client.V1ObjectMeta(name=secret.metadata.name, labels=dict(secret.metadata.labels, **{MOVED_FROM: LEGACY})),
        type=secret.type, data={"release": base64.b64encode(data.encode()).decode()}))


def plant(core, namespace, revision, manifest):
    """A deployed record of member-agent at ``revision`` in ``namespace`` listing ``manifest``."""
    body = {"name": "member-agent", "namespace": namespace, "version": revision, "manifest": manifest,
            "info": {"status": "deployed"}, "chart": {"metadata": {"name": "member-agent", "version": "0.1.0"}}, "config": {}}
    data = base64.b64encode(gzip.compress(json.dumps(body).encode())).decode()
    name = "sh.helm.release.v1.member-agent.v%d" % revision
    core.create_namespaced_secret(namespace, client.V1Secret(
        metadata=client.V1ObjectMeta(name=name, labels={"owner": "helm", "name": "member-agent", "status": "deployed",
                                                        "version": str(revision)}),
        type="helm.sh/release.v1", data={"release": base64.b64encode(data.encode()).decode()}))
    return name


def test_records_in_default_move_beside_the_token_and_the_agent_keeps_running(lab, hub, agent_member):
    member, core = agent_member, hub.member_core
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member, heartbeat_period_seconds=5)))
    args = agent_args(lab, member, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub", log_verbosity=3)
    victim = unique("kept")
    try:
        # as earlier versions installed it: two revisions, both in default
        ok(run_module("kubefleet_member_agent", dict(args, release_namespace=LEGACY, log_verbosity=2)))
        ok(run_module("kubefleet_member_agent", dict(args, release_namespace=LEGACY)))
        legacy = records(core, LEGACY)
        assert sorted(legacy) == [1, 2] and owners(lab) == {LEGACY}
        pods = agent_pods(core)

        state = _state(lab, member)
        assert state.action == "reconfigure" and state.healthy, (state.action, state.reasons)
        assert state.reasons == ["Helm's records of release member-agent (revisions 1, 2) move from namespace default to %s" % TOKEN_NS]

        checked = ok(run_module("kubefleet_member_agent", args, check=True))
        assert checked.changed and checked["reasons"] == state.reasons
        assert sorted(records(core, LEGACY)) == [1, 2] and records(core, TOKEN_NS) == {}, "check mode moved records"

        # a record in default that lists an object the chart does not make stops the move before anything moves
        planted = plant(core, LEGACY, 3, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: kube-system\n" % victim)
        refused = failed(run_module("kubefleet_member_agent", args), "lists objects the agent chart does not make",
                         "ConfigMap kube-system/%s" % victim)
        assert not refused.changed and records(core, TOKEN_NS) == {} and owners(lab) == {LEGACY}
        core.delete_namespaced_secret(planted, LEGACY)

        # a move that stopped after copying revision 1 is finished by the next run
        copy_record(core, legacy[1], TOKEN_NS)
        moved = ok(run_module("kubefleet_member_agent", args))
        assert moved.changed and moved["reasons"] == state.reasons
        assert moved["release"]["namespace"] == TOKEN_NS and moved["release"]["revision"] == 2
        assert records(core, LEGACY) == {}
        kept = records(core, TOKEN_NS)
        assert sorted(kept) == [1, 2] and MOVED_FROM not in kept[2].metadata.labels
        assert payload(kept[2])["namespace"] == TOKEN_NS and payload(kept[2])["config"] == payload(legacy[2])["config"]
        assert owners(lab) == {TOKEN_NS}
        assert agent_pods(core) == pods, "the move restarted the agent"
        assert moved["member"]["joined"] is True

        history = json.loads(lab.run_helm(MEMBER_CTX, "history", "member-agent", "--namespace", TOKEN_NS, "--output", "json").stdout)
        assert [(item["revision"], item["status"]) for item in history] == [(1, "superseded"), (2, "deployed")]
        assert not ok(run_module("kubefleet_member_agent", args)).changed
        assert _state(lab, member).action == "none"

        # once moved, a record planted in default is never read
        planted = plant(core, LEGACY, 9, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: kube-system\n" % victim)
        assert _state(lab, member).action == "none"
        assert not ok(run_module("kubefleet_member_agent", args)).changed
        upgraded = ok(run_module("kubefleet_member_agent", dict(args, log_verbosity=4)))
        assert upgraded["release"]["revision"] == 3 and upgraded["release"]["namespace"] == TOKEN_NS
        assert list(records(core, LEGACY)) == [9], "the planted record was touched"

        left = ok(run_module("kubefleet_member_agent", dict(args, state="absent", wait=True)))
        assert left["removed_namespaces"] == [TOKEN_NS]
        assert hub.namespace("fleet-system", core) is None and list(records(core, LEGACY)) == [9]
    finally:
        ignore_404(lambda: core.delete_namespaced_secret("sh.helm.release.v1.member-agent.v9", LEGACY))
        ignore_404(lambda: core.delete_namespaced_secret("sh.helm.release.v1.member-agent.v3", LEGACY))
        lab.run_helm(MEMBER_CTX, "uninstall", "member-agent", "--namespace", LEGACY, "--ignore-not-found", check=False)


def test_a_refused_move_makes_nothing_not_even_the_namespace_it_would_move_to(lab, hub, agent_member):
    """The move's own check runs before the step makes anything: here the release itself needs no Helm run (so the
    upgrade's record check does not refuse first), only an older record in ``default`` lists a foreign object."""
    member, core = agent_member, hub.member_core
    ok(run_module("kubefleet_member_identity", hub_args(lab, name=member)))
    ok(run_module("kubefleet_member_cluster", hub_args(lab, name=member)))
    args = agent_args(lab, member, hub_kubeconfig=str(lab.kubeconfig), hub_context="hub", wait=False)
    victim = unique("kept")
    try:
        ok(run_module("kubefleet_member_agent", dict(args, release_namespace=LEGACY, log_verbosity=2)))
        ok(run_module("kubefleet_member_agent", dict(args, release_namespace=LEGACY)))
        core.delete_namespaced_secret("sh.helm.release.v1.member-agent.v1", LEGACY)
        plant(core, LEGACY, 1, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: kube-system\n" % victim)
        core.delete_namespace(TOKEN_NS)
        wait_for(lambda: hub.namespace(TOKEN_NS, core) is None, 90, "namespace %s to go" % TOKEN_NS)

        refused = failed(run_module("kubefleet_member_agent", args), "lists objects the agent chart does not make",
                         "ConfigMap kube-system/%s" % victim)
        assert not refused.changed
        assert hub.namespace(TOKEN_NS, core) is None, "the refused move left the namespace it would move to"
        assert sorted(records(core, LEGACY)) == [1, 2] and owners(lab) == {LEGACY}
    finally:
        ignore_404(lambda: core.delete_namespaced_secret("sh.helm.release.v1.member-agent.v1", LEGACY))
