"""The Rancher Fleet modules against the lab: real kube-apiservers, the real fleet controllers on the hub,
and the real fleetagent, started by the lab's agent runner when the modules install the fleet-agent chart.

Every test works in its own hub namespace and leaves the members' cattle-fleet-system as it found it
(absent), so the suite can run again on the same lab.
"""

import base64
import functools
import http.server
import json
import os
import pathlib
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

import pytest
import yaml
from kubernetes import client
from kubernetes.utils import parse_quantity

from modrun import ModuleProcess, run_module
from kube_helpers import absent as _missing, wait_for
from rancher_fleet_lab import (  # noqa: F401 pylint: disable=unused-import
    AGENT_NS, CHECKIN_TIMEOUT, REDACTED, agent_args, fresh_member, helm_values, hub, hub_args, hub_ns, kube_system_uid,
    make_token, manage_agent_disabled, member_kubeconfig, ok, releases, warnings,
)

pytestmark = pytest.mark.lab


# ---------------------------------------------------------------------------
# fleet_registration_token
# ---------------------------------------------------------------------------

def test_token_lifecycle_values_file_rerun_check_mode_and_absent(lab, hub, hub_ns, tmp_path):
    dest = tmp_path / "values.yaml"
    args = dict(hub_args(lab), name="tok", namespace=hub_ns, ttl="1h", values_dest=str(dest))

    result = ok(run_module("fleet_registration_token", args, check=True))
    assert result.changed
    assert hub.get("clusterregistrationtokens", hub_ns, "tok") is None
    assert not dest.exists()

    result = ok(run_module("fleet_registration_token", args, diff=True))
    assert result.changed and result["values_dest_changed"]
    assert result["secret_name"] == "tok"
    assert result["expires"]
    assert result["diff"]["before"] == {} and result["diff"]["after"]["spec"]["ttl"] == "1h"
    secret = hub.secret(hub_ns, "tok")
    assert secret.type == "fleet.cattle.io/cluster-registration-values"
    values = hub.token_values(hub_ns, "tok")
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o600
    assert yaml.safe_load(dest.read_text()) == values
    assert values["tokenName"] == "tok" and values["clusterNamespace"] == hub_ns and values["apiServerURL"] == lab.api_urls["hub"]
    assert values["token"] not in result["raw_output"]
    assert "values" not in result

    again = ok(run_module("fleet_registration_token", args))
    assert not again.changed and again["values_dest_changed"] is False
    assert not ok(run_module("fleet_registration_token", args, check=True)).changed

    # a TTL change: predicted in check mode, applied for real, equal durations are no change
    assert ok(run_module("fleet_registration_token", dict(args, ttl="2h"), check=True)).changed
    assert hub.get("clusterregistrationtokens", hub_ns, "tok")["spec"]["ttl"] == "1h"
    longer = ok(run_module("fleet_registration_token", dict(args, ttl="2h")))
    assert longer.changed and longer["ttl"] == "2h"
    assert not ok(run_module("fleet_registration_token", dict(args, ttl="120m"))).changed
    wait_for(lambda: hub.get("clusterregistrationtokens", hub_ns, "tok")["status"].get("expires") != result["expires"], 30,
             "Fleet to move the expiry")

    # the values only when asked, with a warning when the task is not no_log
    shown = ok(run_module("fleet_registration_token", dict(args, return_values=True)))
    assert yaml.safe_load(shown["values_yaml"]) == values
    assert any("no_log" in w for w in warnings(shown))

    # absent: check mode keeps everything; the real run removes token, Fleet's Secret and the file
    assert ok(run_module("fleet_registration_token", dict(args, state="absent"), check=True)).changed
    assert hub.get("clusterregistrationtokens", hub_ns, "tok") is not None and dest.exists()
    gone = ok(run_module("fleet_registration_token", dict(args, state="absent")))
    assert gone.changed and gone["values_dest_changed"]
    assert hub.get("clusterregistrationtokens", hub_ns, "tok") is None
    assert not dest.exists()
    wait_for(lambda: hub.secret(hub_ns, "tok") is None, 60, "Fleet to delete the token's Secret")
    assert not ok(run_module("fleet_registration_token", dict(args, state="absent"))).changed


def test_token_whose_secret_never_appears_fails_and_is_rolled_back(lab, hub, hub_ns):
    # A quota of zero Secrets: Fleet cannot create the token's ServiceAccount Secret nor the values Secret,
    # as on a real hub where a namespace's quota is exhausted.
    hub.core.create_namespaced_resource_quota(hub_ns, client.V1ResourceQuota(
        metadata=client.V1ObjectMeta(name="no-secrets"), spec=client.V1ResourceQuotaSpec(hard={"secrets": "0"})))
    result = run_module("fleet_registration_token", dict(hub_args(lab), name="never", namespace=hub_ns, ttl="1h",
                                                         wait_timeout=15, wait_sleep=1))
    assert result.failed
    assert "wait_timeout" in result["msg"] and "ResourceQuota" in result["msg"]
    assert hub.get("clusterregistrationtokens", hub_ns, "never") is None


def test_token_bad_ttl_creates_nothing(lab, hub, hub_ns):
    result = run_module("fleet_registration_token", dict(hub_args(lab), name="bad", namespace=hub_ns, ttl="10d"))
    assert result.failed and result["msg"].startswith("ttl:") and "1h30m" in result["msg"]
    # a token that would never expire: 0, or no ttl for a new token (Fleet made one that never expires)
    for never in (dict(ttl="0"), dict(ttl="0s"), dict()):
        result = run_module("fleet_registration_token", dict(hub_args(lab), name="bad", namespace=hub_ns, **never))
        assert result.failed and result["msg"].startswith("ttl:") and "never expires" in result["msg"], result["msg"]
    assert hub.items("clusterregistrationtokens", hub_ns) == []


# ---------------------------------------------------------------------------
# fleet_agent + fleet_cluster + fleet_cluster_info: agent-initiated
# ---------------------------------------------------------------------------

def test_agent_initiated_with_labels_rerun_check_mode_relabel_and_absent(lab, hub, hub_ns, fresh_member):
    member = fresh_member("member1")
    make_token(lab, hub_ns)
    token = hub.token_values(hub_ns, "join")["token"]
    args = agent_args(lab, member, token_name="join", token_namespace=hub_ns, labels={"env": "dev", "example": True},
                      wait=True, wait_timeout=CHECKIN_TIMEOUT)

    planned = ok(run_module("fleet_agent", args, check=True, diff=True))
    assert planned.changed and planned["reasons"] == ["the release is not installed"] and planned["action"] == "install"
    assert releases(lab, member) == []
    assert token not in planned["raw_output"]

    result = ok(run_module("fleet_agent", args, diff=True))
    assert result.changed
    assert result["release"]["status"] == "deployed" and result["release"]["namespace"] == AGENT_NS
    assert result["sources"] == {"api_server_url": "token", "api_server_ca": "token"}
    assert result["chart_values"]["token"] == REDACTED and result["diff"]["after"]["values"]["token"] == REDACTED
    assert result["chart_values"]["labels"] == {"env": "dev", "example": "true"}
    assert token not in result["raw_output"]
    cluster = result["cluster"]
    assert cluster["checked_in"] and cluster["client_id"] == kube_system_uid(lab, member)
    assert cluster["labels"]["env"] == "dev" and cluster["labels"]["example"] == "true"
    assert cluster["name"].startswith("cluster-")
    revision = result["release"]["revision"]

    again = ok(run_module("fleet_agent", args))
    assert not again.changed and again["reasons"] == [] and again["release"]["revision"] == revision
    assert token not in again["raw_output"]

    relabel = dict(args, labels={"env": "prod"})
    if manage_agent_disabled(hub):
        predicted = ok(run_module("fleet_agent", relabel, check=True, diff=True))
        assert predicted.changed and predicted["reasons"] == ["values differ"]
        assert predicted["diff"]["before"]["values"]["labels"] == {"env": "dev", "example": "true"}
        assert predicted["diff"]["after"]["values"]["labels"] == {"env": "prod"}
        assert token not in predicted["raw_output"]
    else:
        # Fleet adopts the agent as release fleet-agent-<cluster>; the module must not fight it with an upgrade
        wait_for(lambda: [r for r in releases(lab, member) if r["name"].startswith("fleet-agent-")], 120, "Fleet to adopt the agent")
        deferred = ok(run_module("fleet_agent", relabel))
        assert not deferred.changed and deferred["fleet_managed_releases"]
        assert any("managed by Fleet" in w for w in warnings(deferred))
    assert helm_values(lab, member)["labels"] == {"env": "dev", "example": "true"}
    assert [int(r["revision"]) for r in releases(lab, member) if r["name"] == "fleet-agent"] == [revision]

    info = ok(run_module("fleet_cluster_info", dict(hub_args(lab), namespace=hub_ns, include_registrations=True)))
    assert [c["name"] for c in info["clusters"]] == [cluster["name"]]
    listed = info["clusters"][0]
    assert listed["last_seen"] and listed["client_id"] == cluster["client_id"]
    assert any(r["granted"] and r["token_name"] == "join" for r in listed["registrations"])
    one = ok(run_module("fleet_cluster_info", dict(hub_args(lab), name=cluster["name"], namespace=hub_ns)))
    assert one["clusters"][0]["name"] == cluster["name"] and not one.changed
    assert ok(run_module("fleet_cluster_info", dict(hub_args(lab), namespace=hub_ns, label_selector="env=nope")))["clusters"] == []

    # labels after registration, from the hub side: merge, then replace (Fleet's own labels stay)
    cargs = dict(hub_args(lab), name=cluster["name"], namespace=hub_ns)
    merged = ok(run_module("fleet_cluster", dict(cargs, labels={"tier": "edge"})))
    assert merged.changed and merged["label_changes"] == {"added": {"tier": "edge"}, "changed": {}, "removed": []}
    assert merged["client_id"] == cluster["client_id"] and merged["client_id_generated"] is False
    assert not ok(run_module("fleet_cluster", dict(cargs, labels={"tier": "edge"}))).changed
    replaced = ok(run_module("fleet_cluster", dict(cargs, labels={"env": "dev"}, labels_mode="replace"), diff=True))
    assert replaced.changed and sorted(replaced["label_changes"]["removed"]) == ["example", "tier"]
    labels = hub.get("clusters", hub_ns, cluster["name"])["metadata"]["labels"]
    assert labels["env"] == "dev" and "tier" not in labels and "example" not in labels
    assert labels["fleet.cattle.io/cluster"] == cluster["name"]

    # leave: check mode keeps the agent; the real run removes release and credential; then the hub side
    kept = ok(run_module("fleet_agent", dict(agent_args(lab, member), state="absent"), check=True))
    assert kept.changed and "fleet-agent" in [r["name"] for r in releases(lab, member)]
    left = ok(run_module("fleet_agent", dict(agent_args(lab, member), state="absent")))
    assert left.changed and left["removed_credential"]
    assert releases(lab, member) == []  # also Fleet's own fleet-agent-<cluster> release when manageAgent adopted the agent
    core = client.CoreV1Api(lab.api_client(member))
    assert _missing(lambda: core.read_namespaced_secret("fleet-agent", AGENT_NS))
    assert not ok(run_module("fleet_agent", dict(agent_args(lab, member), state="absent"))).changed

    removed = ok(run_module("fleet_cluster", dict(cargs, state="absent", wait=True, wait_timeout=120)))
    assert removed.changed and removed["removed_registrations"]
    assert hub.get("clusters", hub_ns, cluster["name"]) is None
    assert hub.items("clusterregistrations", hub_ns) == []
    assert not ok(run_module("fleet_cluster", dict(cargs, state="absent"))).changed


def _hub_kubeconfig_with_ca_file(lab, path):
    """The hub's context as its own kubeconfig that names its CA by file (certificate-authority), not inline."""
    config = yaml.safe_load(lab.kubeconfig.read_text())
    ctx = next(c for c in config["contexts"] if c["name"] == "hub")["context"]
    cluster = dict(next(c for c in config["clusters"] if c["name"] == ctx["cluster"])["cluster"])
    cluster.pop("certificate-authority-data", None)
    cluster["certificate-authority"] = str(lab.ca_files["hub"])
    user = next(u for u in config["users"] if u["name"] == ctx["user"])
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "hub",
        "clusters": [{"name": "hub", "cluster": cluster}], "users": [user],
        "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": user["name"]}}]}))
    os.chmod(path, 0o600)
    return str(path)


def test_predefined_client_id_claimed_by_the_agent(lab, hub, hub_ns, fresh_member, tmp_path):
    member = fresh_member("member2")
    cargs = dict(hub_args(lab), name="predefined", namespace=hub_ns, labels={"env": "lab"})

    planned = ok(run_module("fleet_cluster", cargs, check=True))
    assert planned.changed and planned["client_id_generated"]
    assert hub.get("clusters", hub_ns, "predefined") is None

    created = ok(run_module("fleet_cluster", cargs, diff=True))
    client_id = created["client_id"]
    assert created.changed and created["client_id_generated"] and len(client_id) == 64
    assert hub.get("clusters", hub_ns, "predefined")["spec"]["clientID"] == client_id
    again = ok(run_module("fleet_cluster", cargs))
    assert not again.changed and again["client_id"] == client_id and not again["client_id_generated"]
    assert ok(run_module("fleet_cluster", dict(cargs, labels={"env": "other"}), check=True)).changed
    assert hub.get("clusters", hub_ns, "predefined")["metadata"]["labels"]["env"] == "lab"

    # another Cluster may not take the same client ID
    clash = run_module("fleet_cluster", dict(hub_args(lab), name="impostor", namespace=hub_ns, client_id=client_id))
    assert clash.failed and clash["msg"].startswith("client_id:") and "predefined" in clash["msg"]
    assert hub.get("clusters", hub_ns, "impostor") is None

    # values from a file without the hub address: it comes from the hub kubeconfig, whose CA is a file
    values_file = tmp_path / "values.yaml"
    make_token(lab, hub_ns, values_dest=str(values_file))
    values = yaml.safe_load(values_file.read_text())
    token = values["token"]
    for key in ("apiServerURL", "apiServerCA"):
        values.pop(key)
    values_file.write_text(yaml.safe_dump(values))
    args = agent_args(lab, member, values_file=str(values_file), client_id=client_id, wait=True, wait_timeout=CHECKIN_TIMEOUT,
                      hub_kubeconfig=_hub_kubeconfig_with_ca_file(lab, tmp_path / "hub.yaml"))
    result = ok(run_module("fleet_agent", args))
    assert result.changed
    assert result["sources"] == {"api_server_url": "hub_kubeconfig", "api_server_ca": "hub_kubeconfig"}
    assert result["cluster"]["name"] == "predefined" and result["cluster"]["checked_in"]
    # The Deployment was installed with the spec of Fleet's bundle fleet-agent-predefined: Fleet's adoption (done before
    # the check-in) rolled out no second pod template, so the agent that registered checked in; no Lease was released.
    assert result["fleet_spec_installed"] and result["released_lease"] is None
    assert "fleet-agent-predefined" in [r["name"] for r in releases(lab, member)]
    replica_sets = client.AppsV1Api(lab.api_client(member)).list_namespaced_replica_set(AGENT_NS, label_selector="app=fleet-agent")
    assert len(replica_sets.items) == 1, [rs.metadata.name for rs in replica_sets.items]
    assert result["cluster"]["labels"]["env"] == "lab"
    assert [c["metadata"]["name"] for c in hub.items("clusters", hub_ns)] == ["predefined"]
    live = helm_values(lab, member)
    assert live["apiServerURL"] == lab.api_urls["hub"] and live["apiServerCA"].strip() == lab.ca_pem("hub").strip()
    assert live["clientID"] == client_id
    assert token not in result["raw_output"]
    assert not ok(run_module("fleet_agent", args)).changed

    # the hub side can wait for the check-in too, now immediately true
    waited = ok(run_module("fleet_cluster", dict(hub_args(lab), name="predefined", namespace=hub_ns, wait=True, wait_timeout=30)))
    assert not waited.changed and waited["cluster"]["checked_in"]

    ok(run_module("fleet_agent", dict(agent_args(lab, member), state="absent")))
    ok(run_module("fleet_cluster", dict(hub_args(lab), name="predefined", namespace=hub_ns, state="absent", wait=True, wait_timeout=120)))
    assert hub.items("clusters", hub_ns) == []


# ---------------------------------------------------------------------------
# fleet_cluster: manager-initiated
# ---------------------------------------------------------------------------

def test_manager_initiated_from_a_kubeconfig(lab, hub, hub_ns, fresh_member, tmp_path):
    member = fresh_member("member1")
    kubeconfig, user = member_kubeconfig(lab, member, tmp_path / "all.yaml")
    secrets = [v for k, v in user.items() if k in ("token", "client-key-data")]
    assert secrets
    env = {"FLEETOPS_SITE": "imported-a"}
    cargs = dict(hub_args(lab), name="imported", namespace=hub_ns, cluster_kubeconfig=kubeconfig, cluster_kubeconfig_context=member,
                 labels={"env": "imported"}, agent={"env": env})
    member_core = client.CoreV1Api(lab.api_client(member))

    planned = ok(run_module("fleet_cluster", cargs, check=True, diff=True))
    assert planned.changed and planned["agent_env_changes"][0].endswith("was written (predicted)")
    assert hub.get("clusters", hub_ns, "imported") is None and hub.secret(hub_ns, "imported-kubeconfig") is None
    assert member_core.list_namespaced_secret(AGENT_NS).items == []
    assert planned["diff"]["after"]["kubeconfig_secret"]["data"]["value"] == REDACTED

    # Fleet v0.16.0 only imports with manageAgent on (import.go deletes bundle fleet-agent-<cluster> and
    # retries on NotFound); on a hub without it the module must say so instead of waiting in vain.
    blocked = manage_agent_disabled(hub)
    result = ok(run_module("fleet_cluster", dict(cargs, wait=not blocked, wait_timeout=CHECKIN_TIMEOUT), diff=True))
    assert result.changed and result["kubeconfig_secret"] == "imported-kubeconfig"
    assert any("manageAgent" in w for w in warnings(result)) == blocked
    for secret in secrets:
        assert secret not in result["raw_output"]
    cluster = hub.get("clusters", hub_ns, "imported")
    assert cluster["spec"]["kubeConfigSecret"] == "imported-kubeconfig" and cluster["spec"]["clientID"] == result["client_id"]
    assert result["cluster"]["checked_in"] != blocked
    stored = hub.secret(hub_ns, "imported-kubeconfig")
    stored_config = yaml.safe_load(base64.b64decode(stored.data["value"]))
    assert stored_config["current-context"] == member and len(stored_config["contexts"]) == 1
    assert stored_config["clusters"][0]["cluster"]["server"] == lab.api_urls[member]
    assert [o.uid for o in stored.metadata.owner_references] == [cluster["metadata"]["uid"]]
    # Fleet deploys this agent itself: the Secret its environment is read from was written on the member first
    ref = cluster["spec"]["agentEnvVars"][0]["valueFrom"]["secretKeyRef"]
    env_secret = member_core.read_namespaced_secret(ref["name"], AGENT_NS)
    assert result["agent_env_changes"] == ["the agent's environment Secret %s/%s was written" % (AGENT_NS, ref["name"])]
    assert dict((k, base64.b64decode(v).decode()) for k, v in env_secret.data.items()) == env and ref["key"] == "FLEETOPS_SITE"
    if not blocked:
        deployment = client.AppsV1Api(lab.api_client(member)).read_namespaced_deployment("fleet-agent", AGENT_NS)
        assert (ref["name"], ref["key"]) in [(e.value_from.secret_key_ref.name, e.value_from.secret_key_ref.key)
                                             for c in deployment.spec.template.spec.containers
                                             for e in c.env or [] if e.value_from and e.value_from.secret_key_ref]
    # the agent is Fleet's doing, not a fleet-agent release of this collection
    assert "fleet-agent" not in [r["name"] for r in releases(lab, member)]

    again = ok(run_module("fleet_cluster", cargs))
    assert not again.changed and again["agent_env_changes"] == []

    removed = ok(run_module("fleet_cluster", dict(hub_args(lab), name="imported", namespace=hub_ns, state="absent", wait=True,
                                                  wait_timeout=120)))
    assert removed.changed and removed["kubeconfig_secret"] == "imported-kubeconfig"
    assert hub.get("clusters", hub_ns, "imported") is None
    assert hub.secret(hub_ns, "imported-kubeconfig") is None


def test_manager_initiated_secret_referenced_by_name(lab, hub, hub_ns):
    # cluster-api writes <cluster>-kubeconfig itself; the module only refers to it and never deletes it
    missing = run_module("fleet_cluster", dict(hub_args(lab), name="capi", namespace=hub_ns, kubeconfig_secret="capi-kubeconfig"))
    assert missing.failed and missing["msg"].startswith("kubeconfig_secret:") and "value" in missing["msg"]
    assert hub.get("clusters", hub_ns, "capi") is None
    hub.core.create_namespaced_secret(hub_ns, client.V1Secret(metadata=client.V1ObjectMeta(name="capi-kubeconfig"),
                                                              string_data={"value": "apiVersion: v1\nkind: Config\n"}))
    result = ok(run_module("fleet_cluster", dict(hub_args(lab), name="capi", namespace=hub_ns, kubeconfig_secret="capi-kubeconfig",
                                                 client_id="capi-client")))
    assert result.changed and hub.get("clusters", hub_ns, "capi")["spec"]["kubeConfigSecret"] == "capi-kubeconfig"
    ok(run_module("fleet_cluster", dict(hub_args(lab), name="capi", namespace=hub_ns, state="absent", wait=True, wait_timeout=120)))
    assert hub.get("clusters", hub_ns, "capi") is None
    assert hub.secret(hub_ns, "capi-kubeconfig") is not None


def test_a_secret_the_collection_did_not_make_is_never_overwritten_with_a_kubeconfig(lab, hub, hub_ns):
    """Issue 46: the kubeconfig Secret's name comes from kubeconfig_secret or from the live Cluster's
    spec.kubeConfigSecret, which anyone who may edit Clusters sets. A Secret of that name the collection did not make
    for the Cluster is refused (check mode too) and left as it was: not overwritten, not owned by the Cluster."""
    content = yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                              "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                              "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                              "users": [{"name": "u", "user": {"token": "not-a-real-token-0123456789"}}]})
    hub.core.create_namespaced_secret(hub_ns, client.V1Secret(metadata=client.V1ObjectMeta(name="someone-elses"),
                                                              string_data={"value": "theirs"}))
    words = "kubeconfig_secret: Secret %s/someone-elses exists but was not made by this collection for Cluster taken" % hub_ns
    for check in (True, False):
        refused = run_module("fleet_cluster", dict(hub_args(lab), name="taken", namespace=hub_ns, cluster_kubeconfig_content=content,
                                                   kubeconfig_secret="someone-elses"), check=check)
        assert refused.failed and refused["msg"].startswith(words), refused["msg"]
    assert hub.get("clusters", hub_ns, "taken") is None
    # the name taken from a Cluster someone pointed at that Secret
    ok(run_module("fleet_cluster", dict(hub_args(lab), name="taken", namespace=hub_ns)))
    hub.custom.patch_namespaced_custom_object("fleet.cattle.io", "v1alpha1", hub_ns, "clusters", "taken",
                                              {"spec": {"kubeConfigSecret": "someone-elses"}})
    refused = run_module("fleet_cluster", dict(hub_args(lab), name="taken", namespace=hub_ns, cluster_kubeconfig_content=content))
    assert refused.failed and refused["msg"].startswith(words), refused["msg"]
    kept = hub.secret(hub_ns, "someone-elses")
    assert base64.b64decode(kept.data["value"]) == b"theirs" and not kept.metadata.owner_references
    ok(run_module("fleet_cluster", dict(hub_args(lab), name="taken", namespace=hub_ns, state="absent")))
    assert hub.secret(hub_ns, "someone-elses") is not None


TOLERATION = {"key": "fleetops.test/dedicated", "operator": "Exists", "effect": "NoSchedule"}


def test_cluster_carries_the_agent_setting_fleet_deploys_its_adopted_agent_from(lab, hub, hub_ns):
    setting = {"tolerations": [TOLERATION], "node_selector": {"pool": "system"}, "resources": {"requests": {"cpu": "0.1"}},
               "env": {"HTTPS_PROXY": "http://fleetops:s3cret@proxy.invalid:3128"}, "image_registry": "mirror.invalid:5000/"}
    args = dict(hub_args(lab), name="set", namespace=hub_ns, agent=setting)
    predicted = ok(run_module("fleet_cluster", args, check=True, diff=True))
    assert predicted.changed and hub.get("clusters", hub_ns, "set") is None and "s3cret" not in predicted["raw_output"]
    made = ok(run_module("fleet_cluster", args, diff=True))
    assert made.changed and "s3cret" not in made["raw_output"]
    spec = hub.get("clusters", hub_ns, "set")["spec"]
    assert spec["agentTolerations"] == [TOLERATION] and spec["privateRepoURL"] == "mirror.invalid:5000"
    # "0.1" as written, or "100m" once Fleet's controller has written the Cluster back (a CRD's quantities are stored as
    # given; the controller's typed client writes them in canonical form): equal by value either way.
    requests = spec["agentResources"]["requests"]
    assert set(spec["agentResources"]) == {"requests"} and set(requests) == {"cpu"}, spec["agentResources"]
    assert parse_quantity(requests["cpu"]) == parse_quantity("100m"), spec["agentResources"]
    # the value stays on the member, in the Secret fleet_agent writes there: the Cluster names the Secret and key only
    env_secret = spec["agentEnvVars"][0]["valueFrom"]["secretKeyRef"]["name"]
    assert spec["agentEnvVars"] == [{"name": "HTTPS_PROXY", "valueFrom": {"secretKeyRef": {"name": env_secret, "key": "HTTPS_PROXY"}}}]
    assert env_secret.startswith("fleetops-agent-env-") and "s3cret" not in json.dumps(hub.get("clusters", hub_ns, "set"))
    # The Cluster has no node selector field: the node selector is required node affinity.
    assert spec["agentAffinity"] == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["system"]}]}]}}}
    assert not ok(run_module("fleet_cluster", args)).changed

    # Another affinity replaces the old one (not merged into it); an empty key removes its field; keys not given stay.
    anti = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "x"}}}}]}}
    ok(run_module("fleet_cluster", dict(args, agent={"affinity": anti, "tolerations": []})))
    spec = hub.get("clusters", hub_ns, "set")["spec"]
    assert spec["agentAffinity"] == anti and "agentTolerations" not in spec and spec["privateRepoURL"] == "mirror.invalid:5000"

    bad = run_module("fleet_cluster", dict(args, agent={"env": {"HTTPS PROXY": "x"}}))
    assert bad.failed and bad["msg"].startswith("agent.env:"), bad["msg"]
    ok(run_module("fleet_cluster", dict(hub_args(lab), name="set", namespace=hub_ns, state="absent")))


# ---------------------------------------------------------------------------
# bad input leaves nothing half-made
# ---------------------------------------------------------------------------

def test_bad_input_fails_naming_the_parameter_and_leaves_nothing(lab, hub, hub_ns, fresh_member, tmp_path):
    member = fresh_member("member2")
    make_token(lab, hub_ns)
    token = hub.token_values(hub_ns, "join")["token"]
    base = agent_args(lab, member, token_name="join", token_namespace=hub_ns)
    cases = [
        (dict(base, release_namespace="fleet-system"), "release_namespace:"),
        (dict(base, release_name="agent"), "release_name:"),
        (dict(base, labels={"not a key": "x"}), "labels:"),
        (dict(base, token_name="no-such-token"), "token_name:"),
        (dict(base, hub_host="https://127.0.0.1:1"), "hub_kubeconfig"),
        (dict(base, chart_ref=str(tmp_path / "no-chart")), "chart_ref:"),
    ]
    for args, words in cases:
        result = run_module("fleet_agent", args)
        assert result.failed, args
        assert words in result["msg"], (words, result["msg"])
        assert token not in result["raw_output"]
    assert releases(lab, member) == []
    assert _missing(lambda: client.CoreV1Api(lab.api_client(member)).read_namespace(AGENT_NS))

    unreachable = run_module("fleet_agent", dict(base, hub_host="https://127.0.0.1:1"))
    assert "cannot reach the hub" in unreachable["msg"]

    for args, words in [
        (dict(hub_args(lab), name="c1", namespace=hub_ns, cluster_kubeconfig=str(tmp_path / "missing.yaml")), "cluster_kubeconfig:"),
        (dict(hub_args(lab), name="c2", namespace=hub_ns, labels={"bad/key/x": "y"}), "labels:"),
        (dict(hub_args(lab), name="c3", namespace=hub_ns, kubeconfig_secret="nope"), "kubeconfig_secret:"),
    ]:
        result = run_module("fleet_cluster", args)
        assert result.failed and result["msg"].startswith(words), result["msg"]
    assert hub.items("clusters", hub_ns) == []
    assert [s.metadata.name for s in hub.core.list_namespaced_secret(hub_ns).items if s.metadata.name.startswith("c")] == []


# ---------------------------------------------------------------------------
# key material written for a connection
# ---------------------------------------------------------------------------

def test_a_killed_module_leaves_no_client_key_outside_its_task_directory(lab, hub_ns, tmp_path):
    """The lab's kubeconfig holds inline client keys, which a module writes to files (0600) for the client. A module
    killed mid-wait (a task timeout, a cancelled AWX job) cannot clean up: the files must be in the task's directory,
    which Ansible removes after the task, not in the system's temporary directory."""
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    args = dict(hub_args(lab), name="never-checks-in", namespace=hub_ns, wait=True, wait_timeout=300)
    module = ModuleProcess("fleet_cluster", args, env={"TMPDIR": str(system_tmp)})
    try:
        keys = wait_for(lambda: [key for where in (pathlib.Path(module.task_tmp), system_tmp) for key in where.rglob("*client-key*.pem")],
                        60, "the module to write the kubeconfig's inline client key for its client")
        assert all(stat.S_IMODE(key.stat().st_mode) == 0o600 for key in keys)
        assert all(pathlib.Path(module.task_tmp) in key.parents for key in keys), "keys outside the task directory: %s" % keys
        assert module.proc.poll() is None, "the module ended before it could be killed mid-wait"
        module.proc.kill()
        module.proc.communicate()
    finally:
        module.cleanup()
    assert not keys[0].exists()
    assert sorted(str(p) for p in system_tmp.rglob("*")) == []


# ---------------------------------------------------------------------------
# Helm: nothing of a run left on disk, nothing secret on its command line
# ---------------------------------------------------------------------------

# A helm that records each call's argv (one JSON line per call) and, for ``upgrade`` when asked, says so and sleeps
# before it runs the real helm: Helm as slow as a real install of a chart whose pods take their time.
SLOW_HELM = """#!{python}
import json, os, sys, time
with open({calls!r}, "a") as handle:
    handle.write(json.dumps(sys.argv) + "\\n")
if sys.argv[1:2] == ["upgrade"] and {sleep}:
    with open({started!r}, "w") as handle:
        handle.write(str(os.getpid()))
    time.sleep({sleep})
os.execv({helm!r}, [{helm!r}] + sys.argv[1:])
"""


def recording_helm(lab, tmp_path, sleep=0):
    """``(path of a helm wrapper, file its calls are recorded in, file it writes its pid to when an upgrade sleeps)``."""
    calls, started, wrapper = tmp_path / "helm-calls", tmp_path / "helm-upgrade-started", tmp_path / "helm"
    wrapper.write_text(SLOW_HELM.format(python=sys.executable, calls=str(calls), started=str(started), sleep=sleep, helm=str(lab.helm)))
    wrapper.chmod(0o755)
    return wrapper, calls, started


def files_holding(secret, since, *roots):
    """Regular files under ``roots`` changed since ``since`` (a time) whose content holds ``secret``."""
    found = set()
    for root in roots:
        for directory, _dirs, names in os.walk(str(root)):
            for name in names:
                path = os.path.join(directory, name)
                try:
                    info = os.lstat(path)
                    if not stat.S_ISREG(info.st_mode) or info.st_mtime < since or info.st_size > 10 * 2 ** 20:
                        continue
                    with open(path, "rb") as handle:
                        if secret.encode() in handle.read():
                            found.add(path)
                except OSError:
                    continue
    return sorted(found)


def test_a_module_killed_while_helm_runs_leaves_no_registration_token_on_disk(lab, hub, hub_ns, fresh_member, tmp_path):
    """The agent's values hold the registration token. They went to Helm in a values.yaml under the system's temporary
    directory, which a module killed while Helm ran (a cancelled AWX job, an out-of-memory kill) could not remove: the
    token stayed on disk until someone noticed, and valid until its TTL. Now they go through Helm's stdin: nothing holds
    the token on disk at any time, not even in the task's directory."""
    member = fresh_member("member1")
    make_token(lab, hub_ns)
    token = hub.token_values(hub_ns, "join")["token"]
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    wrapper, _calls, started = recording_helm(lab, tmp_path, sleep=300)
    since = time.time() - 1
    args = agent_args(lab, member, token_name="join", token_namespace=hub_ns, helm_binary=str(wrapper), wait=False)
    module = ModuleProcess("fleet_agent", args, env={"TMPDIR": str(system_tmp)})
    try:
        wait_for(lambda: started.exists() or module.proc.poll() is not None, 120, "the module to run helm upgrade")
        assert module.proc.poll() is None, "the module ended before Helm ran: %s" % (module.proc.communicate(),)
        wait_for(started.read_text, 10, "the helm wrapper's pid")
        module.proc.kill()  # SIGKILL, as an AWX cancel or the OOM killer does: no cleanup runs in the module
        module.proc.communicate()
        os.kill(int(started.read_text()), signal.SIGKILL)  # Helm, which outlived the module
        roots = [system_tmp, tempfile.gettempdir(), "/tmp", os.path.expanduser("~/.ansible/tmp")]
        assert files_holding(token, since, *roots) == []
    finally:
        module.cleanup()
    assert releases(lab, member) == []


class _PrivateChartRepository(http.server.SimpleHTTPRequestHandler):
    """A chart repository that wants a login (HTTP basic auth), as a private one does."""
    login = None
    seen = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        authorized = self.headers.get("Authorization") == "Basic " + base64.b64encode(self.login.encode()).decode()
        self.seen.append((self.path, authorized))
        if not authorized:
            self.send_response(401)
            self.send_header("WWW-Authenticate", "Basic")
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, *args):  # pylint: disable=arguments-differ
        pass


def test_chart_repository_credentials_never_reach_helms_command_line(lab, hub, hub_ns, fresh_member, tmp_path):
    """A password in chart_repo_url went into Helm's argv (``--repo https://user:password@...``), which /proc shows to
    every user of the host. Helm now reads it from a 0600 repository config in the task's directory, and the install
    from the private repository works (Helm did not even send the URL's login for the chart itself before)."""
    member = fresh_member("member1")
    make_token(lab, hub_ns)
    chart_dir = lab.fleet_chart("fleet-agent")
    version = str(yaml.safe_load((pathlib.Path(chart_dir) / "Chart.yaml").read_text())["version"])
    served = tmp_path / "repository"
    served.mkdir()
    subprocess.run([str(lab.helm), "package", str(chart_dir), "-d", str(served)], check=True, capture_output=True)
    password = "pw-" + base64.b32encode(os.urandom(10)).decode().lower()
    handler = type("Repository", (_PrivateChartRepository,), {"login": "alice:" + password, "seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(served)))
    url = "http://127.0.0.1:%d/" % server.server_address[1]
    subprocess.run([str(lab.helm), "repo", "index", str(served), "--url", url], check=True, capture_output=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    wrapper, calls, _started = recording_helm(lab, tmp_path)
    try:
        result = run_module("fleet_agent", agent_args(lab, member, token_name="join", token_namespace=hub_ns, helm_binary=str(wrapper),
                                                      chart_ref="fleet-agent", chart_version=version, wait=False,
                                                      chart_repo_url=url.replace("//", "//alice:%s@" % password)))
    finally:
        server.shutdown()
        server.server_close()
    ok(result)
    argvs = [json.loads(line) for line in calls.read_text().splitlines()]
    assert any(argv[1:2] == ["upgrade"] for argv in argvs)
    assert [argv for argv in argvs if password in " ".join(argv)] == []
    assert ("/index.yaml", True) in handler.seen and ("/fleet-agent-%s.tgz" % version, True) in handler.seen
    assert [r["status"] for r in releases(lab, member)] == ["deployed"]
    # (invocation.module_args echoes the option as given: masking it there is the no_log work of issue 31's item 4)
    assert password not in json.dumps(dict((k, v) for k, v in result.items() if k not in ("invocation", "raw_output")))
