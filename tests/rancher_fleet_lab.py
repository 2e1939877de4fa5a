"""Rancher Fleet lab helpers shared by the integration tests: direct hub access (to check what modules did, never to
do their work), a fresh hub namespace, a member reset to "no Fleet agent", and module arguments."""

import base64
import json
import os

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from modrun import run_module
from kube_helpers import absent as _missing, ignore_404, unique, wait_for

GROUP, VERSION = "fleet.cattle.io", "v1alpha1"
AGENT_NS = "cattle-fleet-system"
REDACTED = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"
CHECKIN_TIMEOUT = 300


class Hub:
    """Direct API access to the hub, to check what the modules did (never to do their work)."""

    def __init__(self, lab):
        api = lab.api_client("hub")
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)

    def get(self, plural, namespace, name):
        try:
            return self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def items(self, plural, namespace):
        return self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)["items"]

    def secret(self, namespace, name):
        try:
            return self.core.read_namespaced_secret(name, namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def token_values(self, namespace, name):
        secret = self.secret(namespace, name)
        return yaml.safe_load(base64.b64decode(secret.data["values"]))


@pytest.fixture
def hub(lab):
    return Hub(lab)


@pytest.fixture
def hub_ns(lab, hub):
    """A fresh hub namespace; Clusters, tokens and the namespace are removed afterwards."""
    namespace = unique("fo-fleet")
    hub.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    yield namespace
    for plural in ("clusters", "clusterregistrationtokens", "clusterregistrations"):
        for item in hub.items(plural, namespace):
            ignore_404(lambda: hub.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, plural, item["metadata"]["name"]))
    hub.core.delete_namespace(namespace)


def _reset_member(lab, context):
    """No fleet-agent release, no cattle-fleet-system namespace on the member."""
    lab.run_helm(context, "uninstall", "fleet-agent", "--namespace", AGENT_NS, "--ignore-not-found", check=False)
    core = client.CoreV1Api(lab.api_client(context))
    ignore_404(lambda: core.delete_namespace(AGENT_NS))
    wait_for(lambda: _missing(lambda: core.read_namespace(AGENT_NS)), 180, "namespace %s to go on %s" % (AGENT_NS, context))


@pytest.fixture
def fresh_member(lab):
    """A member with no Fleet agent, reset again after the test."""
    used = []

    def get(context):
        _reset_member(lab, context)
        used.append(context)
        return context
    yield get
    for context in used:
        _reset_member(lab, context)


def member_kubeconfig(lab, member, path):
    """The lab's kubeconfig as a file of its own (mode 0600), and the user entry of the member's context."""
    config = yaml.safe_load(lab.kubeconfig.read_text())
    path.write_text(yaml.safe_dump(config))
    os.chmod(path, 0o600)
    ctx = next(c for c in config["contexts"] if c["name"] == member)["context"]
    user = next(u for u in config["users"] if u["name"] == ctx["user"])["user"]
    return str(path), user


def hub_args(lab):
    return {"kubeconfig": str(lab.kubeconfig), "context": "hub"}


def agent_args(lab, member, **extra):
    args = {"kubeconfig": str(lab.kubeconfig), "context": member, "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub",
            "helm_binary": str(lab.helm), "chart_ref": str(lab.fleet_chart("fleet-agent"))}
    args.update(extra)
    return args


def warnings(result):
    """Warning texts (ansible-core 2.19 returns WarningSummary objects, older versions plain strings)."""
    return [w if isinstance(w, str) else (w.get("event") or {}).get("msg", "") for w in result.get("warnings", [])]


def ok(result):
    assert not result.failed, result.get("msg")
    return result


def releases(lab, member):
    out = lab.run_helm(member, "list", "--namespace", AGENT_NS, "--all", "--output", "yaml").stdout
    return yaml.safe_load(out) or []


def helm_values(lab, member):
    return yaml.safe_load(lab.run_helm(member, "get", "values", "fleet-agent", "--namespace", AGENT_NS, "--output", "yaml").stdout)


def kube_system_uid(lab, member):
    return client.CoreV1Api(lab.api_client(member)).read_namespace("kube-system").metadata.uid


def make_token(lab, namespace, name="join", **extra):
    return ok(run_module("fleet_registration_token", dict(hub_args(lab), name=name, namespace=namespace, ttl="1h", **extra)))


def manage_agent_disabled(hub):
    config = hub.core.read_namespaced_config_map("fleet-controller", AGENT_NS).data["config"]
    return json.loads(config).get("manageAgent") is False
