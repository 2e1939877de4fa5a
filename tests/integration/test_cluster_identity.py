"""Which cluster a member is, on the lab: recorded on its hub objects at join; an inventory host pointed at another
member's cluster, two hosts reaching one cluster, and a member whose cluster was rebuilt under the same name
(``fleetlab rebuild``) are refused before anything changes; ``fleetops_replace_rebuilt`` re-registers the rebuilt one."""

import base64
import json

import pytest
import yaml
from kubernetes import client

from ansible_collections.fleetops.registration.plugins.module_utils.cluster_identity import (
    CA_ANNOTATION, UID_ANNOTATION, ca_fingerprint,
)
from kube_helpers import wait_for
from modrun import run_module
from test_playbooks import Hub, assert_left, playbook

pytestmark = pytest.mark.lab

KUBEFLEET_ONLY = json.dumps({"fleetops_survey_backends": ["kubefleet"]})
TOKEN_SECRET = "member2-hub-cluster-access-token"


def cluster_uid(lab, context):
    return client.CoreV1Api(lab.api_client(context)).read_namespace("kube-system").metadata.uid


def context_ca(lab, context):
    config = yaml.safe_load(lab.kubeconfig.read_text())
    cluster = next(c["context"]["cluster"] for c in config["contexts"] if c["name"] == context)
    data = next(c["cluster"] for c in config["clusters"] if c["name"] == cluster)["certificate-authority-data"]
    return base64.b64decode(data).decode()


def annotations(obj):
    return obj["metadata"].get("annotations") or {}


def overlay(tmp_path, name, **member2_vars):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"all": {"hosts": {"member2": member2_vars}}}))
    return str(path)


def test_the_member_cluster_identity_is_recorded_checked_and_replaced_on_request(lab_controllers, tmp_path):  # pylint: disable=too-many-locals
    lab, hub = lab_controllers, Hub(lab_controllers)
    member2_uid = cluster_uid(lab, "member2")
    playbook(lab, "join_cluster.yml", "--limit", "fleet-hub,member1,member2", tmp_path=tmp_path)
    recorded = {UID_ANNOTATION: member2_uid, CA_ANNOTATION: ca_fingerprint(context_ca(lab, "member2"))}
    for obj in (hub.member_cluster("member2"), hub.fleet_cluster("member2")):
        assert {k: annotations(obj).get(k) for k in recorded} == recorded, annotations(obj)
    status = run_module("fleet_status_info", {"kubeconfig": str(lab.kubeconfig), "context": "hub"})
    assert status["members"]["member2"]["kubefleet"]["identity"]["uid"] == member2_uid
    assert "| %s |" % member2_uid[:8] in next(line for line in status["table"] if line.startswith("member2 "))

    # member2's inventory entry now reaches member1's cluster: refused, naming the member that cluster joined as -
    # also when the user says member2 was rebuilt, which would otherwise take member1's agents over
    wrong = overlay(tmp_path, "wrong.yml", fleetops_context="member1")
    for extra in ([], ["-e", "fleetops_replace_rebuilt=true"]):
        refused = playbook(lab, "join_cluster.yml", "-i", wrong, "--limit", "fleet-hub,member2", *extra, tmp_path=tmp_path, fails=True)
        assert "kubeconfig (from fleetops_kubeconfig" in refused.output, refused.output[-3000:]
        assert "member member2 reaches the cluster that joined as member1 (kube-system Namespace UID %s)" % (
            cluster_uid(lab, "member1")) in refused.output, refused.output[-3000:]
        assert refused.recap["member2"]["changed"] == 0
        assert annotations(hub.member_cluster("member2"))[UID_ANNOTATION] == member2_uid

    # two hosts that reach one cluster: both refused before anything changes
    shared = playbook(lab, "join_cluster.yml", "-i", wrong, "--limit", "fleet-hub,member1,member2", "-e", KUBEFLEET_ONLY,
                      tmp_path=tmp_path, fails=True)
    assert "member member1 reaches the same cluster as member2" in shared.output, shared.output[-3000:]
    assert "member member2 reaches the same cluster as member1" in shared.output
    assert "kubeconfig (from fleetops_kubeconfig" in shared.output
    assert shared.recap["member1"]["changed"] == 0 and shared.recap["member2"]["changed"] == 0

    # member2's cluster is rebuilt under the same name: refused by default, re-registered with fleetops_replace_rebuilt
    lab.rebuild("member2")
    rebuilt_uid = cluster_uid(lab, "member2")
    assert rebuilt_uid != member2_uid
    refused = playbook(lab, "join_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=tmp_path, fails=True)
    assert "%s -> %s" % (member2_uid, rebuilt_uid) in refused.output, refused.output[-3000:]
    assert refused.recap["member2"]["changed"] == 0
    member2_uid = rebuilt_uid
    core = client.CoreV1Api(lab.api_client("hub"))
    old_token = core.read_namespaced_secret(TOKEN_SECRET, "fleetops-system").metadata.uid
    replaced = playbook(lab, "join_cluster.yml", "--limit", "fleet-hub,member2", "-e", "fleetops_replace_rebuilt=true",
                        tmp_path=tmp_path)
    assert replaced.changed("member2") > 0
    assert core.read_namespaced_secret(TOKEN_SECRET, "fleetops-system").metadata.uid != old_token  # the old cluster's token revoked
    for obj in (hub.member_cluster("member2"), hub.fleet_cluster("member2")):
        assert annotations(obj)[UID_ANNOTATION] == member2_uid
    # Fleet deletes the older registration of the same client ID once it grants the new cluster's
    client_id = hub.fleet_cluster("member2")["spec"]["clientID"]
    wait_for(lambda: len([r for r in hub.fleet_list("clusterregistrations") if r["spec"].get("clientID") == client_id]) == 1,
             60, "one ClusterRegistration for member2's client ID")
    assert playbook(lab, "join_cluster.yml", "--limit", "fleet-hub,member2", tmp_path=tmp_path).unchanged(["fleet-hub", "member2"])

    playbook(lab, "leave_cluster.yml", "--limit", "fleet-hub,member1,member2", tmp_path=tmp_path)
    assert_left(hub, ["member1", "member2"], [client_id])
