"""Which cluster a member is: the pure rules of recording, comparing and refusing (plugins/module_utils/cluster_identity.py)."""

import base64
import hashlib

import pytest

from ansible_collections.fleetops.registration.plugins.module_utils import cluster_identity as ci
from ansible_collections.fleetops.registration.plugins.module_utils.errors import ParameterError
from ansible_collections.fleetops.registration.plugins.module_utils.fleet_managers import MemberState
from ansible_collections.fleetops.registration.plugins.module_utils._kubefleet.rules import member_cluster_changes
from ansible_collections.fleetops.registration.plugins.module_utils._rancher_fleet.rules import desired_cluster

DER = b"not really a certificate, but DER bytes all the same"
PEM = "-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----\n" % base64.b64encode(DER).decode()
OLD = {"uid": "old-uid", "ca_sha256": "a" * 64}
NEW = {"uid": "new-uid", "ca_sha256": "b" * 64}


def hub_object(identity=None):
    return {"metadata": {"name": "edge-07", "annotations": ci.identity_annotations(identity)}}


def healthy(manager="kubefleet", action="none", reasons=()):
    return MemberState(manager, "edge-07", {"joined": True}, {}, action, list(reasons))


def test_the_ca_fingerprint_is_the_sha256_of_the_first_certificate():
    assert ci.ca_fingerprint(PEM + PEM.replace(base64.b64encode(DER).decode(), "Zm9v")) == hashlib.sha256(DER).hexdigest()
    assert ci.ca_fingerprint(PEM.encode()) == hashlib.sha256(DER).hexdigest()
    assert ci.ca_fingerprint(None) is None and ci.ca_fingerprint("no pem here") is None


def test_recorded_identity_round_trips_through_the_annotations():
    assert ci.identity_annotations(NEW) == {ci.UID_ANNOTATION: "new-uid", ci.CA_ANNOTATION: "b" * 64}
    assert ci.identity_annotations({"uid": "u", "ca_sha256": None}) == {ci.UID_ANNOTATION: "u"}
    assert ci.recorded_identity(hub_object(NEW)) == NEW
    assert ci.recorded_identity(hub_object()) is None and ci.recorded_identity(None) is None


def test_only_a_different_kube_system_uid_means_another_cluster():
    assert ci.replaced(OLD, dict(OLD, ca_sha256="c" * 64)) == []  # a CA rotation on the same cluster
    assert ci.replaced(None, NEW) == [] and ci.replaced(OLD, {"uid": None}) == []
    assert ci.replaced(OLD, NEW) == ["kube-system Namespace UID old-uid -> new-uid", "API server CA sha256 aaaaaaaaaaaa -> bbbbbbbbbbbb"]


def test_another_cluster_is_refused_naming_replace_rebuilt_and_what_changed():
    with pytest.raises(ParameterError) as err:
        ci.judge(healthy(), hub_object(OLD), NEW)
    assert err.value.param == "replace_rebuilt"
    assert "edge-07" in err.value.msg and "old-uid -> new-uid" in err.value.msg and "kubefleet" in err.value.msg
    assert "replace_rebuilt: true" in err.value.message()


@pytest.mark.parametrize("action", ["none", "relabel", "install", "upgrade", "reregister"])
def test_with_replace_rebuilt_another_cluster_is_re_registered(action):
    state = ci.judge(healthy(action=action, reasons=["x"] if action != "none" else []), hub_object(OLD), NEW, replace_rebuilt=True)
    assert state.action == "reregister" and "the cluster was replaced" in state.reasons[0]


def test_a_hub_object_that_records_nothing_yet_is_brought_up_to_date():
    assert ci.judge(healthy(), hub_object(), NEW).action == "relabel"
    assert ci.judge(healthy(), hub_object(), dict(NEW, ca_sha256=None)).action == "relabel"
    assert ci.judge(healthy(), hub_object(NEW), NEW).action == "none"
    join = MemberState("kubefleet", "edge-07", None, {}, "join", ["new"])
    assert ci.judge(join, None, NEW) is join


@pytest.mark.parametrize("live_ca", ["c" * 64, None])
def test_the_same_uid_behind_another_ca_or_none_is_refused_naming_replace_rebuilt(live_ca):
    with pytest.raises(ParameterError) as err:
        ci.judge(healthy(), hub_object(NEW), dict(NEW, ca_sha256=live_ca))
    assert err.value.param == "replace_rebuilt"
    assert "edge-07" in err.value.msg and "another API server CA" in err.value.msg
    assert "bbbbbbbbbbbb -> %s" % (live_ca[:12] if live_ca else "none") in err.value.msg
    assert "replace_rebuilt: true" in err.value.message() and "rotated on purpose" in err.value.message()


def test_with_replace_rebuilt_a_new_ca_of_the_same_cluster_is_recorded_not_re_registered():
    rotated = dict(NEW, ca_sha256="c" * 64)
    assert ci.judge(healthy(), hub_object(NEW), rotated, replace_rebuilt=True).action == "relabel"
    upgrade = healthy(action="upgrade", reasons=["x"])
    assert ci.judge(upgrade, hub_object(NEW), rotated, replace_rebuilt=True) is upgrade


@pytest.mark.parametrize("live", [None, {}, {"uid": None, "ca_sha256": "b" * 64}])
@pytest.mark.parametrize("recorded", [None, NEW])
@pytest.mark.parametrize("replace_rebuilt", [False, True])
def test_a_member_whose_kube_system_uid_cannot_be_read_is_refused(live, recorded, replace_rebuilt):
    with pytest.raises(ParameterError) as err:
        ci.judge(healthy(), hub_object(recorded), live, replace_rebuilt=replace_rebuilt)
    assert err.value.param == "kubeconfig"
    assert "kube-system Namespace of member edge-07 cannot be read" in err.value.msg
    assert "extensions/rbac/member.yml" in err.value.message()


def test_members_reaching_one_cluster_are_found_in_pairs_and_more():
    shared = ci.shared_clusters({"a": {"uid": "1"}, "b": {"uid": "1"}, "c": {"uid": "2"}, "d": {"uid": "1"}, "e": None})
    assert shared == {"a": ["b", "d"], "b": ["a", "d"], "d": ["a", "b"]}
    assert ci.shared_clusters({"a": {"uid": None}, "b": {"uid": None}}) == {}


def test_hub_objects_carry_the_identity_annotations():
    annotations = ci.identity_annotations(NEW)
    body, patch = member_cluster_changes(None, "edge-07", {"kind": "ServiceAccount"}, 60, annotations=annotations)
    assert body["metadata"]["annotations"] == annotations and patch is None
    live = dict(body, metadata=dict(body["metadata"], annotations=dict(annotations, other="kept")))
    assert member_cluster_changes(live, "edge-07", {"kind": "ServiceAccount"}, 60, annotations=annotations) == (None, None)
    _body, patch = member_cluster_changes(live, "edge-07", {"kind": "ServiceAccount"}, 60, annotations=ci.identity_annotations(OLD))
    assert patch == {"metadata": {"annotations": ci.identity_annotations(OLD)}}
    desired, _labels = desired_cluster("edge-07", "fleet-default", None, "id", annotations=annotations)
    assert desired["metadata"]["annotations"] == annotations
    assert "annotations" not in desired_cluster("edge-07", "fleet-default", None, "id")[0]["metadata"]
