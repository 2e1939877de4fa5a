"""Moving a KubeFleet member's hub identity into the collection's own namespace (issue 31, item 2): when member_info
decides it, and what the revoke step removes of the identity left behind (pure logic; the hub is a dict here)."""

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils.errors import ApiError
from ansible_collections.fleetops.registration.plugins.module_utils.member_state import desired_for
from ansible_collections.fleetops.registration.plugins.module_utils.registry import KUBEFLEET, RANCHER_FLEET
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.identity_move import (
    identity_move_reasons, left_behind, remove_moved_identity,
)
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.manager import MANAGER
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.resources import IDENTITY_NAMESPACE

from test_kubefleet_manager import desired, hub, member

SA = "east-1-hub-cluster-access"
MANAGED = {"app.kubernetes.io/managed-by": "fleetops.registration"}


def test_a_member_whose_identity_is_in_kubefleet_s_namespace_moves_with_a_rotation():
    view = hub()
    assert view["identity"]["namespace"] == "fleet-system"
    state = MANAGER.decide("east-1", view, member(), desired(identity_namespace=IDENTITY_NAMESPACE))
    assert state.action == "rotate", state.reasons
    assert "names the identity fleet-system/%s, outside the hub namespace fleetops-system" % SA in state.reasons[0]
    assert state.healthy  # the member keeps working while it moves


@pytest.mark.parametrize("wanted", [None, "fleet-system"])
def test_an_identity_already_where_it_belongs_or_not_judged_does_not_move(wanted):
    assert MANAGER.decide("east-1", hub(), member(), desired(identity_namespace=wanted)).action == "none"


def test_a_leaving_member_or_one_without_a_service_account_identity_does_not_move():
    leaving = hub(leaving=True)
    assert identity_move_reasons(leaving, {"identity_namespace": IDENTITY_NAMESPACE}) == []
    user = dict(hub(), identity={"kind": "User", "name": "east-1"})
    assert identity_move_reasons(user, {"identity_namespace": IDENTITY_NAMESPACE}) == []
    assert identity_move_reasons(None, {"identity_namespace": IDENTITY_NAMESPACE}) == []


def test_member_info_passes_the_identity_namespace_to_kubefleet_only():
    params = {"identity_namespace": "fleetops-system", "labels": {}}
    assert desired_for(KUBEFLEET, params)["identity_namespace"] == "fleetops-system"
    assert desired_for(RANCHER_FLEET, params).get("identity_namespace") is None


def _cluster(namespace):
    return {"spec": {"identity": {"kind": "ServiceAccount", "name": SA, "namespace": namespace, "apiGroup": ""}}}


def _account(labels=None):
    return {"metadata": {"name": SA, "namespace": "fleet-system", "labels": dict(MANAGED if labels is None else labels)}}


def test_the_identity_left_behind_is_the_collection_s_and_no_longer_named():
    assert left_behind(_cluster("fleetops-system"), _account(), "fleet-system")
    assert not left_behind(_cluster("fleet-system"), _account(), "fleet-system")   # not moved yet: keep it
    assert not left_behind(_cluster("fleetops-system"), _account(labels={}), "fleet-system")  # someone else's
    assert left_behind(None, _account(), "fleet-system")  # the member left before it moved: nothing names it
    assert not left_behind(_cluster("fleetops-system"), None, "fleet-system")


class Hub:
    def __init__(self, account, deny=False):
        self.account, self.deny, self.deleted = account, deny, []

    def get(self, resource, name, namespace):
        if self.deny:
            raise ApiError("forbidden", status=403)
        return self.account

    def delete(self, resource, name, namespace, dry_run=False):
        self.deleted.append((resource.kind, namespace, name, dry_run))


def test_the_revoke_step_deletes_the_service_account_left_behind_or_warns_when_it_may_not():
    hub_api = Hub(_account())
    assert remove_moved_identity(hub_api, _cluster("fleetops-system"), SA, "fleetops-system") == ("fleet-system/%s" % SA, None)
    assert hub_api.deleted == [("ServiceAccount", "fleet-system", SA, False)]
    kept = Hub(_account())
    assert remove_moved_identity(kept, _cluster("fleet-system"), SA, "fleetops-system") == (None, None)
    assert remove_moved_identity(kept, _cluster("fleet-system"), SA, "fleet-system") == (None, None)
    assert kept.deleted == []
    moved, denied = remove_moved_identity(Hub(_account(), deny=True), _cluster("fleetops-system"), SA, "fleetops-system")
    assert moved is None and "fleet-system/%s could not be checked or deleted" % SA in denied
