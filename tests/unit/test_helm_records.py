"""What a release record may make an uninstall delete (module_utils/helm_records.py): the agent charts' own objects
pass, anything else in a planted record is refused before Helm runs. The lab proof is
tests/integration/test_forged_member_state.py."""

import base64
import gzip
import json

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils.errors import HelmError
from ansible_collections.fleetops.registration.plugins.module_utils.helm_records import (
    AgentObjects, check_rollback, check_uninstall, check_upgrade, foreign_objects, manifest_objects)
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.resources import agent_objects

# What `helm template` renders of each agent chart (kinds, namespaces and names; the rest left out).
MEMBER_AGENT = """---
apiVersion: v1
kind: Namespace
metadata: {name: fleet-system}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: member-agent-sa, namespace: fleet-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: member-agent-cluster-admin-binding}
roleRef: {kind: ClusterRole, name: cluster-admin}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: member-agent, namespace: fleet-system}
"""
FLEET_AGENT = """---
kind: NetworkPolicy
metadata: {name: default-allow-all, namespace: cattle-fleet-system}
---
kind: ServiceAccount
metadata: {name: fleet-agent}
---
kind: Secret
metadata: {name: fleet-agent-bootstrap}
---
kind: ConfigMap
metadata: {name: fleet-agent}
---
kind: ClusterRole
metadata: {name: fleet-agent-system-fleet-agent-role}
---
kind: ClusterRoleBinding
metadata: {name: fleet-agent-system-fleet-agent-role-binding}
---
kind: Deployment
metadata: {name: fleet-agent}
"""
# What Fleet's own agent management deploys as release fleet-agent-<cluster> (its agent manifest, built in Go).
FLEET_MANAGED = """---
kind: ServiceAccount
metadata: {name: fleet-agent, namespace: cattle-fleet-system}
---
kind: ClusterRole
metadata: {name: cattle-fleet-system-fleet-agent-role}
---
kind: ClusterRoleBinding
metadata: {name: cattle-fleet-system-fleet-agent-role-binding}
---
kind: NetworkPolicy
metadata: {name: default-allow-all, namespace: cattle-fleet-system}
---
kind: PriorityClass
metadata: {name: fleet-agent-priority-class}
---
kind: PodDisruptionBudget
metadata: {name: fleet-agent-pod-disruption-budget, namespace: cattle-fleet-system}
---
kind: Deployment
metadata: {name: fleet-agent, namespace: cattle-fleet-system}
"""
KUBEFLEET = AgentObjects("fleet-system", ("member-agent",))
FLEET = agent_objects("cattle-fleet-system")


def test_the_agent_charts_own_objects_are_all_covered():
    assert foreign_objects(manifest_objects(MEMBER_AGENT, "default"), KUBEFLEET) == []
    assert foreign_objects(manifest_objects(FLEET_AGENT, "cattle-fleet-system"), FLEET) == []
    assert foreign_objects(manifest_objects(FLEET_MANAGED, "cattle-fleet-system"), FLEET) == []
    # each agent's own names only
    assert foreign_objects(manifest_objects(FLEET_MANAGED, "cattle-fleet-system"), KUBEFLEET) != []


def test_an_object_without_a_namespace_is_where_helm_applies_it():
    assert manifest_objects(FLEET_AGENT, "cattle-fleet-system")[1] == ("ServiceAccount", "cattle-fleet-system", "fleet-agent")
    assert manifest_objects(MEMBER_AGENT, "default")[0] == ("Namespace", None, "fleet-system")
    # KubeFleet's records live in default: an object left to the release namespace is not in the agent's
    assert foreign_objects(manifest_objects("kind: ConfigMap\nmetadata: {name: x}\n", "default"), KUBEFLEET) == ["ConfigMap default/x"]


@pytest.mark.parametrize("planted, foreign", [
    ("kind: ConfigMap\nmetadata: {name: coredns, namespace: kube-system}", "ConfigMap kube-system/coredns"),
    ("kind: Namespace\nmetadata: {name: kube-system}", "Namespace kube-system"),
    ("kind: ClusterRoleBinding\nmetadata: {name: cluster-admin}", "ClusterRoleBinding cluster-admin"),
    ("kind: ClusterRole\nmetadata: {name: system:controller:namespace-controller}",
     "ClusterRole system:controller:namespace-controller"),
    ("kind: ValidatingWebhookConfiguration\nmetadata: {name: member-agent-hook}", "ValidatingWebhookConfiguration member-agent-hook"),
    ("kind: CustomResourceDefinition\nmetadata: {name: works.placement.kubernetes-fleet.io}",
     "CustomResourceDefinition works.placement.kubernetes-fleet.io"),
    ("kind: Deployment\nmetadata: {name: member-agent, namespace: default}", "Deployment default/member-agent"),
    ("just text", None),
])
def test_a_planted_object_outside_the_agent_is_named(planted, foreign):
    found = foreign_objects(manifest_objects(MEMBER_AGENT + "---\n" + planted + "\n", "fleet-system"), KUBEFLEET)
    if foreign is None:
        assert found == ["None an entry that is no object"]
    else:
        assert found == [foreign]


def test_a_manifest_that_is_no_yaml_is_foreign():
    assert foreign_objects(manifest_objects("kind: [", "default"), KUBEFLEET)[0].startswith("None a manifest that is not YAML")


def record(name, version, manifest):
    payload = base64.b64encode(gzip.compress(json.dumps({"name": name, "version": version, "manifest": manifest}).encode()))
    labels = {"owner": "helm", "name": name, "version": str(version)}
    return {"metadata": {"name": "sh.helm.release.v1.%s.v%d" % (name, version), "labels": labels},
            "data": {"release": base64.b64encode(payload).decode()}}


class FakeKube:
    """The member's Helm storage Secrets, listed by the release selector."""

    def __init__(self, secrets):
        self.secrets, self.lists = secrets, []

    def list(self, _resource, namespace, label_selector=None):
        self.lists.append((namespace, label_selector))
        return self.secrets


def test_an_uninstall_goes_ahead_on_the_agent_s_own_newest_record():
    kube = FakeKube([record("member-agent", 1, "kind: ConfigMap\nmetadata: {name: old, namespace: kube-system}"),
                     record("member-agent", 2, MEMBER_AGENT)])
    check_uninstall(kube, "member-agent", "default", KUBEFLEET)  # the newest is what helm uninstall acts on
    assert kube.lists == [("default", "owner=helm,name=member-agent")]
    check_uninstall(FakeKube([]), "member-agent", "default", KUBEFLEET)  # no record: nothing for Helm to delete


def test_an_uninstall_is_refused_naming_the_planted_record_and_its_objects():
    planted = MEMBER_AGENT + "---\nkind: ConfigMap\nmetadata: {name: coredns, namespace: kube-system}\n"
    kube = FakeKube([record("member-agent", 1, MEMBER_AGENT), record("member-agent", 7, planted)])
    with pytest.raises(HelmError) as raised:
        check_uninstall(kube, "member-agent", "default", KUBEFLEET)
    assert "release record default/sh.helm.release.v1.member-agent.v7 lists objects the agent chart does not make " \
           "(ConfigMap kube-system/coredns)" in raised.value.msg
    assert "delete it if it is forged" in raised.value.hint


FOREIGN = MEMBER_AGENT + "---\nkind: ClusterRoleBinding\nmetadata: {name: planted-admin}\n"


def test_a_rollback_between_the_agent_s_own_records_goes_ahead_with_one_list():
    kube = FakeKube([record("member-agent", 1, FLEET_MANAGED), record("member-agent", 2, MEMBER_AGENT),
                     record("member-agent", 3, MEMBER_AGENT)])  # an older revision nobody rolls back to is not judged
    check_rollback(kube, "member-agent", "default", KUBEFLEET, 2)
    assert kube.lists == [("default", "owner=helm,name=member-agent")]
    with pytest.raises(HelmError):
        check_rollback(kube, "member-agent", "default", KUBEFLEET, 1)


def test_a_rollback_to_a_planted_revision_is_refused_naming_it():
    kube = FakeKube([record("member-agent", 1, MEMBER_AGENT), record("member-agent", 2, FOREIGN),
                     record("member-agent", 3, MEMBER_AGENT)])
    with pytest.raises(HelmError) as raised:
        check_rollback(kube, "member-agent", "default", KUBEFLEET, 2)
    assert "release record default/sh.helm.release.v1.member-agent.v2 lists objects the agent chart does not make " \
           "(ClusterRoleBinding planted-admin): helm rollback would act on them" in raised.value.msg
    check_rollback(kube, "member-agent", "default", KUBEFLEET, 1)


def test_a_rollback_from_a_planted_newest_revision_is_refused_as_helm_would_delete_its_objects():
    kube = FakeKube([record("member-agent", 1, MEMBER_AGENT), record("member-agent", 2, FOREIGN)])
    with pytest.raises(HelmError) as raised:
        check_rollback(kube, "member-agent", "default", KUBEFLEET, 1)
    assert "sh.helm.release.v1.member-agent.v2" in raised.value.msg


def test_a_record_that_is_not_helm_s_encoding_is_foreign():
    broken = record("member-agent", 2, MEMBER_AGENT)
    broken["data"]["release"] = base64.b64encode(b"not base64 at all!").decode()
    with pytest.raises(HelmError) as raised:
        check_rollback(FakeKube([record("member-agent", 1, MEMBER_AGENT), broken]), "member-agent", "default", KUBEFLEET, 1)
    assert "a manifest that is not YAML" in raised.value.msg


def deployed(secret, status="deployed"):
    secret["metadata"]["labels"]["status"] = status
    return secret


def test_an_upgrade_is_refused_when_the_record_it_upgrades_from_lists_foreign_objects():
    with pytest.raises(HelmError) as raised:  # the newest record, whatever its status
        check_upgrade(FakeKube([deployed(record("member-agent", 1, MEMBER_AGENT), "superseded"), record("member-agent", 2, FOREIGN)]),
                      "member-agent", "default", KUBEFLEET)
    assert "sh.helm.release.v1.member-agent.v2" in raised.value.msg and "helm upgrade would act on them" in raised.value.msg
    with pytest.raises(HelmError) as raised:  # a deployed one under a failed newest: Helm upgrades from the deployed one
        check_upgrade(FakeKube([deployed(record("member-agent", 1, FOREIGN)), deployed(record("member-agent", 2, MEMBER_AGENT), "failed")]),
                      "member-agent", "default", KUBEFLEET)
    assert "sh.helm.release.v1.member-agent.v1" in raised.value.msg


def test_an_upgrade_goes_ahead_from_the_agent_s_own_records_and_before_a_first_install():
    check_upgrade(FakeKube([deployed(record("member-agent", 1, FOREIGN), "superseded"), deployed(record("member-agent", 2, MEMBER_AGENT))]),
                  "member-agent", "default", KUBEFLEET)
    check_upgrade(FakeKube([]), "member-agent", "default", KUBEFLEET)
