"""What a leave does to the workloads the fleet managers placed on the member (fleetops_leave_workloads, issue 34).

Both members join; a Rancher Fleet Bundle and a KubeFleet ClusterResourcePlacement, selecting them by the inventory's
label env=lab, put a ConfigMap on each. Then both leave in one run - member1 with fleetops_leave_workloads=remove (a host
variable of a second inventory source), member2 with the default (keep) - check mode first, which only predicts. Kept:
both workloads stay on member2, unmanaged, and its summary lists them. Removed: they are gone from member1. Neither
keeps anything of the agents. The members end as the other tests expect to find them: not joined, with nothing of this
test on them or on the hub. While both are joined and run both workloads, member_info also reads member2 with the
shipped member view role (issue 46 item 3), which reads no Secret.
"""

import os
import time

import pytest
import yaml
from kubernetes import client
from kubernetes import config as kube_config

import fleet_workloads as workloads
from kube_helpers import ignore_404, read_or_none, unique
from modrun import run_module
from test_playbooks import Hub, allowed_capabilities, apply_rbac, assert_left, playbook, remove_rbac

pytestmark = pytest.mark.lab

REMOVING, KEEPING = "member1", "member2"


def _owned_by_applied_work(lab, member, placed):
    """The kept KubeFleet objects (the placement's Namespace and ConfigMap) that still name an AppliedWork as owner."""
    core = client.CoreV1Api(lab.api_client(member))
    objects = {"Namespace %s" % placed.namespace: core.read_namespace(placed.namespace),
               "ConfigMap %s/%s" % (placed.namespace, placed.name): core.read_namespaced_config_map(placed.name, placed.namespace)}
    return [what for what, obj in objects.items() if any(ref.kind == "AppliedWork" for ref in obj.metadata.owner_references or [])]


def _running(lab, member):
    """Issue 45: member_info's ``member.workloads`` per manager, what the agents run on ``member`` (read from it)."""
    result = run_module("member_info", {"kubeconfig": str(lab.kubeconfig), "context": member, "name": member,
                                        "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub"})
    assert not result.failed, result
    return dict((manager, state["member"]["workloads"]) for manager, state in result["managers"].items())


VIEW_NS, VIEW_SA, VIEW_BINDING = "fleetops-system", "fleetops-view", "fleetops-registration-member-view"
# Where the agents' credentials and Helm's records live on a member: the view identity reads no Secret in any of them.
SECRET_NAMESPACES = ("fleet-hub-credentials", "cattle-fleet-system", "default", "fleet-system", "kube-system")


def _view_kubeconfig(lab, member, tmp_path):
    """A kubeconfig for a ServiceAccount bound to extensions/rbac/member.yml's view role on ``member``, as shipped."""
    api = lab.api_client(member)
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    apply_rbac(api, "member.yml")
    made_namespace = read_or_none(lambda: core.read_namespace(VIEW_NS)) is None
    if made_namespace:
        core.create_namespace({"metadata": {"name": VIEW_NS}})
    if read_or_none(lambda: core.read_namespaced_service_account(VIEW_SA, VIEW_NS)) is None:
        core.create_namespaced_service_account(VIEW_NS, {"metadata": {"name": VIEW_SA}})
    ignore_404(lambda: rbac.delete_cluster_role_binding(VIEW_BINDING))
    rbac.create_cluster_role_binding({"metadata": {"name": VIEW_BINDING}, "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": VIEW_BINDING},
        "subjects": [{"kind": "ServiceAccount", "name": VIEW_SA, "namespace": VIEW_NS}]})
    token = core.create_namespaced_service_account_token(VIEW_SA, VIEW_NS, client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600))).status.token
    path = tmp_path / "member-view.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "view",
        "clusters": [{"name": member, "cluster": {"server": lab.api_urls[member], "certificate-authority": str(lab.ca_files[member])}}],
        "users": [{"name": VIEW_SA, "user": {"token": token}}],
        "contexts": [{"name": "view", "context": {"cluster": member, "user": VIEW_SA}}]}))
    os.chmod(path, 0o600)
    return path, made_namespace


def _remove_view(lab, member, made_namespace):
    api = lab.api_client(member)
    ignore_404(lambda: client.RbacAuthorizationV1Api(api).delete_cluster_role_binding(VIEW_BINDING))
    ignore_404(lambda: client.CoreV1Api(api).delete_namespaced_service_account(VIEW_SA, VIEW_NS))
    if made_namespace:
        ignore_404(lambda: client.CoreV1Api(api).delete_namespace(VIEW_NS))
    remove_rbac(api, "member.yml")


def _secret_rules(api, namespace):
    """The rules SelfSubjectRulesReview lists for the credential of ``api`` in ``namespace`` that reach Secrets."""
    review = client.AuthorizationV1Api(api).create_self_subject_rules_review(
        client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace=namespace)))
    return [rule for rule in review.status.resource_rules
            if set(rule.resources or []) & {"secrets", "*"} and set(rule.api_groups or []) & {"", "*"}]


def _viewed(lab, member, tmp_path):
    """Issue 46 item 3: the view identity can read no Secret on ``member``, and member_info with it still judges both
    managers healthy from what it may read (the hub, the agents' Deployments, AppliedWorks), calling the release and
    the credentials unknown, never missing."""
    kubeconfig, made_namespace = _view_kubeconfig(lab, member, tmp_path)
    try:
        viewer = kube_config.new_client_from_config(str(kubeconfig))
        assert {ns: _secret_rules(viewer, ns) for ns in SECRET_NAMESPACES} == dict.fromkeys(SECRET_NAMESPACES, [])
        reads = [(verb, "", "secrets", ns, name, None) for ns in SECRET_NAMESPACES for verb in ("get", "list")
                 for name in (None, "hub-kubeconfig-secret", "fleet-agent")]
        assert allowed_capabilities(viewer, reads) == []
        result = run_module("member_info", {"kubeconfig": str(kubeconfig), "context": "view", "name": member,
                                            "hub_kubeconfig": str(lab.kubeconfig), "hub_context": "hub"})
    finally:
        _remove_view(lab, member, made_namespace)
    assert not result.failed, result.get("msg")
    assert result["healthy"] is True and result["actions"] == {"rancher_fleet": "none", "kubefleet": "none"}, result["managers"]
    for manager, state in result["managers"].items():
        assert state["member"]["unread"] == ["secrets"] and state["member"]["release"] is None, manager
        assert state["member"]["credential"] is None, manager
    assert result["managers"]["rancher_fleet"]["member"]["workloads"] is None  # Helm's records are Secrets
    return result["managers"]["kubefleet"]["member"]["workloads"]


def _summary(run, member):
    """The leave's summary line for ``member`` (the play's last debug message)."""
    return next(line for line in run.output.splitlines() if '"msg": "%s: ' % member in line)


def test_a_leave_keeps_the_fleet_s_workloads_by_default_and_removes_them_when_asked(lab_controllers, tmp_path):
    lab, hub = lab_controllers, Hub(lab_controllers)
    members = [REMOVING, KEEPING]
    playbook(lab, "join_cluster.yml", "--limit", ",".join(["fleet-hub"] + members), tmp_path=tmp_path)
    removing = tmp_path / "removing.yml"
    removing.write_text("all:\n  hosts:\n    %s:\n      fleetops_leave_workloads: remove\n" % REMOVING)
    leave = ("leave_cluster.yml", "-i", str(removing), "--limit", ",".join(members))
    with workloads.placements(lab, unique("wl"), {"env": "lab"}, members=members) as placed:
        fleet, kubefleet = placed["rancher_fleet"], placed["kubefleet"]
        on = {(m, p.manager): workloads.wait_on_member(lab, m, p) for m in members for p in (fleet, kubefleet)}
        (release,), (work,) = on[KEEPING, "rancher_fleet"]["releases"], on[KEEPING, "kubefleet"]["applied_works"]
        kept = "kept: AppliedWork %s (Namespace %s, ConfigMap %s/%s)" % (work, kubefleet.name, kubefleet.name, kubefleet.name)
        kept_fleet = "kept: release %s/%s (bundle %s), namespace %s" % (fleet.namespace, release, fleet.name, fleet.namespace)
        removed = ("AppliedWork %s (Namespace" % work, "the releases of bundle(s) %s" % fleet.name)
        running = _running(lab, KEEPING)
        assert {"placement": fleet.name, "record": "release %s/%s" % (fleet.namespace, release)} in running["rancher_fleet"]
        (row,) = [row for row in running["kubefleet"] if row["placement"] == kubefleet.name]
        assert row["record"] == "AppliedWork %s" % work
        assert sorted(row["objects"]) == ["ConfigMap %s/%s" % (kubefleet.name, kubefleet.name), "Namespace %s" % kubefleet.name]
        assert _viewed(lab, KEEPING, tmp_path) == running["kubefleet"]

        predicted = playbook(lab, *leave, "--check", tmp_path=tmp_path)
        assert kept in _summary(predicted, KEEPING) and kept_fleet in _summary(predicted, KEEPING)
        assert all(text in _summary(predicted, REMOVING) for text in removed) and "kept:" not in _summary(predicted, REMOVING)
        assert all(hub.fleet_cluster(m) is not None and hub.member_cluster(m) is not None for m in members)
        assert all(workloads.on_member(lab, m, p) == on[m, p.manager] for m in members for p in (fleet, kubefleet))

        left = playbook(lab, *leave, tmp_path=tmp_path)
        assert kept in _summary(left, KEEPING) and kept_fleet in _summary(left, KEEPING)
        assert all(text in _summary(left, REMOVING) for text in removed) and "kept:" not in _summary(left, REMOVING)
        assert_left(hub, members)
        for one in (fleet, kubefleet):
            assert workloads.on_member(lab, KEEPING, one) == on[KEEPING, one.manager], "the kept %s workload changed" % one.manager
        # The member-agent chart carries the AppliedWork CRD (not in the lab's copy), so a real uninstall deletes every
        # AppliedWork: what the leave kept must not belong to it any more, and outlive it.
        owned = _owned_by_applied_work(lab, KEEPING, kubefleet)
        assert not owned, "kept objects still owned by their AppliedWork: %s" % owned
        custom = client.CustomObjectsApi(lab.api_client(KEEPING))
        custom.delete_cluster_custom_object("placement.kubernetes-fleet.io", "v1beta1", "appliedworks", work)
        time.sleep(5)  # the garbage collector acts within a second or two on an owner that is gone
        assert workloads.on_member(lab, KEEPING, kubefleet)["configmap"] == kubefleet.data, "a kept object went with its AppliedWork"
        assert workloads.on_member(lab, REMOVING, kubefleet) == {"configmap": None, "namespace": False, "applied_works": []}
        # Fleet's agent uninstalls the release and leaves the namespace it created for the bundle.
        assert workloads.on_member(lab, REMOVING, fleet) == {"configmap": None, "namespace": True, "releases": []}
