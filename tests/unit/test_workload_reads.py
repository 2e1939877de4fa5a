"""What a leave reads of the fleet's workloads on a member: which Helm releases are Fleet's bundles, which applied
objects the garbage collector has yet to delete (pure logic over the objects a client returns)."""

import base64
import gzip
import json

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet import workloads as kubefleet
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import workloads as fleet


def _storage(namespace, name, version, annotations=None, status="deployed"):
    payload = {"name": name, "namespace": namespace, "chart": {"metadata": {"name": name, "annotations": annotations or {}}}}
    release = base64.b64encode(base64.b64encode(gzip.compress(json.dumps(payload).encode()))).decode()
    return {"metadata": {"namespace": namespace, "name": "sh.helm.release.v1.%s.v%d" % (name, version),
                         "labels": {"owner": "helm", "name": name, "version": str(version), "status": status}},
            "data": {"release": release}}


class Listing:
    def __init__(self, items=(), objects=None, error=None):
        self.items, self.objects, self.error, self.asked = list(items), objects or {}, error, []

    def list(self, resource, namespace=None, label_selector=None):
        self.asked.append((resource.plural, namespace, label_selector))
        if self.error:
            raise self.error
        return self.items

    def get(self, resource, name, namespace=None):
        if isinstance(self.objects.get((resource.kind, namespace, name)), ApiError):
            raise self.objects[(resource.kind, namespace, name)]
        return self.objects.get((resource.kind, namespace, name))


def test_fleet_bundle_releases_are_the_newest_live_releases_whose_chart_names_a_bundle_but_the_agent_s_own():
    bundle = {fleet.BUNDLE_ID_ANNOTATION: "shop"}
    member = Listing([
        _storage("shop", "shop", 1, bundle, status="superseded"), _storage("shop", "shop", 2, bundle),
        _storage("web", "web", 1, {fleet.BUNDLE_ID_ANNOTATION: "web"}, status="uninstalled"),
        _storage("other", "other", 3),  # not Fleet's
        _storage("cattle-fleet-system", "fleet-agent-member1", 1, {fleet.BUNDLE_ID_ANNOTATION: "fleet-agent-member1"}),
        _storage("shop2", "shop", 1, {fleet.BUNDLE_ID_ANNOTATION: "shop-b"}),  # the same name in another namespace
    ])
    found = fleet.bundle_releases(member)
    assert found == [{"name": "shop", "namespace": "shop", "bundle": "shop"}, {"name": "shop", "namespace": "shop2", "bundle": "shop-b"}]
    assert member.asked == [("secrets", None, "owner=helm")]
    assert [fleet.release_text(r) for r in found] == ["shop/shop (bundle shop)", "shop2/shop (bundle shop-b)"]


def test_fleet_bundle_deployments_leave_out_the_agent_s_bundle_and_say_unknown_without_the_right():
    items = [{"metadata": {"name": n, "labels": {fleet.BUNDLE_NAME_LABEL: n}}} for n in ("web", "fleet-agent-member1", "api")]
    assert fleet.bundle_deployments(Listing(items), "cluster-fleet-default-member1-x", "member1") == ["api", "web"]
    assert fleet.bundle_deployments(Listing(items), None, "member1") == []
    assert fleet.bundle_deployments(Listing(error=ApiError("no", status=403)), "ns", "member1") is None


def test_kubefleet_waits_only_for_applied_objects_still_owned_by_their_deleted_applied_work():
    work = {"name": "web-work", "uid": "w1", "resources": [
        {"kind": "Namespace", "version": "v1", "resource": "namespaces", "name": "web", "uid": "n1"},
        {"kind": "ConfigMap", "version": "v1", "resource": "configmaps", "namespace": "web", "name": "a", "uid": "c1"},
        {"kind": "Deployment", "group": "apps", "version": "v1", "resource": "deployments", "namespace": "web", "name": "d", "uid": "d1"},
        {"kind": "Secret", "version": "v1", "resource": "secrets", "namespace": "web", "name": "s", "uid": "s1"},
        {"kind": "ConfigMap", "version": "v1", "resource": "configmaps", "namespace": "web", "name": "gone", "uid": "g1"},
    ]}
    owned = [{"uid": "w1"}]
    member = Listing(objects={
        ("Namespace", None, "web"): {"metadata": {"uid": "n1", "ownerReferences": owned}},
        ("ConfigMap", "web", "a"): {"metadata": {"uid": "c-new", "ownerReferences": owned}},  # made again since
        ("Deployment", "web", "d"): {"metadata": {"uid": "d1", "ownerReferences": [{"uid": "other"}]}},  # owner removed
        ("Secret", "web", "s"): ApiError("forbidden", status=403),
    })
    assert kubefleet.still_owned(member, [work]) == ["Namespace web"]
    resource, name, namespace, uid = kubefleet.applied_resource(work["resources"][2])
    assert (resource.api_version, resource.plural, resource.namespaced, name, namespace, uid) == ("apps/v1", "deployments", True, "d", "web", "d1")
    assert kubefleet.work_view(work)["resources"][:2] == ["Namespace web", "ConfigMap web/a"]


def test_kubefleet_applied_works_are_none_without_their_crd():
    assert kubefleet.read_applied_works(Listing(error=ApiError("not found", status=404))) == []
    works = kubefleet.read_applied_works(Listing([{"metadata": {"name": "b", "uid": "2"}, "spec": {"workNamespace": "fleet-member-m"}},
                                                  {"metadata": {"name": "a", "uid": "1"}, "status": {"appliedResources": [{"kind": "X"}]}}]))
    assert [(w["name"], w["uid"], len(w["resources"])) for w in works] == [("a", "1", 1), ("b", "2", 0)]


def test_a_kept_object_loses_only_its_applied_work_s_owner_reference():
    obj = {"metadata": {"ownerReferences": [{"uid": "w1", "kind": "AppliedWork"}, {"uid": "o2", "kind": "Deployment"}]}}
    assert kubefleet.without_owner(obj, "w1") == [{"uid": "o2", "kind": "Deployment"}]
    assert kubefleet.without_owner({"metadata": {"ownerReferences": [{"uid": "w1"}]}}, "w1") == []
    assert kubefleet.without_owner(obj, "other") is None  # nothing to take off: no patch
    assert kubefleet.without_owner({"metadata": {}}, "w1") is None


def test_what_runs_on_a_member_is_each_bundle_release_by_its_bundle_read_in_one_list():
    member = Listing([_storage("shop", "shop", 2, {fleet.BUNDLE_ID_ANNOTATION: "shop"}),
                      _storage("web", "web-release", 1, {fleet.BUNDLE_ID_ANNOTATION: "web"}),
                      _storage("shop2", "shop", 1, {fleet.BUNDLE_ID_ANNOTATION: "shop"}),
                      _storage("other", "other", 3)])
    assert fleet.running(member) == [{"placement": "shop", "record": "release shop/shop"},
                                     {"placement": "shop", "record": "release shop2/shop"},
                                     {"placement": "web", "record": "release web/web-release"}]
    assert member.asked == [("secrets", None, "owner=helm")]


@pytest.mark.parametrize("work, placement", [
    ("web-work", "web"), ("web-3", "web"), ("my-app-2-work", "my-app-2"), ("a-1-2", "a-1"), ("x-work-work", "x-work"),
    ("shop-configmap-6f1c2a9e-4b7d-4c1e-9a57-0d3e8f2b1c44", "shop"), ("unnamed", "unnamed"),
])
def test_an_applied_work_names_its_placement_as_kubefleet_names_works(work, placement):
    assert kubefleet.placement_of(work) == placement


def test_what_runs_on_a_member_is_each_applied_work_by_its_placement_with_what_it_applied():
    items = [{"metadata": {"name": "web-work", "uid": "w1"}, "spec": {"workNamespace": "fleet-member-m1"},
              "status": {"appliedResources": [{"kind": "Namespace", "version": "v1", "resource": "namespaces", "name": "web"}]}},
             {"metadata": {"name": "api-work", "uid": "w2"}, "spec": {}, "status": {}}]
    member = Listing(items)
    assert kubefleet.running(member) == [{"placement": "api", "record": "AppliedWork api-work", "objects": []},
                                         {"placement": "web", "record": "AppliedWork web-work", "objects": ["Namespace web"]}]
    assert member.asked == [("appliedworks", None, None)]
    assert kubefleet.running(Listing(error=ApiError("no CRD", status=404))) == []
