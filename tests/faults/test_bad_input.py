"""Bad input to every module: the error names the parameter and gives the fix for that input, and nothing is created.

Modules run as Ansible runs them (tests/modrun.py) against the lab, with the options ``ansible-doc``
documents. Before the table runs, the objects a module could create are listed on the hub and on the
member; after every case the lists must be the same (Helm release revisions included).
"""

import re

import pytest
from kubernetes import client

from fault_helpers import FLEET, FLEET_NS, KUBEFLEET
from kube_helpers import ignore_404, unique
from modrun import run_module

pytestmark = pytest.mark.lab

MEMBER = "member2"


def names(msg, param):
    """Whether the error is about ``param``: it leads with it (``param: ...``) or is Ansible's own argument check of it."""
    return bool(re.match(r"%s: " % re.escape(param), msg) or re.search(r"\bvalue of %s\b" % re.escape(param), msg)
                or re.search(r"(arguments|parameters)[^:]*:.*\b%s\b" % re.escape(param), msg))


def _hub(lab, **extra):
    return dict({"kubeconfig": str(lab.kubeconfig), "context": "hub"}, **extra)


def _member(lab, **extra):
    return dict({"kubeconfig": str(lab.kubeconfig), "context": MEMBER, "helm_binary": lab.helm}, **extra)


def _live_namespaces(core):
    """Namespaces not already being deleted (an earlier test's cleanup may still be finishing while a case runs)."""
    return sorted(n.metadata.name for n in core.list_namespace().items if (n.status and n.status.phase) != "Terminating")


def _live(items, live_namespaces):
    """``namespace/name`` of the objects in live namespaces: those of a namespace being deleted go meanwhile."""
    return sorted("%s/%s" % (i.metadata.namespace, i.metadata.name) for i in items if i.metadata.namespace in live_namespaces)


def _snapshot(lab):
    """What a module could have created, on the hub and on the member."""
    hub_core = client.CoreV1Api(lab.api_client("hub"))
    custom = client.CustomObjectsApi(lab.api_client("hub"))
    member_core = client.CoreV1Api(lab.api_client(MEMBER))

    def names(items):
        return sorted("%s/%s" % (i["metadata"].get("namespace", ""), i["metadata"]["name"]) for i in items)
    releases = lab.run_helm(MEMBER, "list", "--all-namespaces", "--all", "--output", "json").stdout
    hub_namespaces, member_namespaces = _live_namespaces(hub_core), _live_namespaces(member_core)
    return {
        "hub tokens": names(custom.list_cluster_custom_object(*FLEET, "clusterregistrationtokens")["items"]),
        "hub clusters": names(custom.list_cluster_custom_object(*FLEET, "clusters")["items"]),
        "hub memberclusters": names(custom.list_cluster_custom_object(*KUBEFLEET, "memberclusters")["items"]),
        "hub namespaces": hub_namespaces,
        "hub service accounts": _live(hub_core.list_service_account_for_all_namespaces().items, hub_namespaces),
        "hub secrets": _live(hub_core.list_secret_for_all_namespaces().items, hub_namespaces),
        "member namespaces": member_namespaces,
        "member secrets": _live(member_core.list_secret_for_all_namespaces().items, member_namespaces),
        "member releases": sorted(re.findall(r'"name":"([^"]+)","namespace":"([^"]+)","revision":"(\d+)"', releases)),
    }


@pytest.fixture
def valid_token(prepared_hub, tmp_path):
    """A live registration token and its values file, for cases where only another input is wrong."""
    lab = prepared_hub
    name = unique("badinput")
    values = tmp_path / "values.yaml"
    result = run_module("fleet_registration_token", _hub(lab, name=name, namespace=FLEET_NS, ttl="1h", values_dest=str(values)))
    assert not result.failed, result.get("msg")
    yield name, values
    ignore_404(lambda: client.CustomObjectsApi(lab.api_client("hub")).delete_namespaced_custom_object(
        *FLEET, FLEET_NS, "clusterregistrationtokens", name))


def _cases(lab, token, values, hub_token, tmp_path):  # pylint: disable=too-many-arguments
    """(module, args, the parameter the error must name, the fix the error must give for that input)."""
    absent_ns = unique("no-such-ns")
    agent = _member(lab, chart_ref=str(lab.fleet_chart("fleet-agent")), token_name=token, token_namespace=FLEET_NS,
                    hub_kubeconfig=str(lab.kubeconfig), hub_context="hub", hub_api_server_url=lab.api_urls["hub"],
                    hub_api_server_ca=str(lab.ca_files["hub"]), wait=True, wait_timeout=30)
    member_agent = _member(lab, name=MEMBER, chart_ref=str(lab.kubefleet_chart("member-agent")),
                           hub_kubeconfig=str(lab.kubeconfig), hub_context="hub", wait_timeout=30)
    # without hub access the agent module checks only what the agent will use: URL, CA and token
    direct_agent = _member(lab, name=MEMBER, chart_ref=str(lab.kubefleet_chart("member-agent")), hub_api_server_url=lab.api_urls["hub"],
                           hub_api_server_ca=lab.ca_pem("hub"), token=hub_token, wait=False)
    return [
        ("fleet_registration_token", _hub(lab, name=unique("t"), namespace=FLEET_NS, ttl="soon"), "ttl", "use a go duration"),
        ("fleet_registration_token", _hub(lab, name="t" * 64, namespace=FLEET_NS, ttl="1h"), "name", "use at most 63 lower-case letters"),
        ("fleet_registration_token", _hub(lab, name=unique("t"), namespace=FLEET_NS, ttl="1h",
                                          values_dest=str(tmp_path / "no-dir" / "values.yaml")), "values_dest", "create it first or pick another path"),
        ("fleet_registration_token", _hub(lab, name=unique("t"), namespace=absent_ns, ttl="1h"), "namespace", "hub_prepare"),
        ("fleet_registration_token", _hub(lab, context="no-such-context", name=unique("t"), namespace=FLEET_NS, ttl="1h"),
         "context", "use one of: "),
        ("fleet_cluster", _hub(lab, name=unique("c"), namespace=FLEET_NS, labels={"bad key!": "x"}), "labels", "fix or remove that label"),
        ("fleet_cluster", _hub(lab, name=unique("c"), namespace=FLEET_NS, client_id="has space"), "client_id", "leave it unset to generate"),
        ("fleet_cluster", _hub(lab, name=unique("c"), namespace=FLEET_NS, cluster_kubeconfig=str(tmp_path / "missing.yaml")),
         "cluster_kubeconfig", "give the path of a readable kubeconfig file"),
        ("fleet_cluster", _hub(lab, name=unique("c"), namespace=FLEET_NS, labels_mode="bogus"), "labels_mode", "one of: merge, replace"),
        ("fleet_agent", dict(agent, release_namespace="fleet-system"), "release_namespace", "set it to cattle-fleet-system"),
        ("fleet_agent", dict(agent, hub_api_server_url="http://127.0.0.1:6443"), "hub_api_server_url", "give the hub api server's https:// url"),
        ("fleet_agent", dict(agent, token_name="no-such-token"), "token_name", "create a new one with fleet_registration_token"),
        ("fleet_agent", dict(agent, token_name=None, token_namespace=None, values_file=str(tmp_path / "missing.yaml")),
         "values_file", "write it with fleet_registration_token's values_dest"),
        ("fleet_agent", dict(agent, chart_ref=None), "chart_ref", "give a local chart directory or .tgz"),
        ("fleet_agent", dict(agent, token_name=None, token_namespace=None, values_file=str(values), values={"token": "x"}),
         "values", "the registration token comes from token_name or values_file"),
        # a hub URL nothing answers at, and a CA that does not verify the hub: caught before Helm runs
        ("fleet_agent", dict(agent, hub_api_server_url="https://127.0.0.1:1"), "hub_api_server_url", "give the hub api server url the member can reach"),
        ("fleet_agent", dict(agent, hub_api_server_ca=str(lab.ca_files[MEMBER])), "hub_api_server_ca",
         "give the ca that signed the hub api server's certificate"),
        ("kubefleet_member_identity", _hub(lab, name=MEMBER, namespace=absent_ns), "namespace", "hub_prepare creates it"),
        ("kubefleet_member_identity", _hub(lab, name="Bad_Name"), "name", "lower-case letters, digits"),
        ("kubefleet_member_identity", _hub(lab, context="no-such-context", name=MEMBER), "context", "use one of: "),
        ("kubefleet_member_cluster", _hub(lab, name=MEMBER, heartbeat_period_seconds=0), "heartbeat_period_seconds", "give whole seconds from 1 to 600"),
        ("kubefleet_member_cluster", _hub(lab, name="x" * 51), "name", "must fit in 63 characters"),
        ("kubefleet_member_cluster", _hub(lab, name=MEMBER, identity_name=unique("nobody")), "identity_name",
         "create it first with fleetops.registration.kubefleet_member_identity"),
        ("kubefleet_member_agent", dict(member_agent, release_namespace="fleet-system"), "release_namespace", "keep the release record elsewhere"),
        ("kubefleet_member_agent", dict(member_agent, hub_api_server_url="http://127.0.0.1:6443"), "hub_api_server_url",
         "give the hub api server's https:// url"),
        ("kubefleet_member_agent", dict(direct_agent, token="not-a-token"), "token", "give a valid token"),
        ("kubefleet_member_agent", dict(direct_agent, secret_namespace="fleet-system"), "secret_namespace", "keep the token in a namespace of its own"),
        ("hub_prepare", _hub(lab, backends=["karmada"]), "backends", "rancher_fleet"),
        ("hub_prepare", _hub(lab, namespaces=["Bad_NS"]), "namespaces", "lower-case letters, digits"),
    ]


def _hub_token(lab):
    """A token the hub accepts (TokenRequest for default/default, 1 hour), for cases where only another input is wrong."""
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    core = client.CoreV1Api(lab.api_client("hub"))
    return core.create_namespaced_service_account_token("default", "default", request).status.token


def _undo(lab, initial):
    """Remove what failed cases left (so later tests start clean); the assertion has already recorded it."""
    now = _snapshot(lab)
    for name, namespace, _revision in set(now["member releases"]) - set(initial["member releases"]):
        if (name, namespace) not in {(n, ns) for n, ns, _r in initial["member releases"]}:
            lab.run_helm(MEMBER, "uninstall", name, "--namespace", namespace, "--wait", check=False)
    member_core = client.CoreV1Api(lab.api_client(MEMBER))
    for namespace in set(now["member namespaces"]) - set(initial["member namespaces"]):
        ignore_404(lambda n=namespace: member_core.delete_namespace(n))
    custom = client.CustomObjectsApi(lab.api_client("hub"))
    for token in set(now["hub tokens"]) - set(initial["hub tokens"]):
        namespace, name = token.split("/")
        ignore_404(lambda n=name, ns=namespace: custom.delete_namespaced_custom_object(*FLEET, ns, "clusterregistrationtokens", n))


def test_bad_input_names_the_parameter_and_a_fix_and_creates_nothing(lab_controllers, valid_token, tmp_path):
    lab = lab_controllers
    token, values = valid_token
    initial = before = _snapshot(lab)
    try:
        problems = _run_cases(lab, _cases(lab, token, values, _hub_token(lab), tmp_path), before)
    finally:
        _undo(lab, initial)
    assert problems == [], "\n".join(problems)


def _run_cases(lab, cases, before):
    problems = []
    for module, args, param, fix in cases:
        args = {k: v for k, v in args.items() if v is not None}
        result = run_module(module, args)
        # never a token in the test's output; paths and PEM only add noise
        shown = {k: v for k, v in args.items()
                 if k not in ("kubeconfig", "hub_kubeconfig", "helm_binary", "chart_ref", "hub_api_server_ca", "token", "values")}
        msg = result.get("msg", "")
        if not result.failed:
            problems.append("%s %s: did not fail" % (module, shown))
        elif not names(msg, param):
            problems.append("%s %s: the error does not name %s: %s" % (module, shown, param, msg))
        elif fix.lower() not in msg.lower():
            problems.append("%s %s: the error does not give the fix (%s): %s" % (module, shown, fix, msg))
        after = _snapshot(lab)
        if after != before:
            changed = {k: (sorted(set(after[k]) - set(before[k])), sorted(set(before[k]) - set(after[k])))
                       for k in before if after[k] != before[k]}
            problems.append("%s %s: changed the clusters (added, removed): %s" % (module, shown, changed))
            before = after
        if result.get("changed"):
            problems.append("%s %s: reported changed" % (module, shown))
    return problems
