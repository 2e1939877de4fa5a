"""Rancher Fleet's cluster namespace: when a Cluster cannot be granted because of it (pure rules), how the manager
judges and shows such a Cluster, and the batch client's memory of a labelled LIST."""

import datetime

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import batch
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_status import member_row
from ansible_collections.fleetops.registration.plugins.module_utils.k8s_client import NAMESPACE
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import cluster_namespace as cns
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet import views
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.manager import MANAGER

NOW = datetime.datetime(2026, 1, 2, 12, 0, 0, tzinfo=datetime.timezone.utc)
OWN = "cluster-fleet-default-edge-1-9e7c9bcadda5"


def namespace(name, cluster=("fleet-default", "edge-1"), deleting=False):
    meta = {"name": name, "labels": {"fleet.cattle.io/managed": "true"},
            "annotations": {"fleet.cattle.io/cluster-namespace": cluster[0], "fleet.cattle.io/cluster": cluster[1]}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-02T11:59:50Z"
    return {"metadata": meta}


def cluster(status_namespace=OWN, checked_in=True):
    status = {"namespace": status_namespace} if status_namespace else {}
    if checked_in:
        status["agent"] = {"lastSeen": "2026-01-02T11:59:00Z"}
    return {"metadata": {"name": "edge-1", "namespace": "fleet-default"}, "spec": {"clientID": "abc"}, "status": status}


def test_namespaces_of_matches_fleets_annotations_or_the_status_name_only():
    others = [namespace("cluster-fleet-default-edge-2-1", cluster=("fleet-default", "edge-2")),
              namespace("cluster-other-edge-1-2", cluster=("other", "edge-1"))]
    unannotated = {"metadata": {"name": OWN}}
    assert cns.namespaces_of(others, "fleet-default", "edge-1") == []
    assert cns.namespaces_of(others + [namespace(OWN)], "fleet-default", "edge-1") == [namespace(OWN)]
    assert cns.namespaces_of([unannotated], "fleet-default", "edge-1", expected=OWN) == [unannotated]
    assert cns.namespaces_of([unannotated], "fleet-default", "edge-1") == []


@pytest.mark.parametrize("obj,namespaces,expected", [
    (cluster(), [namespace(OWN)], None),
    # Fleet has not handled a new Cluster yet: nothing to judge
    (cluster(status_namespace=None, checked_in=False), [], None),
    # the race of a Cluster created again while the earlier one's namespace is deleted
    (cluster(status_namespace=None, checked_in=False), [namespace(OWN, deleting=True)], (cns.TERMINATING, OWN)),
    (cluster(checked_in=False), [namespace(OWN, deleting=True)], (cns.TERMINATING, OWN)),
    # ... and once it is gone: Fleet assigned it and never creates it again
    (cluster(checked_in=False), [], (cns.MISSING, OWN)),
    (cluster(), [], (cns.MISSING, OWN)),
    # no Cluster (a join is about to create it): only a terminating namespace is in the way
    (None, [namespace(OWN, deleting=True)], (cns.TERMINATING, OWN)),
    (None, [], None),
])
def test_problem(obj, namespaces, expected):
    assert cns.problem(obj, namespaces) == expected


def test_describe_names_the_namespace_and_the_cause():
    assert "still being deleted" in cns.describe((cns.TERMINATING, OWN)) and OWN in cns.describe((cns.TERMINATING, OWN))
    assert "will not create it" in cns.describe([cns.MISSING, OWN]) and OWN in cns.describe([cns.MISSING, OWN])


def _hub_view(problem):
    obj = cluster()
    obj[views.NAMESPACE_PROBLEM] = problem
    return views.hub_view(obj, NOW)


MEMBER = {"namespace": True, "release": {"name": "fleet-agent", "status": "deployed", "chart_version": "0.16.0"},
          "fleet_managed_releases": [], "credential": True, "credential_usable": True, "credential_accepted": True,
          "bootstrap": False, "deployment": True}


def test_a_cluster_fleet_cannot_grant_is_not_joinable_and_shows_why():
    healthy = _hub_view(None)
    assert healthy["cluster_namespace"] == OWN and healthy["cluster_namespace_problem"] is None
    assert MANAGER.decide("edge-1", healthy, MEMBER, {}).action == "none"
    for problem in ((cns.TERMINATING, OWN), (cns.MISSING, OWN)):
        view = _hub_view(problem)
        state = MANAGER.decide("edge-1", view, MEMBER, {})
        assert state.action == "join" and not state.healthy
        assert state.as_dict()["steps"]["member_object"], "the join must run fleet_cluster, which repairs it"
        assert any("not joinable yet" in r and OWN in r for r in state.reasons), state.reasons
        row = member_row(MANAGER, view)
        assert row["state"] == "namespace-" + problem[0] and row["cluster_namespace_problem"] == list(problem)


def test_hub_view_of_a_cluster_read_elsewhere_has_no_namespace_verdict():
    view = views.hub_view(cluster(), NOW)
    assert view["cluster_namespace_problem"] is None and member_row(MANAGER, view)["state"] == "checked-in"


class LabelledKube:
    """Answers LISTs of namespaces by equality selector and records them."""

    def __init__(self, items):
        self.items = items
        self.calls = []

    def list(self, resource, namespace=None, label_selector=None):
        self.calls.append((resource.kind, label_selector))
        key, _sep, value = (label_selector or "=").partition("=")
        return [i for i in self.items if not key or (i["metadata"].get("labels") or {}).get(key) == value]

    def delete(self, resource, name, namespace=None, dry_run=False, propagation="Background"):
        self.calls.append(("delete", name))


def test_listed_reads_keep_a_labelled_list_for_that_selector_only():
    kube = LabelledKube([namespace(OWN), {"metadata": {"name": "plain"}}])
    listed = batch.ListedReads(kube)
    listed.read_all(NAMESPACE, label_selector=cns.MANAGED_SELECTOR)
    assert [n["metadata"]["name"] for n in cns.fleet_namespaces(listed)] == [OWN]
    assert [n["metadata"]["name"] for n in cns.fleet_namespaces(listed)] == [OWN]
    assert kube.calls == [("Namespace", cns.MANAGED_SELECTOR)]
    # other selectors, unselected lists and gets are not answered from it
    assert len(listed.list(NAMESPACE)) == 2 and kube.calls[-1] == ("Namespace", None)
    # a write of the resource drops the labelled memory: it cannot tell whether the object still matches
    listed.delete(NAMESPACE, OWN)
    cns.fleet_namespaces(listed)
    assert kube.calls[-1] == ("Namespace", cns.MANAGED_SELECTOR)


class ForbiddenNamespaces(LabelledKube):
    """A hub credential that may list Clusters but not namespaces."""

    def list(self, resource, namespace=None, label_selector=None):
        if resource.kind == "Namespace":
            raise ApiError("GET /api/v1/namespaces on the hub: forbidden", status=403)
        return self.items


def test_a_credential_that_may_not_list_namespaces_gets_no_verdict_instead_of_a_failure():
    hub = ForbiddenNamespaces([cluster()])
    assert cns.readable_fleet_namespaces(hub) is None
    assert cns.read_problem(hub, cluster(), "fleet-default", "edge-1") is None
    found = MANAGER.read_hub(hub, names=["edge-1"])
    assert views.NAMESPACE_PROBLEM not in found["edge-1"]
    assert MANAGER.hub_view(found["edge-1"], NOW)["cluster_namespace_problem"] is None

    class Broken(LabelledKube):
        def list(self, resource, namespace=None, label_selector=None):
            raise ApiError("GET /api/v1/namespaces on the hub failed", status=500)
    with pytest.raises(ApiError):
        cns.readable_fleet_namespaces(Broken([]))


class HubOf:
    """A hub holding ``clusters`` and ``namespaces``; records the kinds it lists."""

    def __init__(self, clusters, namespaces):
        self.items = {"Cluster": clusters, "Namespace": namespaces}
        self.calls = []

    def list(self, resource, namespace=None, label_selector=None):
        self.calls.append(resource.kind)
        return self.items[resource.kind]


def test_read_hub_judges_each_found_cluster_from_one_list_of_fleet_namespaces():
    hub = HubOf([cluster(status_namespace=None, checked_in=False)], [namespace(OWN, deleting=True)])
    found = MANAGER.read_hub(hub, names=["edge-1"])
    assert found["edge-1"][views.NAMESPACE_PROBLEM] == (cns.TERMINATING, OWN)
    assert hub.calls == ["Cluster", "Namespace"]
    nothing = HubOf([], [namespace(OWN)])
    assert MANAGER.read_hub(nothing, names=["edge-1"]) == {} and nothing.calls == ["Cluster"]


def test_the_namespace_index_finds_what_namespaces_of_finds_in_the_same_order():
    unannotated = {"metadata": {"name": OWN}}
    namespaces = [namespace("cluster-fleet-default-edge-2-1", cluster=("fleet-default", "edge-2")), namespace("old-edge-1", deleting=True),
                  unannotated, namespace(OWN), namespace("cluster-other-edge-1-2", cluster=("other", "edge-1"))]
    index = cns.NamespaceIndex(namespaces)
    for args in [("fleet-default", "edge-1"), ("fleet-default", "edge-1", OWN), ("fleet-default", "edge-2", OWN),
                 ("other", "edge-1"), ("fleet-default", "edge-9"), ("fleet-default", "edge-9", "nothing"), ("fleet-default", "edge-2", None)]:
        assert index.of(*args) == cns.namespaces_of(namespaces, *args), args
    assert cns.problem(cluster(), index.of("fleet-default", "edge-1", OWN)) == (cns.TERMINATING, "old-edge-1")


def test_a_batch_builds_the_namespace_index_once_per_listing():
    kube = LabelledKube([namespace(OWN)])
    listed = batch.ListedReads(kube)
    listed.read_all(NAMESPACE, label_selector=cns.MANAGED_SELECTOR)
    first = cns.namespace_index(listed)
    assert cns.namespace_index(listed) is first and cns.read_problem(listed, cluster(), "fleet-default", "edge-1") is None
    assert kube.calls == [("Namespace", cns.MANAGED_SELECTOR)]
    listed.delete(NAMESPACE, OWN)  # a write drops the listing, and the index with it: the next one is read again
    assert cns.namespace_index(listed) is not first and kube.calls[-1] == ("Namespace", cns.MANAGED_SELECTOR)
    # without a batch, one LIST per call
    plain = LabelledKube([namespace(OWN, deleting=True)])
    assert cns.read_problem(plain, cluster(), "fleet-default", "edge-1") == (cns.TERMINATING, OWN) and len(plain.calls) == 1
