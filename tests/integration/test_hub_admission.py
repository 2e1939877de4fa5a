"""The shipped admission policy for the hub (extensions/admission/hub-policy.yml, issue 46 item 2), in the lab.

hub.yml's credential may patch MemberClusters and issue tokens in fleetops-system, and each member identity may write
Works in its member's namespace: RBAC grants verbs on resources, not which identity or which account. With the policy
applied, the identity swap, a token for the collection's own ServiceAccount (TokenRequest or Secret) and a Work made
or re-specified with a member identity's token are refused - each probed with a server-side dry run, which RBAC alone
lets through - while a join with that credential, a placement applied through the member agent, a rotation and the
leave pass. Its own accounts live in fleetops-credentials, where RBAC already refuses it any token; the policy covers
the ones an upgrade from an earlier hub.yml leaves in fleetops-system.
"""

import json

import pytest
import yaml
from kubernetes import client
from kubernetes import config as kube_config
from kubernetes.client.rest import ApiException

import fleet_workloads as workloads
from kube_helpers import ignore_404, unique, wait_for
from modrun import REPO
from test_playbooks import (  # noqa: F401 pylint: disable=unused-import
    CREDENTIAL_NS, IDENTITY_NS, condition, hub, least_privilege_hub, playbook,
)

pytestmark = pytest.mark.lab

POLICY = REPO / "extensions" / "admission" / "hub-policy.yml"
MEMBER = "member2"
IDENTITY = MEMBER + "-hub-cluster-access"
WORKS = ("placement.kubernetes-fleet.io", "v1beta1")
KINDS = {"ValidatingAdmissionPolicy": "validating_admission_policy",
         "ValidatingAdmissionPolicyBinding": "validating_admission_policy_binding"}


def _policy_items():
    return yaml.safe_load(POLICY.read_text())["items"]


@pytest.fixture
def leftover_account(lab_controllers):
    """The ServiceAccount fleetops an earlier hub.yml kept in fleetops-system, as an upgrade that did not delete it
    leaves it (a TokenRequest is admitted only for an account that exists)."""
    core = client.CoreV1Api(lab_controllers.api_client("hub"))
    ignore_404(lambda: core.create_namespaced_service_account(IDENTITY_NS, {"metadata": {"name": "fleetops"}}))
    yield
    ignore_404(lambda: core.delete_namespaced_service_account("fleetops", IDENTITY_NS))


@pytest.fixture
def fenced_hub(lab_controllers):
    """The policy applied to the lab hub as shipped (removed afterwards: it fences every member identity)."""
    api = client.AdmissionregistrationV1Api(lab_controllers.api_client("hub"))
    for doc in _policy_items():
        kind = KINDS[doc["kind"]]
        ignore_404(lambda d=doc, k=kind: getattr(api, "delete_" + k)(d["metadata"]["name"]))
        getattr(api, "create_" + kind)(doc)
    yield
    for doc in _policy_items():
        ignore_404(lambda d=doc: getattr(api, "delete_" + KINDS[d["kind"]])(d["metadata"]["name"]))


def _denied_by_policy(call):
    """The message of the policy's refusal of ``call`` (a dry run), or None when it went through or RBAC refused it."""
    try:
        call()
    except ApiException as exc:
        body = exc.body or ""
        return body if "ValidatingAdmissionPolicy" in body else None
    return None


def _member_identity_client(lab):
    """A client with a token of the member identity (issued with the lab's admin credential)."""
    core = client.CoreV1Api(lab.api_client("hub"))
    token = core.create_namespaced_service_account_token(IDENTITY, IDENTITY_NS, client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600))).status.token
    configuration = client.Configuration()
    configuration.host, configuration.ssl_ca_cert = lab.api_urls["hub"], str(lab.ca_files["hub"])
    configuration.api_key = {"authorization": "Bearer " + token}
    return client.ApiClient(configuration)


def _probes(restricted, member_api):
    """Each escalation the policy refuses, as a dry run: ``{what: call}``."""
    custom, core = client.CustomObjectsApi(restricted), client.CoreV1Api(restricted)
    swap = {"spec": {"identity": {"kind": "ServiceAccount", "name": "fleetops", "namespace": CREDENTIAL_NS}}}
    token_request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600))
    token_secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                    "metadata": {"name": unique("own-token"), "annotations": {"kubernetes.io/service-account.name": "fleetops"}}}
    work = {"apiVersion": "%s/%s" % WORKS, "kind": "Work", "metadata": {"name": unique("planted")},
            "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "planted"}}]}}}
    member_custom = client.CustomObjectsApi(member_api)
    namespace = "fleet-member-" + MEMBER
    return {
        "identity swap": lambda: custom.patch_cluster_custom_object(
            "cluster.kubernetes-fleet.io", "v1beta1", "memberclusters", MEMBER, swap, dry_run="All"),
        "own TokenRequest": lambda: core.create_namespaced_service_account_token(
            "fleetops", IDENTITY_NS, token_request, dry_run="All"),
        "own token Secret": lambda: core.create_namespaced_secret(IDENTITY_NS, token_secret, dry_run="All"),
        "Work made by a member identity": lambda: member_custom.create_namespaced_custom_object(
            *WORKS, namespace, "works", work, dry_run="All"),
    }


def test_the_shipped_admission_policy_fences_the_hub_credential_and_the_member_identities(
        lab_controllers, hub, least_privilege_hub, fenced_hub, leftover_account, tmp_path):
    lab = lab_controllers
    as_joiner = ("-e", json.dumps({"fleetops_hub_kubeconfig": str(least_privilege_hub), "fleetops_hub_context": "least",
                                   "fleetops_backends": ["kubefleet"]}))
    limit = ("--limit", "fleet-hub," + MEMBER)
    playbook(lab, "leave_cluster.yml", "--limit", MEMBER, *as_joiner, tmp_path=tmp_path)  # whatever came before
    joined = playbook(lab, "join_cluster.yml", *limit, *as_joiner, tmp_path=tmp_path)
    assert joined.changed(MEMBER) > 0 and condition(hub.member_cluster(MEMBER), "Joined") == "True"

    restricted = kube_config.new_client_from_config(str(least_privilege_hub))
    probes = _probes(restricted, _member_identity_client(lab))
    refused = dict((what, _denied_by_policy(call)) for what, call in probes.items())
    assert all(refused.values()), refused
    assert "only its own identity" in refused["identity swap"] and "not for its own ServiceAccount fleetops" in refused["own TokenRequest"]
    try:  # its own account now: RBAC refuses it before any policy
        client.CoreV1Api(restricted).create_namespaced_service_account_token("fleetops", CREDENTIAL_NS, client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600)), dry_run="All")
        raise AssertionError("the hub credential minted a token for its own ServiceAccount in %s" % CREDENTIAL_NS)
    except ApiException as exc:
        assert exc.status == 403 and "ValidatingAdmissionPolicy" not in (exc.body or ""), exc

    placed = workloads.place_placement(lab, unique("fenced"), {"member": MEMBER})
    try:
        wait_for(lambda: workloads.applied_on_hub(lab, placed, MEMBER), 180, "the placement applied through the fenced member agent")
        member_custom = client.CustomObjectsApi(_member_identity_client(lab))
        (work,) = [w for w in member_custom.list_namespaced_custom_object(*WORKS, "fleet-member-" + MEMBER, "works")["items"]
                   if w["metadata"]["name"].startswith(placed.name + "-")]
        finalizer_only = dict(work, metadata=dict(work["metadata"], finalizers=list(work["metadata"].get("finalizers") or []) + ["x/y"]))
        respecified = dict(work, spec={"workload": {"manifests": []}})
        name = work["metadata"]["name"]
        assert _denied_by_policy(lambda: member_custom.replace_namespaced_custom_object(
            *WORKS, "fleet-member-" + MEMBER, "works", name, respecified, dry_run="All")), "a Work's spec changed with a member token"
        member_custom.replace_namespaced_custom_object(*WORKS, "fleet-member-" + MEMBER, "works", name, finalizer_only, dry_run="All")
    finally:
        workloads.remove(lab, placed)
        workloads.remove_from_member(lab, MEMBER, placed)

    rotated = playbook(lab, "join_cluster.yml", *limit, *as_joiner, "-e", "fleetops_rotate_credentials=true", tmp_path=tmp_path)
    assert rotated.changed(MEMBER) > 0
    playbook(lab, "leave_cluster.yml", "--limit", MEMBER, *as_joiner, tmp_path=tmp_path)
    assert hub.member_cluster(MEMBER) is None
